"""The writer's hold on one generation: its catalog, its derived indexes, and the
order of a commit (catalog transaction first, then every derived index, then the
manifest, then the state file last, whose change readers take as the signal)."""

from __future__ import annotations

import os
import shutil
import sqlite3
from datetime import UTC, datetime
from typing import Any

from vaultsearch.store.catalog import Catalog, open_catalog_for_reading
from vaultsearch.store.derived import DERIVED, Batch, DerivedIndex, DerivedSettings
from vaultsearch.store.generations import create_generation
from vaultsearch.store.layout import Generation, IndexLayout
from vaultsearch.store.manifest import write_manifest, write_state
from vaultsearch.store.segments import link_segments


class GenerationWriter:
    def __init__(self, generation: Generation, settings: DerivedSettings, fresh: bool) -> None:
        self.generation = generation
        self.catalog = Catalog(generation.catalog)
        try:
            self.parts: list[DerivedIndex] = [cls(generation, settings) for cls in DERIVED]
            for part in self.parts:
                part.open(fresh)
        except BaseException:
            self.catalog.close()
            raise

    def level(self) -> list[str]:
        """Bring every derived index level with the catalog (after a crash)."""
        return [
            f"{part.name}: brought level with the catalog"
            for part in self.parts
            if part.level_with(self.catalog)
        ]

    def apply(self, batch: Batch) -> None:
        for part in self.parts:
            part.apply(batch)

    def commit(self, manifest: dict[str, Any], last_run: dict[str, Any]) -> dict[str, Any]:
        counts: dict[str, Any] = {}
        for part in self.parts:
            counts.update(part.commit(self.catalog))
        write_manifest(self.generation.root, manifest)
        state = {
            "generation": self.catalog.generation,
            "notes": self.catalog.count("notes"),
            "chunks": self.catalog.count("chunks"),
            **counts,
            "last_indexed": datetime.now(UTC).isoformat(timespec="seconds"),
            "last_run": last_run,
        }
        write_state(self.generation.root, state)
        return state

    def close(self) -> None:
        self.catalog.close()


def copy_catalog(source: Generation, target: Generation) -> None:
    """SQLite's online backup: a consistent copy even of a catalog in WAL mode."""
    src = sqlite3.connect(f"{source.catalog.resolve().as_uri()}?mode=ro", uri=True)
    try:
        dst = sqlite3.connect(target.catalog)
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()


def clone_generation(layout: IndexLayout, source: Generation) -> Generation:
    """A new generation holding what ``source`` holds, for a run to change: the catalog
    by SQLite backup, Tantivy's and the vectors' segment files (never rewritten) by
    hard link."""
    target = create_generation(layout)
    copy_catalog(source, target)
    link_segments(source.vectors, target.vectors)
    link_segments(source.sentences, target.sentences)
    for path in (source.graph, source.manifest, source.state):
        if path.is_file():
            shutil.copyfile(path, target.root / path.name)
    if source.keywords.is_dir():
        target.keywords.mkdir()
        for f in source.keywords.iterdir():
            if not f.is_file() or f.name.endswith(".lock"):
                continue
            if f.name.endswith(".json"):  # rewritten by every commit
                shutil.copyfile(f, target.keywords / f.name)
                continue
            try:
                os.link(f, target.keywords / f.name)
            except OSError:
                shutil.copyfile(f, target.keywords / f.name)
    return target


def catalog_problems(generation: Generation) -> list[str]:
    """What is wrong with a generation's catalog file, read-only; empty when sound."""
    if not generation.catalog.is_file():
        return ["catalog: missing"]
    try:
        catalog = open_catalog_for_reading(generation.catalog)
    except sqlite3.Error as exc:
        return [f"catalog: unreadable ({exc})"]
    try:
        problems = catalog.integrity_problems()
        if not problems:
            catalog.generation  # noqa: B018 - the meta table must be readable too
            catalog.count("notes")
        return problems
    except sqlite3.Error as exc:
        return [f"catalog: unreadable ({exc})"]
    finally:
        catalog.close()
