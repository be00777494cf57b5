"""The stdio server's own copies of stdin and stdout, claimed first thing in ``mcp``.

Once claimed, fd 1 points at stderr for the rest of the process: a stray ``print``,
a progress bar or a C library writing to stdout lands on stderr instead of corrupting
the protocol. fd 0 points at /dev/null. stdin is read on a daemon thread that starts
at the claim, before the SDK is imported, so the opening request (``initialize`` or
``server/discover``) is answered at once (``handshake``); every line is also queued
for the SDK, which answers the same request again when it is ready: that duplicate
is dropped here and only compared. Only the first request is considered: it is the
one that picks the connection's protocol era in the SDK too. A daemon thread and not
anyio's file wrappers, whose worker threads a cancel cannot interrupt and interpreter
shutdown waits for. Nothing here imports anyio or the SDK.

A line longer than ``MAX_BYTES`` is never held whole: its head is kept (for the
request id) and the rest read and dropped, and it is queued as ``TooLong``.
"""

from __future__ import annotations

import io
import json
import os
import queue
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vaultsearch.server.jsonlimits import ID_WINDOW, MAX_BYTES
from vaultsearch.server.mcp.handshake import INSTRUCTIONS, answer_for, as_request

EOF = None
"""Queued after the last line: stdin closed."""


@dataclass(frozen=True, slots=True)
class TooLong:
    head: bytes
    size: int


class SharedOut:
    """stdout for three writers: the early handshake, the line screen and the SDK; each
    writes whole lines. The SDK's answer to a request already answered is dropped."""

    def __init__(self, out: io.TextIOWrapper) -> None:
        self._out = out
        self._lock = threading.Lock()
        self._answered: dict[int | str, tuple[str, dict[str, Any]]] = {}
        self.on_duplicate: Callable[[str, bool], None] = lambda method, same: None

    def write(self, text: str) -> int:
        with self._lock:
            if self._answered and self._is_duplicate(text):
                return len(text)
            return self._out.write(text)

    def flush(self) -> None:
        with self._lock:
            self._out.flush()

    def write_early(self, method: str, request_id: int | str, line: str) -> None:
        with self._lock:
            self._answered[request_id] = (method, json.loads(line))
            self._out.write(line + "\n")
            self._out.flush()

    def _is_duplicate(self, text: str) -> bool:
        try:
            message = json.loads(text)
        except ValueError:
            return False
        if not isinstance(message, dict) or "method" in message:
            return False
        request_id = message.get("id")
        if isinstance(request_id, bool) or not isinstance(request_id, int | str):
            return False
        early = self._answered.pop(request_id, None)
        if early is None:
            return False
        method, answer = early
        self.on_duplicate(method, answer == message)
        return True


class StdioPipe:
    def __init__(self, fd_in: int, fd_out: int, instructions: str = INSTRUCTIONS) -> None:
        self.fd_in = fd_in
        self.instructions = instructions
        self.lines: queue.SimpleQueue[bytes | TooLong | None] = queue.SimpleQueue()
        self.out = SharedOut(
            io.TextIOWrapper(os.fdopen(fd_out, "wb", closefd=False), encoding="utf-8", newline="\n")
        )
        self.opened = False
        """The opening request has arrived (answered early or left to the SDK)."""
        self.early_answers = 0
        self.sdk_loaded_at_answer: bool | None = None

    @classmethod
    def claim(cls, instructions: str = INSTRUCTIONS) -> StdioPipe:
        """Take fds 0 and 1 for the protocol and start reading; call before anything
        else can print. ``instructions``: what the server's SDK will answer with."""
        sys.stdout.flush()
        pipe = cls(os.dup(0), os.dup(1), instructions)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
        threading.Thread(target=pipe._read, name="vaultsearch-stdin", daemon=True).start()
        return pipe

    def _read(self) -> None:
        stream = os.fdopen(self.fd_in, "rb", closefd=False)
        try:
            while raw := stream.readline(MAX_BYTES + 1):
                if len(raw) > MAX_BYTES and not raw.endswith(b"\n"):
                    self.lines.put(_skip_rest(stream, raw))
                    continue
                if not self.opened:
                    self._answer_early(raw)
                self.lines.put(raw)
        except OSError:
            pass  # stdin broke: the same as closed
        self.lines.put(EOF)

    def _answer_early(self, raw: bytes) -> None:
        try:
            message = as_request(raw)
        except Exception:  # the SDK answers the line when it is ready
            return
        if message is None:
            return  # a notification or junk: the SDK does not open a connection on it
        self.opened = True
        found = answer_for(message, self.instructions)
        if found is None:
            return
        self.sdk_loaded_at_answer = "mcp" in sys.modules
        try:
            self.out.write_early(str(message["method"]), *found)
        except OSError:
            return  # the client is gone; the SDK will find out too
        self.early_answers += 1


def _skip_rest(stream: io.BufferedReader, first: bytes) -> TooLong:
    size = len(first)
    chunk = first
    while chunk and not chunk.endswith(b"\n"):
        chunk = stream.readline(MAX_BYTES)
        size += len(chunk)
    return TooLong(first[:ID_WINDOW], size)
