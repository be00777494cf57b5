"""One JSON line per tool call, and the moment background work may begin.

The log is middleware rather than a wrapper around each tool so that calls the SDK
refuses before a tool runs (bad arguments, unknown tools) are logged too. Stdout
belongs to the protocol, so the lines go to stderr or a file.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TextIO

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from pydantic import BaseModel

_COUNTED = {"search": "hits", "list_notes": "notes", "list_tags": "tags", "related": "similar"}


def summarize(value: Any) -> Any:
    """Arguments short enough for one log line: long text cut, long lists counted."""
    if isinstance(value, str):
        return value if len(value) <= 80 else value[:77] + "..."
    if isinstance(value, list):
        head = [summarize(v) for v in value[:5]]
        return [*head, f"+{len(value) - 5}"] if len(value) > 5 else head
    if isinstance(value, dict):
        return {str(k): summarize(v) for k, v in list(value.items())[:10]}
    return value


def _get(result: HandlerResult, attr: str, key: str) -> Any:
    if isinstance(result, BaseModel):
        return getattr(result, attr, None)
    return result.get(key) if isinstance(result, dict) else None


def result_count(tool: str, result: HandlerResult) -> int | None:
    data = _get(result, "structured_content", "structuredContent")
    if not isinstance(data, dict):
        return None
    if tool == "read_note":
        return max(0, int(data.get("end_line", 0)) - int(data.get("start_line", 1)) + 1)
    items = data.get(_COUNTED.get(tool, ""))
    return len(items) if isinstance(items, list) else None


class CallLog:
    """Middleware: logs ``tools/call`` and ``resources/read``; after the first answer of
    the connection it calls ``after_first`` once (the handshake is never kept waiting
    by the work it starts)."""

    def __init__(self, stream: TextIO, after_first: Callable[[], None] = lambda: None) -> None:
        self.stream = stream
        self.after_first = after_first
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, default=str)
        with self._lock:
            try:
                self.stream.write(line + "\n")
                self.stream.flush()
            except (OSError, ValueError):  # a closed log must never fail a call
                pass

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.method not in ("tools/call", "resources/read"):
            try:
                return await call_next(ctx)
            finally:
                if ctx.request_id is not None:
                    self.after_first()
        params = dict(ctx.params or {})
        if ctx.method == "tools/call":
            name = str(params.get("name"))
            record: dict[str, Any] = {
                "tool": name,
                "args": summarize(params.get("arguments") or {}),
            }
        else:
            name = ""
            record = {"resource": summarize(str(params.get("uri")))}
        start = time.perf_counter()
        try:
            result = await call_next(ctx)
        except Exception as exc:
            record["error"] = f"{type(exc).__name__}: {exc}"[:300]
            raise
        else:
            if _get(result, "is_error", "isError"):
                first = (_get(result, "content", "content") or [None])[0]
                text = first.get("text") if isinstance(first, dict) else getattr(first, "text", "")
                record["error"] = str(text)[:300]
            elif name:
                record["results"] = result_count(name, result)
            return result
        finally:
            record["ms"] = round((time.perf_counter() - start) * 1000, 2)
            record["time"] = datetime.now(UTC).isoformat(timespec="milliseconds")
            self.write(record)
            self.after_first()
