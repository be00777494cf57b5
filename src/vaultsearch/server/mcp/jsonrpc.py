"""What the stdio server does with one raw line before the SDK sees it.

The SDK validates a line with pydantic and, when that fails, logs and drops it: a
client that sent a malformed request waits for an answer that never comes. Lines
are also cleaned of lone UTF-16 surrogates (valid JSON escapes that no UTF-8 text
can hold), which pydantic refuses and which would break any reply that echoed them.
A line nested deeper than ``jsonlimits.MAX_DEPTH`` or longer than its ``MAX_BYTES`` is
answered from its raw bytes, never parsed.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import mcp_types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from pydantic import ValidationError

from vaultsearch.server.jsonlimits import (
    MAX_BYTES,
    depth_sentence,
    recover_id,
    size_sentence,
    too_deep,
)
from vaultsearch.server.mcp.pipe import TooLong
from vaultsearch.validtext import valid_strings

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603


def error_reply(code: int, message: str, request_id: Any = None) -> str:
    reply = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return json.dumps(reply, ensure_ascii=False)


def screen_line(raw: bytes | TooLong) -> tuple[str | None, str | None]:
    """(line for the SDK, None), (None, error reply to send back), or (None, None)
    for a blank line."""
    if isinstance(raw, TooLong):
        problem = size_sentence(raw.size, MAX_BYTES)
        return None, error_reply(
            INVALID_REQUEST, f"Invalid Request: {problem}", recover_id(raw.head)
        )
    if too_deep(raw):
        return None, error_reply(PARSE_ERROR, f"Parse error: {depth_sentence()}", recover_id(raw))
    text = raw.decode("utf-8", "replace").strip()
    if not text:
        return None, None
    try:
        message = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return None, error_reply(PARSE_ERROR, f"Parse error: not JSON ({str(exc)[:80]})")
    if not isinstance(message, dict):
        kind = type(message).__name__
        return None, error_reply(
            INVALID_REQUEST, f"Invalid Request: expected a JSON object, got {kind}"
        )
    message = valid_strings(message)
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        request_id = None
    if "id" in message and request_id is None:  # else it would pass as a notification
        return None, error_reply(
            INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer'
        )
    if message.get("jsonrpc") != "2.0":
        return None, error_reply(
            INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', request_id
        )
    try:
        mcp_types.jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValidationError as exc:
        if "method" not in message and not ({"result", "error"} & message.keys()):
            problem = 'no "method"'
        else:
            problem = exc.errors()[0].get("msg", "malformed") if exc.errors() else "malformed"
        return None, error_reply(INVALID_REQUEST, f"Invalid Request: {problem}", request_id)
    return json.dumps(message, ensure_ascii=False), None


async def valid_params(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Middleware: the same cleaning for every transport (HTTP bodies skip the screen)."""
    if ctx.params:
        ctx = replace(ctx, params=valid_strings(dict(ctx.params)))
    return await call_next(ctx)
