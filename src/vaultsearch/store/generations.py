"""The generation protocol: build beside, switch in one step, delete what no one holds.

A writer fills a new generation folder, syncs it, and replaces the pointer file
atomically; a kill or a full disk before that leaves the pointer, and so every
reader, on the old generation. A reader holds a shared flock on the generation
it reads (opened read-only, so it works on a read-only mount and for another
user); the writer removes an old generation only when it gets that lock
exclusively, and renames it away first, so a reader that locked too late sees
the folder gone and reads the pointer again.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import weakref
from pathlib import Path

from vaultsearch.store.atomic import atomic_write_bytes, fsync_dir, fsync_tree
from vaultsearch.store.layout import Generation, IndexLayout
from vaultsearch.store.manifest import read_state, state_checksum

_OPEN_TRIES = 50


class ReaderHold:
    """A shared lock on one generation; the generation stays on disk while it is held."""

    def __init__(self, generation: Generation, fd: int | None) -> None:
        self.generation = generation
        self._fd = fd
        # a snapshot dropped without close() (replaced while a search still used it)
        # must not hold its generation for the life of the process
        self._finalizer = weakref.finalize(self, _close_quietly, fd)

    def release(self) -> None:
        self._finalizer()  # closing the file drops the flock; runs once
        self._fd = None


def _close_quietly(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def hold_current(layout: IndexLayout) -> ReaderHold | None:
    """The live generation, locked for reading; None when no index was published."""
    for _ in range(_OPEN_TRIES):
        generation = layout.current()
        if generation is None:
            return None
        try:
            fd = os.open(generation.reader_lock, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            continue  # swept between reading the pointer and opening: read it again
        except OSError:
            return ReaderHold(generation, None)  # unreadable lock file: read unprotected
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            same = os.fstat(fd).st_ino == os.stat(generation.reader_lock).st_ino
        except FileNotFoundError:
            same = False
        except OSError:  # a file system without flock: read unprotected
            same = True
        if same:
            return ReaderHold(generation, fd)
        os.close(fd)
    return None


def newest_intact(layout: IndexLayout) -> Generation | None:
    """The newest generation a writer finished (its state file, written last, whole):
    what a lost or damaged ``CURRENT`` named, or the run after it that was never
    published. ``check --repair`` starts from it, and a sweep while ``CURRENT`` cannot
    be read keeps it instead of deleting every generation."""
    for generation in reversed(layout.all_generations()):
        state = read_state(generation.root)
        if state is not None and state.get("checksum") == state_checksum(state):
            return generation
    return None


def create_generation(layout: IndexLayout) -> Generation:
    generation = layout.next_generation()
    shutil.rmtree(generation.root, ignore_errors=True)
    generation.root.mkdir(parents=True)
    fd = os.open(generation.reader_lock, os.O_WRONLY | os.O_CREAT, 0o666)
    os.close(fd)
    return generation


def publish(layout: IndexLayout, generation: Generation) -> None:
    """Make ``generation`` the one readers open: everything in it reaches the disk
    first, then the pointer is replaced in one rename."""
    fsync_tree(generation.root)
    fsync_dir(layout.generations)
    atomic_write_bytes(layout.pointer, (generation.name + "\n").encode())
    if generation.manifest.is_file():
        atomic_write_bytes(layout.manifest, generation.manifest.read_bytes())


def sweep(layout: IndexLayout) -> list[str]:
    """Remove every generation but the live one that no reader holds, and the
    leftovers of killed runs. Only the writer-lock holder may call it."""
    current = layout.current()
    if current is None or not current.root.is_dir():
        current = newest_intact(layout)
    removed = []
    for generation in layout.all_generations():
        if current is not None and generation.name == current.name:
            continue
        if _remove_if_free(layout, generation):
            removed.append(generation.name)
    with contextlib.suppress(OSError):
        for leftover in layout.generations.glob(".trash-*"):
            shutil.rmtree(leftover, ignore_errors=True)
    return removed


def _remove_if_free(layout: IndexLayout, generation: Generation) -> bool:
    try:
        fd = os.open(generation.reader_lock, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        fd = None  # never finished being created: no reader can hold it
    except OSError:
        return False
    try:
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
        trash = layout.generations / f".trash-{generation.name}-{os.getpid()}"
        try:
            os.rename(generation.root, trash)
        except OSError:
            return False
    finally:
        if fd is not None:
            os.close(fd)
    shutil.rmtree(trash, ignore_errors=True)
    return True


def remove_legacy_files(layout: IndexLayout) -> None:
    """The files of an index from before generations, once a generation replaced it."""
    for name in ("catalog.sqlite", "catalog.sqlite-wal", "catalog.sqlite-shm", "vectors.faiss"):
        (layout.root / name).unlink(missing_ok=True)
    for name in ("graph.json", "index.state.json"):
        (layout.root / name).unlink(missing_ok=True)
    shutil.rmtree(layout.root / "keywords", ignore_errors=True)


def tree_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
