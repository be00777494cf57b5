"""One Index Console per vault across processes, and the list of this user's consoles.

The serving process holds an exclusive ``flock`` on ``manager.lock`` in the index folder
for as long as it lives, so "is one running?" is answered by the kernel: the lock dies
with its process, and no crash leaves a manager that blocks the next. The record beside
it (``manager.json``: pid, host, port, url, started) says where the running one listens;
a copy in a per-user folder lets ``list_index_consoles`` find every vault's manager.
Records are checked by pid liveness and a ``/health`` probe before anyone trusts them.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import anyio

from vaultsearch.errors import VaultsearchError
from vaultsearch.store.atomic import atomic_write_json

FIRST_PORT = 3456
PORT_TRIES = 100
RECORD = "manager.json"
LOCK = "manager.lock"
DIR_ENV = "VAULTSEARCH_CONSOLES_DIR"
HEALTH_TIMEOUT = 2.0


@dataclass(frozen=True, slots=True)
class ConsoleRecord:
    vault: str
    index_dir: str
    pid: int
    host: str
    port: int
    url: str
    started: str

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConsoleRecord:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def user_dir() -> Path:
    """Where this user's consoles are listed: $VAULTSEARCH_CONSOLES_DIR, else the runtime
    folder (emptied at logout, like the processes), else the cache folder."""
    configured = os.environ.get(DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "vaultsearch" / "consoles"
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "vaultsearch" / "consoles"


def _user_record(index_dir: Path) -> Path:
    key = hashlib.sha1(str(index_dir).encode()).hexdigest()[:16]
    return user_dir() / f"{key}.json"


def url_for(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/"


# --- finding the running one ------------------------------------------------------
def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive, though not ours
        return True
    return True


def healthy(url: str, timeout: float = HEALTH_TIMEOUT) -> bool:
    try:
        with urllib.request.urlopen(url + "health", timeout=timeout) as response:
            return bool(json.loads(response.read()).get("status") == "ok")
    except (OSError, ValueError):
        return False


def read_record(path: Path) -> ConsoleRecord | None:
    try:
        return ConsoleRecord.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def running(record: ConsoleRecord | None) -> bool:
    return record is not None and pid_alive(record.pid) and healthy(record.url)


def find(index_dir: Path, wait: float = 10.0) -> ConsoleRecord | None:
    """The manager serving this index, if one runs. A manager that holds the lock but is
    not answering yet (it is starting) is waited for up to ``wait`` seconds."""
    lock = _open_lock(index_dir)
    if lock is None:
        return None
    try:
        if _try_lock(lock):
            return None  # nobody holds it: any record is stale
    finally:
        lock.close()
    deadline = time.monotonic() + wait
    while True:
        record = read_record(index_dir / RECORD)
        if running(record):
            return record
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.1)


def list_running() -> list[ConsoleRecord]:
    """Every manager of this user that answers; stale records are removed on the way."""
    found = []
    folder = user_dir()
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        record = read_record(path)
        if running(record):
            assert record is not None
            found.append(record)
        elif record is None or not pid_alive(record.pid):
            path.unlink(missing_ok=True)
    return found


# --- becoming the one -------------------------------------------------------------
class Claim:
    """This process is the vault's manager while it holds the claim: the lock, the
    records, and the listening socket bound before anyone is told about it."""

    def __init__(
        self, index_dir: Path, lock: IO[str], sock: socket.socket | None, record: ConsoleRecord
    ) -> None:
        self.index_dir = index_dir
        self._lock = lock
        self.socket = sock
        self.record = record

    async def publish_when_started(self, server: Any) -> None:
        """Publish the records once ``server`` (a ``uvicorn.Server``) answers, so no
        one finds a manager that cannot be reached yet."""
        while not server.started:
            await anyio.sleep(0.05)
        self.publish()

    def publish(self) -> None:
        atomic_write_json(self.index_dir / RECORD, self.record.to_dict())
        with contextlib.suppress(OSError):
            atomic_write_json(_user_record(self.index_dir), self.record.to_dict())

    def release(self) -> None:
        for path in (self.index_dir / RECORD, _user_record(self.index_dir)):
            if read_record(path) == self.record:
                path.unlink(missing_ok=True)
        self._lock.close()


def claim(vault: Path, index_dir: Path, host: str, port: int | None) -> Claim | None:
    """Become this index's manager, listening on ``port`` or the first free one from
    3456 up; None when another process already is."""
    lock = _take_lock(index_dir)
    if lock is None:
        return None
    try:
        sock = bind(host, port)
    except BaseException:
        lock.close()
        raise
    return Claim(index_dir, lock, sock, _record(vault, index_dir, host, sock.getsockname()[1]))


def claim_listening(vault: Path, index_dir: Path, host: str, port: int) -> Claim | None:
    """Become this index's manager on a port another server binds (``mcp --http``);
    None when another process already is, or the lock cannot be written (it then
    serves its page without being the one ``serve`` finds)."""
    try:
        lock = _take_lock(index_dir)
    except VaultsearchError:
        return None
    return (
        None
        if lock is None
        else Claim(index_dir, lock, None, _record(vault, index_dir, host, port))
    )


def _take_lock(index_dir: Path) -> IO[str] | None:
    lock = _open_lock(index_dir)
    if lock is None:
        raise VaultsearchError(
            f"Cannot write the manager lock in {index_dir}.",
            fix="pass an --index-dir this user can write",
        )
    if not _try_lock(lock):
        lock.close()
        return None
    return lock


def _record(vault: Path, index_dir: Path, host: str, port: int) -> ConsoleRecord:
    return ConsoleRecord(
        vault=str(vault),
        index_dir=str(index_dir),
        pid=os.getpid(),
        host=host,
        port=int(port),
        url=url_for(host, int(port)),
        started=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def bind(host: str, port: int | None) -> socket.socket:
    """A listening socket on ``port``, or on the first free port from 3456 up; bound here
    (and handed to the server) so no other process can take it in between."""
    candidates = [port] if port is not None else range(FIRST_PORT, FIRST_PORT + PORT_TRIES)
    error: OSError | None = None
    for candidate in candidates:
        family = socket.getaddrinfo(host, candidate, type=socket.SOCK_STREAM)[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, candidate))
            sock.listen(128)
            sock.set_inheritable(False)
            return sock
        except OSError as exc:
            sock.close()
            error = exc
    where = f"{host}:{port}" if port is not None else f"{host} ports {FIRST_PORT}-{candidate}"
    raise VaultsearchError(
        f"Cannot listen on {where} ({getattr(error, 'strerror', None) or error}).",
        fix="pass another --port, or stop the process that uses it",
    )


def _open_lock(index_dir: Path) -> IO[str] | None:
    try:
        index_dir.mkdir(parents=True, exist_ok=True)
        return open(index_dir / LOCK, "a", encoding="utf-8")  # held for the process's life
    except OSError:
        return None


def _try_lock(lock: IO[str]) -> bool:
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


# --- from another process (the MCP tools) -----------------------------------------
START_WAIT = 60.0
"""Seconds a background ``serve`` may take to answer (it imports the search stack)."""


def start_background(
    vault: Path, index_dir: Path, config: str | None = None, wait: float = START_WAIT
) -> ConsoleRecord:
    """The running manager of this index, or a new ``vaultsearch serve`` started in its
    own session (it outlives the caller) once it answers."""
    existing = find(index_dir, wait=0)
    if existing is not None:
        return existing
    argv = [sys.executable, "-m", "vaultsearch.cli", "serve", str(vault)]
    argv += ["--index-dir", str(index_dir), "--no-open"]
    if config and Path(config).is_file():
        argv += ["--config", config]
    index_dir.mkdir(parents=True, exist_ok=True)
    with open(index_dir / "manager.log", "ab") as log:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        record = find(index_dir, wait=0.5)
        if record is not None:
            return record
        if proc.poll() is not None and find(index_dir, wait=0) is None:
            raise VaultsearchError(
                f"The Index Console exited at start (code {proc.returncode}).",
                fix=f"read {index_dir / 'manager.log'}, or run 'vaultsearch serve' yourself",
            )
        time.sleep(0.2)
    raise VaultsearchError(
        f"The Index Console did not answer within {wait:.0f} s.",
        fix=f"read {index_dir / 'manager.log'}",
    )


def stop(record: ConsoleRecord, wait: float = 10.0) -> bool:
    """Ask a manager to exit (SIGTERM) and wait for it; False if it was not running."""
    if not running(record):
        return False
    os.kill(record.pid, signal.SIGTERM)
    deadline = time.monotonic() + wait
    while pid_alive(record.pid) and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(record.pid, os.WNOHANG)  # reap it if it is our own child
        time.sleep(0.05)
    return not pid_alive(record.pid)
