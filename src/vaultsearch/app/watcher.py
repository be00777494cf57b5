"""Watch a vault and feed its changes to a LiveIndex: ``vaultsearch watch`` and the MCP server.

Editors do not write a note once: they write temp files, rename them over the note,
touch swap files, and sync tools rewrite whole folders. So events are filtered by the
same ignore rules as a scan (and by ``vault.max_file_size``), gathered per path until the
vault has been quiet for ``watch.debounce_ms``, and handed over as one batch. A folder
rename (hundreds of events within milliseconds) thus reaches the index as one update
that sees both sides of every move, and the moved notes keep their embeddings.

Folder sources are watched beside the vault, each by its own rules, and their files
reach the index under their note ids (``name:path``); a git source changes only when it
is fetched, so an index run, not a file event, brings it up to date.
"""

from __future__ import annotations

import errno
import os
import signal
import stat
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers.api import BaseObserver

from vaultsearch.app.live import LiveIndex, LiveState
from vaultsearch.errors import VaultsearchError
from vaultsearch.indexing.oswatch import pruned_observer
from vaultsearch.indexing.scan import IGNORE_FILES, IgnoreRules
from vaultsearch.indexing.sources import SourceSet
from vaultsearch.sourceconfig import SourceConfig, note_id
from vaultsearch.store.manifest import read_state

if TYPE_CHECKING:
    from vaultsearch.app.vault import Vault

WATCHED = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileClosedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]
"""Not opened/closed-without-writing: the indexer reading a note must not re-trigger it."""

RESCAN_SECONDS = 300.0
"""A whole-vault look this often catches what the kernel dropped (inotify overflow)."""


@dataclass
class _Root:
    """One watched folder: the vault (``source`` None) or a folder source."""

    path: Path
    source: SourceConfig | None
    max_size: int
    rules: IgnoreRules = field(init=False)

    def note_id(self, rel: str) -> str:
        return note_id(self.source.name if self.source else "", rel)

    def wanted(self, rel: str, is_dir: bool, sources: SourceSet) -> bool:
        if self.rules.excludes(rel, is_dir=is_dir):
            return False
        if is_dir:
            return True
        if self.source is not None and not sources.included(self.source, rel):
            return False
        return sources.parser_for(self.note_id(rel)) is not None


