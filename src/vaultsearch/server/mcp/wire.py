"""The SDK's stdio transport over a claimed ``StdioPipe``.

The SDK drops a line it cannot validate without a word, so a client that sent one
would wait forever: each line is checked here first (``screen_line``) and a bad one
answered with a JSON-RPC error, as the specification asks. Lines move from the
pipe's queue to the event loop on a daemon thread, for the reason the pipe reads on
one: a blocked read must never keep a stopping server alive.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import traceback
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import IO, Any, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server

from vaultsearch.server.jsonlimits import recover_id
from vaultsearch.server.mcp.jsonrpc import INTERNAL_ERROR, error_reply, screen_line
from vaultsearch.server.mcp.pipe import EOF, StdioPipe, TooLong


class _Lines:
    """Async iteration over the lines a thread hands to the event loop."""

    def __init__(self, receive: MemoryObjectReceiveStream[str]) -> None:
        self._receive = receive

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        try:
            return await self._receive.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class StdioWire:
    def __init__(self, pipe: StdioPipe) -> None:
        self.pipe = pipe

    @classmethod
    def claim(cls) -> StdioWire:
        """Take fds 0 and 1 for the protocol; call before anything else can print."""
        return cls(StdioPipe.claim())

    def _pump(
        self, send: MemoryObjectSendStream[str], token: anyio.lowlevel.EventLoopToken
    ) -> None:
        out = self.pipe.out
        try:
            while (raw := self.pipe.lines.get()) is not EOF:
                try:
                    line, error = screen_line(raw)
                except Exception as exc:  # a bug must not deafen the server
                    line, error = None, _internal_error(raw, exc)
                if error is not None:
                    out.write(error + "\n")
                    out.flush()
                    continue
                if line is None:
                    continue
                anyio.from_thread.run_sync(send.send_nowait, line, token=token)
            anyio.from_thread.run_sync(send.close, token=token)
        except (anyio.RunFinishedError, anyio.ClosedResourceError, RuntimeError, OSError):
            pass  # the server is gone or stopping: nobody is left to read for

    @asynccontextmanager
    async def streams(self) -> AsyncIterator[tuple[Any, Any]]:
        """The SDK's stdio transport over this wire: (read stream, write stream)."""
        send, receive = anyio.create_memory_object_stream[str](math.inf)
        pump = threading.Thread(
            target=self._pump,
            args=(send, anyio.lowlevel.current_token()),
            name="vaultsearch-lines",
            daemon=True,
        )
        pump.start()
        stdin = cast(anyio.AsyncFile[str], _Lines(receive))
        stdout = anyio.wrap_file(cast(IO[str], self.pipe.out))
        async with stdio_server(stdin=stdin, stdout=stdout) as (read, write):
            yield read, write


def _internal_error(raw: bytes | TooLong, exc: Exception) -> str:
    """The answer to a line whose screening failed, and the failure in the log."""
    head = raw.head if isinstance(raw, TooLong) else raw
    record = {"event": "line_failed", "error": f"{type(exc).__name__}: {exc}"[:500]}
    record["traceback"] = traceback.format_exc(limit=8)
    print(json.dumps(record), file=sys.stderr, flush=True)
    request_id = recover_id(head)
    return error_reply(INTERNAL_ERROR, f"Internal error: {type(exc).__name__}", request_id)
