"""LiveIndex: keeps a vault's index current in the background of a long-lived process.

One process per index is the writer (it holds the OS lock); every other process is a
reader that answers from the last committed generation and keeps trying the lock,
so when the writer dies another takes over. Searches never wait for indexing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vaultsearch.errors import VaultsearchError, environment_error_sentence

if TYPE_CHECKING:
    from vaultsearch.app.vault import Vault

log = logging.getLogger("vaultsearch.live")

MAX_PENDING_PATHS = 5000
"""Past this many changed paths a whole-vault scan is cheaper than stat-ing each."""
RETRY_SECONDS = 5.0
"""After a failed run: soon enough to recover from a full disk, not a busy loop."""


@dataclass
class LiveState:
    role: str = "starting"
    """``writer`` (holds the lock), ``reader`` (another process writes) or ``starting``."""
    indexing: bool = False
    full_requested: bool = False
    last_summary: dict[str, Any] | None = None
    last_error: str | None = None
    runs: int = 0
    started_at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "indexing": self.indexing,
            "last_summary": self.last_summary,
            "last_error": self.last_error,
            "runs": self.runs,
        }


Listener = Callable[[str, LiveState], None]
"""Called with ``"role"`` when the process becomes writer or reader and with ``"run"``
after each index run, on the indexing thread."""


class LiveIndex:
    """Runs index updates on a background thread: at start, on request, and (with a
    watcher attached) after file changes. Requests made while a run is going are
    coalesced into one more run; requests naming paths only look at those paths.

    A first build's second stage (sentence vectors, ``IndexManager.fill_sentences``)
    runs here in steps of one published generation, each after any update asked for, so
    an edit is indexed within a step while the notes already in are searched."""

    def __init__(
        self, vault: Vault, takeover_interval: float = 2.0, on_change: Listener | None = None
    ) -> None:
        self.vault = vault
        self.state = LiveState()
        self.takeover_interval = takeover_interval
        self.on_change = on_change
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._pending = True
        self._pending_full = False
        self._scope: set[str] | None = None
        """Paths the next run must look at; None for the whole vault."""
        self._retry_at: float | None = None
        self._filling = False
        """Sentence vectors are pending and the last step added some: another step is due."""
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="vaultsearch-live", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        runner = self.vault.runner()
        runner.cancel()  # a run started elsewhere (the page) stops too, keeping its work
        runner.wait(timeout)
        if self._thread is not None:
            self._thread.join(timeout)
        if (self._thread is None or not self._thread.is_alive()) and not runner.snapshot().busy:
            # never while a run may still write: another process would take over mid-commit
            self.vault.manager().lock.release()

    def request(self, full: bool = False, paths: Iterable[str] | None = None) -> bool:
        """Ask for a run; False when one is already running (it is queued once more).

        ``paths`` (vault-relative, files or folders) narrows the run to them; None
        (the default) looks at the whole vault. Both sides of a move must be named
        in one request for the move to keep its embeddings.
        """
        with self._lock:
            busy = self.state.indexing
            if paths is None or full:
                self._scope = None
            elif not self._pending:
                self._scope = set(paths)
            elif self._scope is not None:
                self._scope.update(paths)
            if self._scope is not None and len(self._scope) > MAX_PENDING_PATHS:
                self._scope = None
            self._pending = True
            self._pending_full = self._pending_full or full
            self.state.full_requested = self._pending_full
        self._wake.set()
        return not busy

    def wait_idle(self, timeout: float = 60.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if not self._pending and not self.state.indexing and not self._filling:
                    return True
            time.sleep(0.02)
        return False

    def _run(self) -> None:
        manager = self.vault.manager()
        manager.keep_parse_child = True
        manager.defer_sentences = True
        while not self._stop.is_set():
            if not manager.lock.held:
                try:
                    acquired = manager.lock.acquire()
                except OSError as exc:  # a read-only index: serve it, and say why not written
                    self.state.last_error = environment_error_sentence(exc) or str(exc)
                    acquired = False
                if not acquired:
                    self._set_role("reader")
                    self._wake.wait(self.takeover_interval)
                    self._wake.clear()
                    continue
                with self._lock:  # what a writer that died had not indexed is unknown
                    self._pending, self._scope = True, None
                self._set_role("writer")
            with self._lock:
                run, full, scope = self._pending, self._pending_full, self._scope
                self._pending = self._pending_full = False
                self._scope = None
                self.state.full_requested = False
                self.state.indexing = run
            if run:
                self._index_once(full, scope)
            elif self._filling:
                self._fill_once()
            if self._filling:  # the next step, after any update asked for meanwhile
                continue
            wait = None if self._retry_at is None else max(0.0, self._retry_at - time.monotonic())
            self._wake.wait(wait)  # a failed run is pending again: the timeout retries it
            self._wake.clear()

    def _set_role(self, role: str) -> None:
        if self.state.role != role:
            self.state.role = role
            self._notify("role")

    def _index_once(self, full: bool, scope: set[str] | None) -> None:
        try:
            if self.state.runs == 0:
                reason = "start-up update"
            elif full:
                reason = "rebuild requested"
            elif scope is not None:
                reason = f"{len(scope)} changed path{'s' if len(scope) != 1 else ''}"
            else:
                reason = "update requested"
            summary = self.vault.runner().run(
                "rebuild" if full else "update", paths=scope, reason=reason
            )
            self.state.last_summary = summary.to_dict()
            self.state.last_error = None
            self._retry_at = None
        except Exception as exc:  # a background failure must be visible, not fatal
            self.state.last_error = _failure(exc, "indexing failed")
            with self._lock:  # what this run was to index is not: look at everything again
                self._pending, self._scope = True, None
                self._pending_full = self._pending_full or full
            self._retry_at = time.monotonic() + RETRY_SECONDS
        finally:
            self.state.runs += 1
            left = self._sentences_left() if self._retry_at is None else 0
            with self._lock:
                self._filling = left > 0
                self.state.indexing = False
        self._notify("run")

    def _fill_once(self) -> None:
        """One step of the second stage; it stops being due when a step adds nothing
        (the next update looks again)."""
        before = self._sentences_left()
        with self._lock:
            self.state.indexing = True
        try:
            self.vault.runner().run("sentences", reason="sentence vectors of a new build")
        except Exception as exc:  # as an update's failure: visible, not fatal
            self.state.last_error = _failure(exc, "adding sentence vectors failed")
        finally:
            left = self._sentences_left()
            with self._lock:
                self._filling = 0 < left < before
                self.state.indexing = False
        self._notify("run")

    def _sentences_left(self) -> int:
        try:
            return self.vault.manager().sentences_pending()
        except Exception:  # an unreadable index: the next update says why
            return 0

    def _notify(self, kind: str) -> None:
        if self.on_change is None:
            return
        try:
            self.on_change(kind, self.state)
        except Exception:  # a broken listener must not stop indexing
            log.exception("LiveIndex listener failed")


def _failure(exc: Exception, what: str) -> str:
    """A failed run's one sentence. The machine's refusals (a full disk, a folder that
    became read-only) are retried and said like any user error, without a traceback;
    only what nobody expected is logged with one."""
    sentence = environment_error_sentence(exc)
    if sentence is None and not isinstance(exc, VaultsearchError):
        log.exception(what)
    return sentence or str(exc) or type(exc).__name__