class Watcher:
    """Debounces file events into ``LiveIndex.request(paths=...)`` calls."""

    def __init__(
        self, live: LiveIndex, debounce: float | None = None, rescan: float = RESCAN_SECONDS
    ) -> None:
        vault = live.vault
        self.live = live
        self.debounce = (
            vault.config.watch.debounce_ms / 1000 if debounce is None else max(0.0, debounce)
        )
        self.max_wait = max(2.0, 10 * self.debounce)
        """Under a steady stream of events, index at least this often anyway."""
        self.rescan = rescan
        self._exclude = vault.config.excluded()
        self._index_dir = vault.index_dir
        self.sources = SourceSet(vault.root, vault.index_dir, vault.config)
        self.roots = self._roots(vault)
        self.batches = 0
        """Requests handed to the LiveIndex so far (tests and the bench read it)."""
        self._cond = threading.Condition()
        self._paths: dict[str, tuple[Path, int]] = {}
        """Note id -> its file and the size limit it is judged by."""
        self._everything = False
        self._first = self._last = 0.0
        self._stopped = False
        self._observer: BaseObserver | None = None
        self._thread = threading.Thread(target=self._loop, name="vaultsearch-watch", daemon=True)

    def _roots(self, vault: Vault) -> list[_Root]:
        """The vault, then every folder source that exists now (one that appears later, a
        disk mounted after the start, is read by the periodic whole-vault look)."""
        out = [_Root(vault.root.resolve(), None, vault.config.vault.max_file_size)]
        for source in vault.config.sources:
            path = self.sources.root(source)
            if source.type == "folder" and path.is_dir():
                out.append(_Root(path, source, self.sources.max_size(source)))
        for root in out:
            root.rules = self._rules(root)
        return out

    def _rules(self, root: _Root) -> IgnoreRules:
        """A root's excludes and ignore files, read now."""
        if root.source is None:
            return IgnoreRules(root.path, self._exclude, self._index_dir)
        return self.sources.ignore_rules(root.source)

    def start(self) -> Watcher:
        try:
            observer = pruned_observer(self._unwatched)
            for root in self.roots:
                observer.schedule(
                    _Handler(self, root), str(root.path), recursive=True, event_filter=list(WATCHED)
                )
            observer.start()
        except OSError as exc:  # ENOSPC here is inotify's limit, not a full disk
            if exc.errno not in (errno.ENOSPC, errno.EMFILE):
                raise
            raise VaultsearchError(
                f"Cannot watch {' and '.join(str(r.path) for r in self.roots)}: "
                f"{exc.strerror} (a limit on file watching).",
                fix="raise it (sudo sysctl fs.inotify.max_user_watches=524288, or "
                "fs.inotify.max_user_instances), or run 'vaultsearch index' when notes change",
            ) from exc
        self._observer = observer
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching; changes not yet handed over are dropped (a restart rescans)."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout)
        if self._thread.ident is not None:
            self._thread.join(timeout)

    # --- events (watchdog's thread) ----------------------------------------------
    def on_event(self, event: FileSystemEvent, root: _Root) -> None:
        if event.is_directory and event.event_type not in ("created", "deleted", "moved"):
            return
        raw = [event.src_path, event.dest_path] if event.event_type == "moved" else [event.src_path]
        taken: dict[str, tuple[Path, int]] = {}
        everything = False
        for p in raw:
            path = Path(os.fsdecode(p))
            rel = _relative(path, root.path)
            if rel is None:
                continue
            if rel in IGNORE_FILES:  # the rules changed: what is a note may have too
                root.rules = self._rules(root)
                if root.source is None:
                    everything = True
                else:  # the whole source, as ``name:``
                    taken[root.note_id("")] = (root.path, root.max_size)
            elif root.wanted(rel, event.is_directory, self.sources):
                taken[root.note_id(rel)] = (path, root.max_size)
        if not taken and not everything:
            return
        now = time.monotonic()
        with self._cond:
            if not self._paths and not self._everything:
                self._first = now
            self._last = now
            self._paths.update(taken)
            self._everything = self._everything or everything
            self._cond.notify_all()

    def _unwatched(self, folder: str) -> bool:
        """No OS watch for a folder no note can be in (``.git``, ``node_modules``...);
        rules read at start, so a folder un-ignored later is watched after a restart
        and found meanwhile by the periodic whole-vault look."""
        judged = [
            root.rules.excludes(rel, is_dir=True)
            for root in self.roots
            if (rel := _relative(Path(folder), root.path)) is not None
        ]
        return bool(judged) and all(judged)

    @staticmethod
    def _small_enough(file: Path, limit: int) -> bool:
        """Judged when the batch is handed over, once the file is written: a file over
        the size limit is not indexed, so its events start no run (a note that outgrows
        the limit leaves the index at the next whole-vault look)."""
        try:
            st = file.stat()
        except OSError:
            return True  # gone: the index must drop it
        return stat.S_ISDIR(st.st_mode) or st.st_size <= limit

    # --- batching (own thread) ---------------------------------------------------
    def _loop(self) -> None:
        next_rescan = time.monotonic() + self.rescan
        while True:
            with self._cond:
                if self._stopped:
                    return
                now = time.monotonic()
                if not self._paths and not self._everything:
                    if now < next_rescan:
                        self._cond.wait(next_rescan - now)
                        continue
                    self._everything = True
                    self._first = self._last = now - self.debounce
                due = min(self._last + self.debounce, self._first + self.max_wait)
                if now < due:
                    self._cond.wait(due - now)
                    continue
                taken, everything = self._paths, self._everything
                self._paths, self._everything = {}, False
            paths = {p for p, (file, limit) in taken.items() if self._small_enough(file, limit)}
            if not everything and not paths:
                continue
            self.live.request(paths=None if everything else paths)
            self.batches += 1
            next_rescan = time.monotonic() + self.rescan


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher, root: _Root) -> None:
        self.watcher, self.root = watcher, root

    def on_any_event(self, event: FileSystemEvent) -> None:
        self.watcher.on_event(event, self.root)


def _relative(path: Path, root: Path) -> str | None:
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        return None
    return None if rel in ("", ".") else rel


def attach_watcher(live: LiveIndex) -> Watcher:
    """Watch ``live``'s vault and feed it; the caller starts and stops ``live`` itself
    and decides (``watch.enabled``, ``--no-watch``) whether to watch at all."""
    return Watcher(live).start()


# --- vaultsearch watch ---------------------------------------------------------------
def watch_forever(vault: Vault) -> int:
    """Index, then keep indexing as files change, until SIGINT or SIGTERM."""
    done = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        done.set()

    live = LiveIndex(vault, on_change=_Reporter(vault))
    watcher = attach_watcher(live)  # before the first run, so no change falls in between
    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    debounce = vault.config.watch.debounce_ms
    _say(f"watching {vault.root} (index {vault.index_dir}, debounce {debounce} ms)")
    live.start()
    try:
        while not done.wait(0.5):
            pass
    finally:
        watcher.stop()
        live.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
    _say("stopped")
    return 0


class _Reporter:
    """One stderr line per run that changed something or failed, and per role change."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.first = True

    def __call__(self, kind: str, state: LiveState) -> None:
        if kind == "role":
            _say(
                "writer: this process indexes the vault"
                if state.role == "writer"
                else "reader: another process is writing this index; taking over if it stops"
            )
            return
        first, self.first = self.first, False
        if state.last_error:
            _say(f"index run failed: {state.last_error}")
            return
        s = state.last_summary or {}
        changed = sum(s.get(k, 0) for k in ("added", "updated", "moved", "removed"))
        if not (changed or s.get("failed") or s.get("repaired") or first):
            return
        live = self.vault.layout.current()
        generation = (read_state(live.root) or {}).get("generation") if live else None
        _say(
            f"indexed: {s.get('added', 0)} added, {s.get('updated', 0)} updated, "
            f"{s.get('moved', 0)} moved, {s.get('removed', 0)} removed, "
            f"{len(s.get('failed', {}))} failed, {s.get('chunks_embedded', 0)} chunks embedded, "
            f"{s.get('seconds', 0.0):.2f} s, generation {generation}"
        )


def _say(text: str) -> None:
    print(f"{datetime.now().strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)
