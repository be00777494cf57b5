"""The writer's hold on one generation: its catalog, its derived indexes, and the
order of a commit: every derived index, the manifest and the state file written and
synced, then the catalog's transaction committed naming the generation, then (by
the caller, ``generations.publish``) the pointer switched. See
``store/generations.py`` for why readers never see a mix."""

from __future__ import annotations

import shutil
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vaultsearch.store.atomic import fsync_dir, fsync_tree
from vaultsearch.store.catalog import Catalog, open_catalog_for_reading
from vaultsearch.store.derived import DERIVED, Batch, DerivedIndex, DerivedSettings
from vaultsearch.store.derived.vectors import Supply
from vaultsearch.store.generations import create_generation
from vaultsearch.store.layout import Generation, IndexLayout
from vaultsearch.store.manifest import MANIFEST_DIGEST, write_manifest, write_state

MAX_CHANGES = 4096
"""More changed paths than this are not listed in the state file (a reader loads such a
generation whole, which then costs about what following the list would)."""


class GenerationWriter:
    def __init__(
        self,
        generation: Generation,
        settings: DerivedSettings,
        fresh: bool,
        shared: bool,
        cache: Any = None,
        donor: Generation | None = None,
    ) -> None:
        """``shared``: the catalog is one readers use, so the whole run is one
        transaction; a new catalog file no reader sees commits batch by batch.
        ``cache`` (the per-user embedding cache) and ``donor`` (the generation a repair
        rebuilds, on the same catalog) are where the vector indexes find rows the run did
        not embed: they hold the only copy of each vector."""
        self.settings, self.cache = settings, cache
        self.generation = generation
        self.catalog = Catalog(generation.catalog)
        try:
            if shared:
                self.catalog.begin_run()
            # the commit this run starts from: a reader at it follows ``changed``
            self.since = self.catalog.generation if shared and not fresh else None
            self.changed: set[str] = set()
            self.parts: list[DerivedIndex] = [cls(generation, settings) for cls in DERIVED]
            for part in self.parts:
                part.open(fresh)
                attach_supply(part, cache, donor)
        except BaseException:
            self.catalog.close()
            raise

    def level(self) -> list[str]:
        """Bring every derived index level with the catalog (after a crash), and the
        catalog's kept counts level with its rows (the only full count a writer makes)."""
        lines = ["catalog: its kept counts recounted"] if self.catalog.recount() else []
        return lines + [
            f"{part.name}: brought level with the catalog"
            for part in self.parts
            if part.level_with(self.catalog)
        ]

    def apply(self, batch: Batch) -> None:
        self.changed.update(batch.changed_paths)
        for part in self.parts:
            part.apply(batch)

    def commit(self, manifest: dict[str, Any], last_run: dict[str, Any]) -> dict[str, Any]:
        counts: dict[str, Any] = {}
        for part in self.parts:
            counts.update(part.commit(self.catalog))
        digest = write_manifest(self.generation.root, manifest)
        state = {
            MANIFEST_DIGEST: digest,
            "generation": self.catalog.generation,
            "notes": self.catalog.count("notes"),
            "chunks": self.catalog.count("chunks"),
            **counts,
            "last_indexed": datetime.now(UTC).isoformat(timespec="seconds"),
            "last_run": last_run,
            "changes": self._changes(),
        }
        write_state(self.generation.root, state)
        fsync_tree(self.generation.root)
        fsync_dir(self.generation.root.parent)
        self.catalog.finish(self.generation.name)
        return state

    def _changes(self) -> dict[str, Any] | None:
        """The notes this run changed since the commit it started from, so a reader of
        that commit reloads those and keeps the rest (``search/refresh.py``); None when a
        reader must load the generation whole (a new catalog, rebuilt indexes, a long
        list). Every note row and chunk row a run writes goes through a ``Batch``."""
        if self.since is None or len(self.changed) > MAX_CHANGES:
            return None
        return {"since": self.since, "paths": sorted(self.changed)}

    def close(self) -> None:
        self.catalog.close()

    def follow(self, layout: IndexLayout) -> None:
        """Go on writing in a clone of the generation just committed (and published by
        the caller): a first build publishes as it goes, each step an update of the last.
        The derived indexes' flags (``SentencePart.defer``) carry over."""
        defer = [getattr(part, "defer", None) for part in self.parts]
        self.close()
        following = clone_generation(layout, self.generation)
        GenerationWriter.__init__(self, following, self.settings, False, True, self.cache)
        for part, flag in zip(self.parts, defer, strict=True):
            if flag is not None:
                setattr(part, "defer", flag)  # noqa: B010 - not part of the contract


def attach_supply(part: DerivedIndex, cache: Any, donor: Generation | None = None) -> None:
    """Where a vector index finds the rows the run's own embeddings lack (its only copy
    of a vector is its own): the per-user cache and the generation being rebuilt."""
    if isinstance(supply := getattr(part, "supply", None), Supply):
        supply.cache, supply.donor = cache, donor


