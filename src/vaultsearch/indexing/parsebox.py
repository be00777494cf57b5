"""Parsing in a child process with a time and memory budget per file.

A parser runs on whatever a vault holds, and a few kilobytes can ask for minutes or
gigabytes (a PDF whose pages share one huge content stream). Such work cannot be
stopped inside the indexing process: a thread cannot be killed and a memory limit
would cover the model and the indexes too. So one child process parses every file of
an index run, with an address-space limit (``RLIMIT_AS``) on top of what it needs to
start, and is killed when a file takes longer than ``index.parse_timeout``; the file is
skipped with a reason naming the budget, and the next file gets a fresh child.

The deadline counts wall-clock time, which a busy machine stretches: the child reports
its CPU time with every message, and the CPU its killed process used since its last one
tells a parse over its budget from one that waited for a core (``fault.of_timeout``).
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import struct
import subprocess
import sys
import time
import warnings
from typing import IO, Any

from vaultsearch._limits import MB, child_command, limit_address_space
from vaultsearch._readable import readable
from vaultsearch.config import IndexConfig
from vaultsearch.errors import FileUnreadableError
from vaultsearch.fault import OURS, of_os_error, of_timeout
from vaultsearch.models import ParsedNote
from vaultsearch.parsers import Parser, parse_content

log = logging.getLogger("vaultsearch.parsebox")

_HEADER = struct.Struct("<Q")
_START_TIMEOUT = 120.0
"""A hang guard for the child's imports, not a budget: a cold disk can be slow."""


class ParseBox:
    """One child at a time, started on the first file and again after one is killed.

    Where no child can be started (an interpreter that may not run itself again, as in
    some sandboxes), files are parsed in this process without a budget, with a warning
    in the log: indexing without the budget beats indexing nothing.
    """

    def __init__(self, budget: IndexConfig) -> None:
        self.budget = budget
        self._child: subprocess.Popen[bytes] | None = None
        self._unavailable = False
        self._cpu: float | None = None
        """The child's CPU seconds at its last message (None: not known)."""
        self.started = 0
        """Children started (one per manager, plus one after each file that was over)."""

    def parse(self, parser: Parser, path: str, text: str, data: bytes) -> ParsedNote:
        """The parsed note, or ``FileUnreadableError`` with the reason the file is skipped."""
        child = None if self._unavailable else self._ready()
        if child is None:
            return parse_content(parser, path, text, data)
        request = (parser.name, path, text, data)
        try:
            _send(child.stdin, request)
        except OSError:
            self.close()  # it died between two files: one more try in a new child
            child = self._ready()
            if child is None:
                return parse_content(parser, path, text, data)
            try:
                _send(child.stdin, request)
            except OSError as exc:
                raise self._unreachable(exc) from None
        deadline = time.monotonic() + self.budget.parse_timeout
        try:
            kind, value, self._cpu = _receive(child.stdout, deadline)
        except TimeoutError:
            failure = of_timeout(self._stop(), self.budget.parse_timeout)
            raise FileUnreadableError(failure.reason, fault=failure.fault) from None
        except EOFError:
            code = self._reap()
            raise _death(code, self.budget) from None
        except Exception as exc:
            raise self._unreachable(exc) from None
        if kind == "ok":
            note: ParsedNote = value
            return note
        if kind == "memory":
            self._reap()
            raise FileUnreadableError(_over_memory(self.budget))
        if kind == "unreadable":
            raise FileUnreadableError(value)
        raise FileUnreadableError(f"parser error: {value}", fault=OURS)

    def _unreachable(self, exc: Exception) -> FileUnreadableError:
        """Waiting on the child or writing to it failed in this process (out of
        descriptors, a poll refused): the child is dropped, since a reply it may still
        send belongs to this file and would be read as the next file's, and the file is
        tried again by the next run."""
        self.close()
        return FileUnreadableError(
            f"the parser process could not be reached ({type(exc).__name__}: {exc}).",
            fault=OURS,
        )

    def _stop(self) -> float | None:
        """Kill the child and reap it: the CPU seconds it used since its last message,
        i.e. on the file it was given, from the usage ``wait4`` returns with its end (None
        where there is no ``wait4`` or the child did not report)."""
        child, before = self._child, self._cpu
        used = None
        if child is not None and child.returncode is None and hasattr(os, "wait4"):
            child.kill()
            try:
                _, status, usage = os.wait4(child.pid, 0)
            except ChildProcessError:  # reaped already
                pass
            else:
                child.returncode = os.waitstatus_to_exitcode(status)  # for close()'s wait()
                if before is not None:
                    used = max(0.0, usage.ru_utime + usage.ru_stime - before)
        self.close()
        return used

    def close(self) -> None:
        self._cpu = None
        child, self._child = self._child, None
        if child is None:
            return
        if child.poll() is None:
            child.kill()
        child.wait()
        for stream in (child.stdin, child.stdout):
            if stream is not None:
                stream.close()

    def __enter__(self) -> ParseBox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ready(self) -> subprocess.Popen[bytes] | None:
        if self._child is not None and self._child.poll() is None:
            return self._child
        self.close()
        argv, env = child_command("vaultsearch.indexing.parsebox", str(self.budget.parse_memory_mb))
        try:
            child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        except OSError as exc:
            if of_os_error(exc) == OURS:
                # short of descriptors, memory or processes for a moment: the next file
                # starts a child again, where giving up would parse every later file of
                # a long-lived server without its budgets
                raise FileUnreadableError(
                    f"the parser process could not be started ({exc.strerror or exc}).",
                    fault=OURS,
                ) from None
            self._without_child(str(exc))
            return None
        self._child = child
        self.started += 1
        try:
            kind, _, self._cpu = _receive(child.stdout, time.monotonic() + _START_TIMEOUT)
        except (TimeoutError, EOFError):
            self.close()
            self._without_child("it did not start")
            return None
        except Exception as exc:  # its "ready", still unread, would be read as a reply
            raise self._unreachable(exc) from None
        assert kind == "ready"
        return child

    def _without_child(self, why: str) -> None:
        self._unavailable = True
        log.warning("files are parsed without index.parse_* budgets: the parser process: %s", why)

    def _reap(self) -> int | None:
        child = self._child
        code = child.wait(timeout=30) if child is not None else None
        self.close()
        return code


