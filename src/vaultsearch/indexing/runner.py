"""IndexRunner: one index run at a time per process, observable and cancellable.

Every run of a long-lived process goes through it (the live indexer's, and those a
person or agent starts), so one progress snapshot describes whatever is running, a
second start is refused instead of queued behind a rebuild nobody asked to wait for,
and a cancel reaches the manager whichever caller started the run. Progress events
are kept as JSON Lines in the index folder, so a run can be followed after the fact.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from vaultsearch.errors import IndexBusyError
from vaultsearch.indexing.manager import IndexManager
from vaultsearch.indexing.runrecord import run_view
from vaultsearch.indexing.summary import IndexSummary
from vaultsearch.listeners import Listeners
from vaultsearch.store.runstate import read_run

log = logging.getLogger("vaultsearch.runner")

RunKind = Literal["update", "rebuild", "sentences"]
"""``sentences``: a step of a first build's second stage (``IndexManager.fill_sentences``)."""
RunState = Literal["idle", "running", "cancelling", "done", "cancelled", "failed"]
Listener = Callable[[str, "RunSnapshot"], None]
"""Called with the event (``started``, ``progress``, ``cancelling``, ``done``,
``cancelled`` or ``failed``) and the snapshot after it, on the thread that ran it."""

LOG_NAME = "progress.jsonl"
LOG_MAX_BYTES = 1_000_000
LOG_EVERY = 1.0
"""Seconds between two ``progress`` lines in the log (start and end are always written)."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True, slots=True)
class RunSnapshot:
    state: RunState = "idle"
    kind: RunKind | None = None
    files_done: float = 0.0
    files_total: int = 0
    chunks_done: int = 0
    chunks_total: int = 0
    """Chunks known to need the model so far: each batch adds its own when it is parsed."""
    current_file: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    error: str | None = None
    summary: dict[str, Any] | None = None

    @property
    def busy(self) -> bool:
        return self.state in ("running", "cancelling")

    @property
    def percent(self) -> float:
        if self.state == "done":
            return 100.0
        if not self.files_total:
            return 0.0
        return round(min(100.0, 100.0 * self.files_done / self.files_total), 1)

    def to_dict(self) -> dict[str, Any]:
        """The REST /progress body: fields without a value are left out."""
        out: dict[str, Any] = {
            "state": self.state,
            "kind": self.kind,
            "percent": self.percent,
            "files_done": int(round(self.files_done, 6)),  # shares of 1/3 add up to 0.999…
            "files_total": self.files_total,
            "chunks_done": self.chunks_done,
            "chunks_total": max(self.chunks_total, self.chunks_done),
            "current_file": self.current_file,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "error": self.error,
        }
        return {k: v for k, v in out.items() if v is not None}


class IndexRunner:
    """Runs ``IndexManager.update`` on the caller's thread (``run``) or on one of its
    own (``start``); either way it is the manager's progress display for the run."""

    def __init__(self, manager: IndexManager, log_path: Path | None = None) -> None:
        self.manager = manager
        self.log_path = log_path
        self._run_lock = threading.Lock()
        """Held for the whole of a run: the manager is not safe for two at once."""
        self._state_lock = threading.Lock()
        self._snap = RunSnapshot()
        self._listeners: Listeners[Listener] = Listeners()
        self._thread: threading.Thread | None = None
        self._logged_at = 0.0
        self._after_run: list[Callable[[], None]] = []

    # --- asking -------------------------------------------------------------------
    def snapshot(self) -> RunSnapshot:
        with self._state_lock:
            return self._snap

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Add a listener; returns the function that removes it."""
        return self._listeners.add(listener)

    # --- running ------------------------------------------------------------------
    def start(
        self,
        kind: RunKind = "update",
        paths: Collection[str] | None = None,
        reason: str | None = None,
    ) -> None:
        """Start a run in the background, or raise ``IndexBusyError`` at once when one is
        going in this process or another process holds the index's writer lock."""
        if not self._run_lock.acquire(blocking=False):
            raise self._busy("An index run is already going in this process")
        try:
            took_lock = self._take_writer_lock()
        except BaseException:
            self._run_lock.release()
            raise
        self._thread = threading.Thread(
            target=self._run_held,
            args=(kind, paths, took_lock, reason),
            name=f"vaultsearch-{kind}",
            daemon=True,
        )
        self._thread.start()

    def run(
        self,
        kind: RunKind = "update",
        paths: Collection[str] | None = None,
        wait: bool = True,
        reason: str | None = None,
    ) -> IndexSummary:
        """Run now on this thread: after the run in progress when ``wait``, else raise
        ``IndexBusyError`` if there is one."""
        if not self._run_lock.acquire(blocking=wait):
            raise self._busy("An index run is already going in this process")
        return self._run_held(kind, paths, False, reason, reraise=True)

    def cancel(self) -> bool:
        """Ask the run in progress to stop after its current model call; False when
        nothing is running."""
        with self._state_lock:
            if self._snap.state != "running":
                return self._snap.state == "cancelling"
            self.manager.cancel_requested.set()
        self._update(lambda s: replace(s, state="cancelling"), "cancelling")
        return True

    def when_idle(self, action: Callable[[], None]) -> None:
        """Run ``action`` now if no run is going, else as soon as the current one ends
        (before another can start): for changes a run must not see halfway."""
        with self._state_lock:
            self._after_run.append(action)
        if self._run_lock.acquire(blocking=False):  # else the run's end does it
            try:
                self._run_pending_actions()
            finally:
                self._run_lock.release()

    def _run_pending_actions(self) -> None:
        with self._state_lock:
            actions, self._after_run = self._after_run, []
        for action in actions:
            action()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a run started with ``start`` to end; True when none is going."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True

    def _busy(self, what: str) -> IndexBusyError:
        return IndexBusyError(
            f"{what}; it was not started again.",
            fix="wait for it to finish (GET /progress or index_status), or cancel it",
        )

    def _take_writer_lock(self) -> bool:
        """True when this call took the lock (and the run must give it back)."""
        lock = self.manager.lock
        if lock.held:
            return False
        if not lock.acquire():
            raise self._busy(
                f"Another vaultsearch process is writing the index at {self.manager.layout.root}"
            )
        return True

    def _run_held(
        self,
        kind: RunKind,
        paths: Collection[str] | None,
        took_lock: bool,
        reason: str | None = None,
        reraise: bool = False,
    ) -> IndexSummary:
        try:
            self.manager.cancel_requested.clear()
            self._set("started", RunSnapshot(state="running", kind=kind, started_at=_now()))
            try:
                progress = _RunProgress(self)
                if kind == "sentences":
                    summary = self.manager.fill_sentences(progress, reason, steps=1)
                else:
                    summary = self.manager.update(
                        full=kind == "rebuild", progress=progress, paths=paths, reason=reason
                    )
            except Exception as exc:
                if not reraise:
                    log.exception("index run failed")
                self._finish("failed", error=str(exc) or type(exc).__name__)
                if reraise:
                    raise
                return IndexSummary()
            if summary.cancelled:  # files part-embedded when it stopped are not done
                done = summary.added + summary.updated + summary.moved
                self._update(lambda s: replace(s, files_done=float(min(done, s.files_total))))
            self._finish("cancelled" if summary.cancelled else "done", summary=summary.to_dict())
            return summary
        finally:
            self.manager.cancel_requested.clear()
            if took_lock:
                self.manager.lock.release()
            try:
                self._run_pending_actions()
            finally:
                self._run_lock.release()

    def _finish(
        self,
        state: RunState,
        error: str | None = None,
        summary: dict[str, Any] | None = None,
    ) -> None:
        finished = _now()
        self._update(
            lambda s: replace(
                s,
                state=state,
                current_file=None,
                finished_at=finished,
                error=error,
                summary=summary,
            ),
            state,
        )

    # --- state and events ------------------------------------------------------------
    def _update(
        self, change: Callable[[RunSnapshot], RunSnapshot], event: str = "progress"
    ) -> None:
        """Change the snapshot in one step (a cancel from another thread is not lost)."""
        with self._state_lock:
            snap = self._snap = change(self._snap)
        listeners = self._listeners.current()
        self._log(event, snap)
        for listener in listeners:
            try:
                listener(event, snap)
            except Exception:  # a broken listener must not stop indexing
                log.exception("index run listener failed")

    def _set(self, event: str, snap: RunSnapshot) -> None:
        self._update(lambda _: snap, event)

    def _log(self, event: str, snap: RunSnapshot) -> None:
        if self.log_path is None:
            return
        now = time.monotonic()
        if event == "progress" and now - self._logged_at < LOG_EVERY:
            return
        self._logged_at = now
        record = {"time": _now(), "event": event, **snap.to_dict()}
        if snap.summary is not None and event != "progress":
            record["summary"] = snap.summary
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            if self.log_path.is_file() and self.log_path.stat().st_size > LOG_MAX_BYTES:
                self.log_path.replace(self.log_path.with_suffix(".jsonl.1"))
            with self.log_path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
        except OSError as exc:  # a read-only index folder: the run matters more than its log
            log.warning("cannot write the progress log %s: %s", self.log_path, exc)


