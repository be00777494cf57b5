"""The generation protocol: build beside, switch in one step, delete what no one holds.

A writer fills a new generation folder, syncs it, and replaces the pointer file
atomically; a kill or a full disk before that leaves the pointer, and so every
reader, on the old generation. A reader holds a shared flock on the generation
it reads (opened read-only, so it works on a read-only mount and for another
user); the writer removes an old generation only when it gets that lock
exclusively, and renames it away first, so a reader that locked too late sees
the folder gone and reads the pointer again.

The catalog is not part of a generation's folder: generations share one catalog
file (``catalogs/cNNNNNN.sqlite``, named in their ``CATALOG`` file), and a run
changes it in one transaction. The publish order is: the new generation's derived
files, manifest and state written and synced; then the catalog transaction
committed, its last row naming the new generation (meta ``published``); then the
pointer replaced. A reader holds the pointer's generation, then opens one read
transaction on the catalog (``hold_published``): when the catalog names that
generation, both agree; when it names a newer one, the writer is between its
commit and the pointer switch (or was killed there), and the reader takes the
newer, complete, generation instead. The next writer first finishes such a publish
(``finish_publish``). A rebuild from the files fills a new catalog file, which no
reader sees until its generation is published; a catalog no generation names is
removed with the last generation that named it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import weakref
from pathlib import Path

from vaultsearch.errors import IndexMissingError
from vaultsearch.store.atomic import atomic_write_bytes, fsync_dir, fsync_tree
from vaultsearch.store.catalog import Catalog, open_catalog_for_reading
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
        hold = hold_generation(generation)
        if hold is not None:
            return hold
    return None


def newest_intact(layout: IndexLayout) -> Generation | None:
    """The newest generation a writer finished (its state file, the last of its files,
    whole) and whose catalog commit was made: what a lost or damaged ``CURRENT`` named,
    or the run after it whose pointer switch was cut. ``check --repair`` starts from
    it, and a sweep while ``CURRENT`` cannot be read keeps it instead of deleting every
    generation."""
    for generation in reversed(layout.all_generations()):
        state = read_state(generation.root)
        if state is None or state.get("checksum") != state_checksum(state):
            continue
        if not _ahead_of_its_catalog(layout, generation):
            return generation
    return None


def _ahead_of_its_catalog(layout: IndexLayout, generation: Generation) -> bool:
    """A writer killed after the state file but before the catalog commit: the shared
    catalog still names an older generation, whose rows it holds. A catalog that cannot
    be read says nothing (the repair rebuilds it)."""
    published = _published_in_catalog(generation)
    named = layout.generation(published).number if published else 0
    return 0 < named < generation.number


def _published_in_catalog(generation: Generation) -> str | None:
    """The generation ``generation``'s shared catalog names as published; None when it
    shares none or it cannot be read (the writer's own check finds a damaged one)."""
    if not generation.shares_catalog or not generation.catalog.is_file():
        return None
    try:
        catalog = open_catalog_for_reading(generation.catalog)
        try:
            return catalog.published
        finally:
            catalog.close()
    except Exception:
        return None


def hold_generation(generation: Generation) -> ReaderHold | None:
    """``generation`` locked for reading; None when it was swept meanwhile."""
    try:
        fd = os.open(generation.reader_lock, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None  # swept between reading the pointer and opening: read it again
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


def hold_published(layout: IndexLayout) -> tuple[ReaderHold, Catalog] | None:
    """The published generation, locked, and its catalog in one read transaction
    that sees exactly that generation's rows (see the module docstring); the caller
    closes both. None when no index was published."""
    for _ in range(_OPEN_TRIES):
        hold = hold_current(layout)
        if hold is None:
            return None
        try:
            catalog = open_catalog_for_reading(hold.generation.catalog)
        except BaseException:
            hold.release()
            raise
        try:
            catalog.db.execute("BEGIN")
            published = catalog.published
        except BaseException:
            catalog.close()
            hold.release()
            raise
        if published is None or published == hold.generation.name:
            return hold, catalog
        ahead = _newer_sharing(layout, hold.generation, published)
        if ahead is None:
            return hold, catalog  # a catalog behind its pointer: the state check tells
        newer = hold_generation(ahead)
        hold.release()
        if newer is not None:
            return newer, catalog
        catalog.close()
    return None


def require_published(layout: IndexLayout) -> tuple[ReaderHold, Catalog]:
    """``hold_published`` for a reader that cannot answer without an index."""
    held = hold_published(layout)
    if held is None:
        raise IndexMissingError(
            f"No index has been published in {layout.root}.", fix="vaultsearch index"
        )
    return held


def _newer_sharing(layout: IndexLayout, held: Generation, name: str) -> Generation | None:
    """The generation ``name`` when it is newer than ``held``, complete (its state file
    is written before the catalog commit that names it) and on the same catalog."""
    generation = layout.generation(name)
    if generation.number <= held.number or not generation.state.is_file():
        return None
    return generation if generation.catalog == held.catalog else None


def finish_publish(layout: IndexLayout) -> bool:
    """A writer killed between its catalog commit and the pointer switch left the
    catalog naming a complete newer generation: switch the pointer to it. Only the
    writer-lock holder may call it, before ``sweep``."""
    current = layout.current()
    if current is None:
        return False
    published = _published_in_catalog(current)
    ahead = _newer_sharing(layout, current, published) if published else None
    if ahead is None:
        return False
    publish(layout, ahead)
    return True


def create_generation(layout: IndexLayout, catalog: Path) -> Generation:
    """A new, empty generation folder naming ``catalog`` (shared or about to be made)."""
    generation = layout.next_generation()
    shutil.rmtree(generation.root, ignore_errors=True)
    generation.root.mkdir(parents=True)
    fd = os.open(generation.reader_lock, os.O_WRONLY | os.O_CREAT, 0o666)
    os.close(fd)
    generation.catalog_ref.write_text(catalog.name + "\n", encoding="utf-8")
    return generation


def publish(layout: IndexLayout, generation: Generation, synced: bool = False) -> None:
    """Make ``generation`` the one readers open: everything in it reaches the disk
    first, then the pointer is replaced in one rename. ``synced``: its writer's commit
    synced its tree and its folder's entry before the catalog commit that names it
    (``GenerationWriter.commit``) and nothing was written into it since, so it is not
    walked again (a stat of every file of the index at every edit)."""
    if not synced:
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
    named = {g.catalog for g in layout.all_generations()}
    for catalog in layout.catalog_files():
        if catalog not in named:
            for suffix in ("", "-wal", "-shm", "-journal"):
                catalog.with_name(catalog.name + suffix).unlink(missing_ok=True)
            removed.append(catalog.name)
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