def _over_memory(budget: IndexConfig) -> str:
    return (
        f"parsing needed more memory than index.parse_memory_mb ({budget.parse_memory_mb} MB) "
        "allows; skipped."
    )


def _death(code: int | None, budget: IndexConfig) -> FileUnreadableError:
    """A SIGKILL is the kernel's answer to an allocation it cannot give: the file's
    budget. Any other end (a signal no budget sends, an exit) is not the file's doing
    that we can tell, so the file is tried again by the next run."""
    if code is not None and code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        if -code == signal.SIGKILL:
            return FileUnreadableError(_over_memory(budget))
        return FileUnreadableError(f"the parser process died ({name}) on this file.", fault=OURS)
    return FileUnreadableError(
        f"the parser process stopped (exit {code}) on this file.", fault=OURS
    )


def _send(stream: IO[bytes] | None, message: Any) -> None:
    assert stream is not None
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(body)) + body)
    stream.flush()


def _receive(stream: IO[bytes] | None, deadline: float) -> tuple[str, Any, float | None]:
    """The child's next message: (kind, value, its CPU seconds as it sent it)."""
    assert stream is not None
    fd = stream.fileno()
    (size,) = _HEADER.unpack(_read(fd, _HEADER.size, deadline))
    message: tuple[str, Any, float | None] = pickle.loads(_read(fd, size, deadline))
    return message


def _read(fd: int, n: int, deadline: float) -> bytes:
    parts: list[bytes] = []
    while n:
        left = deadline - time.monotonic()
        if left <= 0 or not readable(fd, left):
            raise TimeoutError
        part = os.read(fd, min(n, 1 << 20))
        if not part:
            raise EOFError
        parts.append(part)
        n -= len(part)
    return b"".join(parts)


# --- the child ------------------------------------------------------------------------
def _cpu() -> float | None:
    """This process's CPU seconds (user and system, all threads), as ``wait4`` gives
    the parent at its end; None without ``resource`` (Windows)."""
    try:
        import resource
    except ImportError:
        return None
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _serve(budget_mb: int) -> None:
    from vaultsearch.parsers import ParserRegistry, parse_content
    from vaultsearch.parsers.pdf import limit_decoding

    logging.getLogger().addHandler(logging.NullHandler())  # the parent reports, not stderr
    warnings.simplefilter("ignore")
    limit_decoding(budget_mb * MB)
    registry = ParserRegistry()
    parsers = {name: registry.instance(name) for name in registry.known_parsers()}
    limit_address_space(budget_mb)
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not break the frames
    _send(out, ("ready", None, _cpu()))
    stdin = sys.stdin.buffer
    while True:
        header = stdin.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return
        try:
            name, path, text, data = pickle.loads(stdin.read(_HEADER.unpack(header)[0]))
            reply: tuple[str, Any] = ("ok", parse_content(parsers[name], path, text, data))
        except MemoryError:
            reply = ("memory", None)
        except FileUnreadableError as exc:
            reply = ("unreadable", exc.message)
        except Exception as exc:
            reply = ("error", f"{type(exc).__name__}: {exc}")
        try:
            _send(out, (*reply, _cpu()))
        except MemoryError:
            _send(out, ("memory", None, _cpu()))
        if reply[0] == "memory":
            return  # a MemoryError can leave any object half-built: start afresh


def _main(budget_mb: int) -> None:
    """A parent killed mid-run (a SIGKILL, a crash) leaves the child writing into a
    closed pipe: its "ready" or its reply then fails, and the traceback went to the
    stderr it shares with the parent, the user's terminal (bench/reliability_store.py saw
    it after a writer killed during a merge). Nobody is left to answer: end quietly,
    without flushing what can no longer be written."""
    try:
        _serve(budget_mb)
    except BrokenPipeError:
        os._exit(0)


if __name__ == "__main__":
    _main(int(sys.argv[1]))