def shown_run(runner: IndexRunner) -> dict[str, Any]:
    """The run to show (REST /progress, the page, ``index_status``): this process's own
    while it runs one, else the last run any process recorded in the index folder (a
    ``vaultsearch index``, an MCP server's watcher, this process's last run)."""
    own = runner.snapshot()
    stored = read_run(runner.manager.layout.root)
    if own.busy or stored is None:
        out = own.to_dict()
        if stored is not None and stored.get("pid") == os.getpid():
            out |= {k: stored[k] for k in ("by", "pid", "reason") if stored.get(k)}
        return out
    return run_view(stored)


def progress_log(path: Path) -> list[dict[str, Any]]:
    """The records of a progress log, oldest first (for tests and ``index_status``)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in lines if line.strip()]


class _RunProgress:
    """The manager's ``Progress`` for one run, writing into the runner's snapshot."""

    def __init__(self, runner: IndexRunner) -> None:
        self.runner = runner

    def start(self, files: int) -> None:
        self.runner._update(lambda s: replace(s, files_total=files))

    def advance(self, files: float = 0, chunks: int = 0) -> None:
        self.runner._update(
            lambda s: replace(
                s,
                files_done=min(s.files_done + files, float(s.files_total)),
                chunks_done=s.chunks_done + chunks,
            )
        )

    def working_on(self, path: str, chunks: int = 0) -> None:
        self.runner._update(
            lambda s: replace(s, current_file=path, chunks_total=s.chunks_total + chunks)
        )

    def finish(self) -> None:
        pass
