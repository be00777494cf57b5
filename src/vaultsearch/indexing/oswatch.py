"""An inotify observer that never watches an ignored folder.

watchdog's recursive inotify watch puts one OS watch on every folder below the vault:
a vault beside a large ``.git`` or ``node_modules`` holds tens of thousands, over the
8,192 many distributions allow, for folders whose files are never indexed. The same
observer, with the walk that adds watches pruned by the vault's ignore rules, watches
only folders that can hold notes; a folder created or moved in later is judged the
same way. Other platforms (and other watchdog versions) keep watchdog's own observer.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver

Prune = Callable[[str], bool]
"""Given a folder's absolute path, should it (and all below it) go unwatched?"""


def pruned_observer(prune: Prune) -> BaseObserver:
    if not sys.platform.startswith("linux"):
        return Observer()
    try:
        from watchdog.observers.inotify import InotifyEmitter, InotifyObserver
        from watchdog.observers.inotify import InotifyWatchGroup as Group
    except ImportError:  # pragma: no cover - watchdog before 7 has no watch groups
        return Observer()

    @dataclass
    class PrunedGroup(Group):
        prune: Prune = field(default=lambda _: False)

        def _add_all_callbacks(self, path: bytes) -> None:
            if path != self.path and self.prune(os.fsdecode(path)):
                return
            self._add_callback(path)
            if not (self.is_recursive and os.path.isdir(path)):
                return
            for root, dirnames, _ in os.walk(path):
                kept = []
                for d in dirnames:
                    full = os.path.join(root, d)
                    if not os.path.islink(full) and not self.prune(os.fsdecode(full)):
                        kept.append(d)
                        self._add_callback(full)
                dirnames[:] = kept

    class PrunedEmitter(InotifyEmitter):
        def on_thread_start(self) -> None:
            self._inotify = PrunedGroup(
                self._inotify_fd,
                os.fsencode(self.watch.path),
                is_recursive=self.watch.is_recursive,
                event_mask=self.get_event_mask_from_filter(),
                follow_symlink=self.watch.follow_symlink,
                prune=prune,
            )

    observer: Any = InotifyObserver()
    observer._emitter_class = PrunedEmitter
    return observer
