"""The read side of a run: what the vault and its sources hold on disk, and what a
catalog holds of them, for the whole vault, one source or a few paths. Reads only; the
IndexManager turns what this finds into a change plan and writes it."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TypeAlias

from vaultsearch.config import Config
from vaultsearch.fault import FailureRow
from vaultsearch.indexing.changes import ChangePlan, plan_changes
from vaultsearch.indexing.scan import FileInfo, IgnoreRules, scan_paths
from vaultsearch.indexing.sources import SourceScan, SourceSet
from vaultsearch.parsers import ParserRegistry
from vaultsearch.sourceconfig import VAULT_SOURCE
from vaultsearch.store.catalog import Catalog

Look: TypeAlias = tuple[
    dict[str, FileInfo],
    dict[str, tuple[int, str, int, int]],
    dict[str, FailureRow],
    SourceScan,
]
"""Files on disk, the catalog's notes (id, hash, mtime, size) and recorded failures
(``FailureRow``), each by note id, and the scan that found the files."""


class VaultFiles:
    def __init__(self, vault: Path, index_dir: Path, config: Config) -> None:
        self.vault = vault
        self.index_dir = index_dir
        self.config = config
        self.parsers = ParserRegistry(config.parsers)
        self.rules = IgnoreRules(vault, config.excluded(), index_dir)
        self.sources = SourceSet(vault, index_dir, config)

    def use_sources(self, config: Config) -> None:
        self.config = config
        self.sources = SourceSet(self.vault, self.index_dir, config)

    def scan(self, only: str | None = None, sync: bool = False) -> SourceScan:
        self.reload_rules()
        return self.sources.scan(self.rules, only, sync)

    def reload_rules(self) -> None:
        """A long-lived writer must see an edited .gitignore / .vaultsearchignore."""
        self.rules = IgnoreRules(self.vault, self.config.excluded(), self.index_dir)

    def plan(self, catalog: Catalog) -> ChangePlan:
        """What the vault's files would change in this catalog (read-only questions)."""
        scanned, known, failures, _ = self.look(catalog, None)
        return plan_changes(scanned, known, failures, self.sources.read_limit)

    def look(
        self,
        catalog: Catalog,
        paths: Collection[str] | None,
        source: str | None = None,
        sync: bool = False,
    ) -> Look:
        """Files on disk, catalog notes and recorded failures: of the whole vault and its
        sources, of one source, or of just ``paths`` (in the vault) and what lies under
        them, so that nothing else looks deleted. The notes of a source that could not
        be read are left out on both sides, so they stay as they are."""
        if paths is None:
            scan = self.scan(source, sync)
            known, failures = catalog.file_states(), catalog.failures()
            of_source = catalog.note_sources()

            def keep(path: str) -> bool:
                name = of_source.get(path)
                if name is None:
                    name = self.sources.split(path)[0]
                    if not name and path.partition(":")[0] == source:
                        name = source  # a failure of a source no longer configured
                if name in scan.unavailable:
                    return False
                return source is None or name == ("" if source == VAULT_SOURCE else source)

            known = {p: v for p, v in known.items() if keep(p)}
            failures = {p: v for p, v in failures.items() if keep(p)}
            return scan.files, known, failures, scan
        return self.look_at(catalog, paths, sync)

    def look_at(self, catalog: Catalog, paths: Collection[str], sync: bool) -> Look:
        """``look`` for named paths: vault paths, or note ids of a source (``lib:``
        is all of it, ``lib:src/`` a folder in it). Only those paths of the vault and of a
        folder source are looked at; a git source is fetched, listed whole and cut."""
        self.reload_rules()
        parts = [self.sources.split(p) for p in paths]
        vault_paths = [rel for src, rel in parts if not src]
        names = sorted({src for src, _ in parts if src})
        scan = SourceScan(scan_paths(self.vault, self.rules, self.parsers, vault_paths))
        prefixes = tuple(p if p.endswith(":") else p.rstrip("/") + "/" for p in paths)
        wanted = set(paths)

        def inside(path: str) -> bool:
            return path in wanted or path.startswith(prefixes)

        for name in names:
            inner = [rel for src, rel in parts if src == name]
            limited = self.sources.by_name[name].type == "folder" and all(inner)
            part = self.sources.scan(self.rules, name, sync, inner if limited else None)
            scan.files.update((k, v) for k, v in part.files.items() if inside(k))
            scan.unavailable.update(part.unavailable)
            scan.stale.update(part.stale)
            scan.commits.update(part.commits)
            if f"{name}:" in wanted:
                scan.read |= part.read

        def keep(path: str) -> bool:
            return inside(path) and self.sources.split(path)[0] not in scan.unavailable

        held = catalog.file_states_under(paths, prefixes)
        known = {p: v for p, v in held.items() if keep(p)}
        failures = {p: v for p, v in catalog.failures().items() if keep(p)}
        return scan.files, known, failures, scan
