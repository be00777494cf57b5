"""The stdio transport's own copies of stdin and stdout, so nothing else can reach them.

Once claimed, fd 1 points at stderr for the rest of the process: a stray ``print``,
a progress bar or a C library writing to stdout lands on stderr instead of corrupting
the protocol. fd 0 points at /dev/null. stdin is read on a daemon thread because
anyio's file wrappers read on worker threads that a cancel cannot interrupt and that
interpreter shutdown waits for: with them, SIGTERM could not end a server whose
client still holds the pipe open.

The SDK drops a line it cannot validate without a word, so a client that sent one
would wait forever: each line is checked here first (``screen_line``) and a bad one
answered with a JSON-RPC error, as the specification asks.
"""

from __future__ import annotations

import io
import math
import os
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import IO, Any, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server

from vaultsearch.server.jsonrpc import screen_line


class _Lines:
    """Async iteration over the lines a reader thread hands to the event loop."""

    def __init__(self, receive: MemoryObjectReceiveStream[str]) -> None:
        self._receive = receive

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        try:
            return await self._receive.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class _SharedOut:
    """stdout for two writers, the SDK and the line screen; each writes whole lines."""

    def __init__(self, out: io.TextIOWrapper) -> None:
        self._out = out
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            return self._out.write(text)

    def flush(self) -> None:
        with self._lock:
            self._out.flush()


class StdioWire:
    def __init__(self, fd_in: int, fd_out: int) -> None:
        self.fd_in = fd_in
        self.fd_out = fd_out

    @classmethod
    def claim(cls) -> StdioWire:
        """Take fds 0 and 1 for the protocol; call before anything else can print."""
        sys.stdout.flush()
        wire = cls(os.dup(0), os.dup(1))
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
        return wire

    def _read(
        self,
        send: MemoryObjectSendStream[str],
        token: anyio.lowlevel.EventLoopToken,
        out: _SharedOut,
    ) -> None:
        stream = os.fdopen(self.fd_in, "rb", closefd=False)
        try:
            for raw in stream:
                line, error = screen_line(raw)
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
        out = _SharedOut(
            io.TextIOWrapper(
                os.fdopen(self.fd_out, "wb", closefd=False), encoding="utf-8", newline="\n"
            )
        )
        reader = threading.Thread(
            target=self._read,
            args=(send, anyio.lowlevel.current_token(), out),
            name="vaultsearch-stdin",
            daemon=True,
        )
        reader.start()
        stdin = cast(anyio.AsyncFile[str], _Lines(receive))
        async with stdio_server(stdin=stdin, stdout=anyio.wrap_file(cast(IO[str], out))) as (
            read,
            write,
        ):
            yield read, write
