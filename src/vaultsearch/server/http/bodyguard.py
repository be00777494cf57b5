"""Every HTTP request body is bounded in size and nesting before anything parses it.

A REST body used to be read whole, whatever its size (100 MB raised the server by
750 MB), and a deeply nested one reached ``json.loads`` and answered 500. Here the
declared length is refused at once (413, nothing read), a body sent in chunks is
refused as soon as it passes the limit, and JSON nested deeper than
``jsonlimits.MAX_DEPTH`` is refused from its bytes (400). ``/mcp`` gets the same
bounds as JSON-RPC errors, REST as the one-sentence ``{"error": ...}`` of its routes.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from vaultsearch.server.jsonlimits import (
    depth_sentence,
    recover_id,
    size_sentence,
    too_deep,
)

MCP_PATH = "/mcp"
INVALID_REQUEST = -32600
PARSE_ERROR = -32700
_BODILESS = ("GET", "HEAD", "OPTIONS")


class BodyGuard:
    def __init__(self, app: ASGIApp, limit: Callable[[], int]) -> None:
        self.app = app
        self.limit = limit
        """Read per request, so a reloaded ``server.max_body_bytes`` applies at once."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in _BODILESS:
            await self.app(scope, receive, send)
            return
        limit = self.limit()
        declared = _declared_length(scope)
        if declared is not None and declared > limit:  # unread, so no id: null
            await _refuse(scope, send, 413, size_sentence(declared, limit), b"")
            return
        body = bytearray()
        tail: Message | None = None
        while True:
            message = await receive()
            if message["type"] != "http.request":
                tail = message
                break
            body += message.get("body", b"")
            if len(body) > limit:
                await _refuse(scope, send, 413, size_sentence(len(body), limit), bytes(body))
                return
            if not message.get("more_body", False):
                break
        raw = bytes(body)
        if too_deep(raw):
            await _refuse(scope, send, 400, depth_sentence(), raw)
            return
        replay: list[Message] = [{"type": "http.request", "body": raw, "more_body": False}]
        if tail is not None:
            replay.append(tail)

        async def replayed() -> Message:
            return replay.pop(0) if replay else await receive()

        await self.app(scope, replayed, send)


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers") or []:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _refuse(scope: Scope, send: Send, status: int, problem: str, raw: bytes) -> None:
    if scope["path"].startswith(MCP_PATH):
        code = INVALID_REQUEST if status == 413 else PARSE_ERROR
        prefix = "Invalid Request" if status == 413 else "Parse error"
        reply = {
            "jsonrpc": "2.0",
            "id": recover_id(raw),
            "error": {"code": code, "message": f"{prefix}: {problem}"},
        }
    else:
        fix = "send a smaller body" if status == 413 else "send a flatter JSON object"
        reply = {"error": f"The request body is refused: {problem}; {fix}."}
    body = json.dumps(reply).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if status == 413:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