def copy_catalog(source: Path, target: Path) -> None:
    """SQLite's online backup: a consistent copy even of a catalog in WAL mode."""
    target.parent.mkdir(parents=True, exist_ok=True)
    src = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
    try:
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()


def generation_sharing_catalog(layout: IndexLayout, source: Generation) -> Generation:
    """A new, empty generation on ``source``'s catalog; a catalog of an older index,
    inside its generation, is first copied into ``catalogs/`` (once)."""
    if source.shares_catalog:
        return create_generation(layout, source.catalog)
    target = create_generation(layout, layout.next_catalog())
    copy_catalog(source.catalog, target.catalog)
    return target


def clone_generation(layout: IndexLayout, source: Generation) -> Generation:
    """A new generation holding what ``source`` holds, for a run to change: the same
    shared catalog (copied once into ``catalogs/`` when ``source`` is of an older index
    with its own), Tantivy's and the vectors' segment files (never rewritten) by hard
    link."""
    target = generation_sharing_catalog(layout, source)
    for cls in DERIVED:
        cls.carry(source, target)
    for path in (source.manifest, source.state):
        if path.is_file():
            shutil.copyfile(path, target.root / path.name)
    return target


def catalog_problems(generation: Generation, thorough: bool = True) -> list[str]:
    """What is wrong with a generation's catalog file, read-only; empty when sound.
    ``thorough`` (``check``): SQLite's quick_check, which reads every page, and every
    row read as the index reads it (a flipped byte inside a row passes quick_check);
    else the header against the file's size and a read of a few pages (every update,
    so its cost does not grow with a catalog that many generations share)."""
    if not generation.catalog.is_file():
        return ["catalog: missing"]
    if not thorough and (problems := _header_problems(generation.catalog)):
        return problems
    try:
        catalog = open_catalog_for_reading(generation.catalog)
    except (sqlite3.Error, ValueError) as exc:  # SQLite's message quoting damaged bytes
        return [f"catalog: unreadable ({type(exc).__name__}: {str(exc)[:120]})"]
    try:
        problems = catalog.integrity_problems() if thorough else []
        if not problems:
            for table in ("notes", "chunks", "links"):
                catalog.db.execute(f"SELECT MAX(rowid) FROM {table}").fetchone()
            catalog.generation  # noqa: B018 - the meta table must be readable too
            catalog.count("notes")
            if thorough:
                problems = catalog.content_problems()
    except (sqlite3.Error, ValueError) as exc:
        return [f"catalog: unreadable ({type(exc).__name__}: {str(exc)[:120]})"]
    finally:
        catalog.close()
    return problems


def read_damage(exc: BaseException) -> list[str]:
    """SQLite's own word that the catalog is damaged, met reading rows: a file whose
    indexes disagree with their tables (a WAL lost after checkpoints that folded in only
    part of it) passes ``quick_check`` and is called malformed only when a read goes
    through such an index. Empty for any other error (a busy or missing file)."""
    if isinstance(exc, sqlite3.DatabaseError) and (
        getattr(exc, "sqlite_errorcode", 0) & 0xFF
        in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
    ):
        return [f"catalog: unreadable ({type(exc).__name__}: {str(exc)[:120]})"]
    return []


def _header_problems(path: Path, looks: int = 5) -> list[str]:
    """A truncated or overwritten file shows in SQLite's 100-byte header: the page
    count it records (kept by every checkpoint) must fit in the file.

    A checkpoint in another process writes page 1 before the pages that extend the
    file, so one look can see a header ahead of the size: only a shortfall that lasts
    over a few looks is damage (a real truncation stays), else an edit would rebuild."""
    wal = path.with_name(path.name + "-wal")
    if wal.is_file() and wal.stat().st_size > 0:
        # checkpoints that a reader's older snapshot cut short leave page 1 of a later
        # commit in the file, and the pages it counts in the WAL: no damage, and every
        # edit under such a reader rebuilt the catalog; a read meets real damage
        return []
    problem: list[str] = []
    for look in range(looks):
        if look:
            time.sleep(0.05)
        try:
            with path.open("rb") as fh:
                head = fh.read(100)
            size = path.stat().st_size
        except OSError as exc:
            return [f"catalog: unreadable ({exc})"]
        if len(head) < 100 or not head.startswith(b"SQLite format 3\0"):
            return ["catalog: not an SQLite file"]
        page = int.from_bytes(head[16:18], "big")
        page = 65536 if page == 1 else page
        pages = int.from_bytes(head[28:32], "big")
        if size >= pages * page:
            return []
        problem = [f"catalog: the file has {size} bytes, its header counts {pages * page}"]
    return problem
