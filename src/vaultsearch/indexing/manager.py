"""The IndexManager: parse every changed note and fan it out to the store.

No run writes the generation readers use. An update fills a new generation from
the live one (Tantivy's segments hard-linked) and changes the shared catalog in one
transaction that readers see only once the generation is published; a rebuild
(``--full``, a changed manifest, a damaged catalog, ``check --repair``) fills an empty
generation and a new catalog file. Either is published in one step when complete, so
a crash or a full disk leaves the previous generation served, and no reader ever sees
part of a run (``store/generations.py``).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vaultsearch.config import Config
from vaultsearch.embedding import Embedder, text_hash
from vaultsearch.errors import (
    FileUnreadableError,
    IndexBusyError,
    IndexCorruptError,
    VaultsearchError,
)
from vaultsearch.indexing.changes import ChangePlan, FileText, describe_plan, plan_changes
from vaultsearch.indexing.chunker import chunk_capped
from vaultsearch.indexing.linking import resolve_links
from vaultsearch.indexing.parsebox import ParseBox
from vaultsearch.indexing.progress import Progress, SilentProgress, show_counts, working_on
from vaultsearch.indexing.runrecord import RecordedProgress
from vaultsearch.indexing.scan import FileInfo, IgnoreRules, scan_paths
from vaultsearch.indexing.sources import SourceScan, SourceSet, now_iso
from vaultsearch.models import Chunk, ParsedNote
from vaultsearch.parsers import ParserRegistry
from vaultsearch.parsers.sentences import unit_texts
from vaultsearch.sourceconfig import VAULT_SOURCE
from vaultsearch.store.atomic import atomic_write_json, temp_target
from vaultsearch.store.catalog import Catalog, checkpoint, open_catalog_for_reading
from vaultsearch.store.counts import IndexCounts, current_counts
from vaultsearch.store.derived import DERIVED, Batch, DerivedSettings
from vaultsearch.store.derived.sentences import SentencePart
from vaultsearch.store.derived.vectors import MissingVectors, VectorPart
from vaultsearch.store.embedcache import EmbeddingCache, default_cache_dir
from vaultsearch.store.generations import (
    create_generation,
    finish_publish,
    newest_intact,
    publish,
    remove_legacy_files,
    sweep,
)
from vaultsearch.store.layout import Generation, IndexLayout
from vaultsearch.store.lock import WriterLock
from vaultsearch.store.manifest import (
    expected_manifest,
    manifest_differences,
    read_manifest,
    read_state,
    rebuild_scope,
    recorded_dimension,
)
from vaultsearch.store.runstate import RUN_NAME
from vaultsearch.store.salvage import SalvagedEmbeddings
from vaultsearch.store.vectors import normalize
from vaultsearch.store.verify import CheckReport, settings_of, verify_store
from vaultsearch.store.writer import (
    GenerationWriter,
    catalog_problems,
    clone_generation,
    generation_sharing_catalog,
)

SOURCES_STATE = "sources.json"
BATCH_FILES = 256
EMBED_BATCH = 128
MB = 1024 * 1024


@dataclass
class IndexSummary:
    added: int = 0
    updated: int = 0
    moved: int = 0
    removed: int = 0
    unchanged: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    chunks_embedded: int = 0
    sentences_embedded: int = 0
    chunks_written: int = 0
    seconds: float = 0.0
    repaired: list[str] = field(default_factory=list)
    rebuild_reasons: list[str] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    """Sources not read this run, and why: their notes stay as they were indexed."""
    stale: dict[str, str] = field(default_factory=dict)
    """Git sources that could not be fetched, and why: read from their last fetched commit."""
    left_out: dict[str, str] = field(default_factory=dict)
    """Sources a rebuild from the files could not read, and why: out of the index until
    a run can read them (an update keeps such a source; a rebuild has nothing to keep)."""
    cancelled: bool = False
    counts: IndexCounts | None = None
    """What the published index holds after the run (``store/counts.py``)."""

    def source_lines(self) -> list[str]:
        """One line per source this run could not read or fetch, worded by what happened
        to its notes: every command that indexes prints these same lines."""
        return [
            *(f"source {n} not read (kept as indexed): {r}" for n, r in self.unavailable.items()),
            *(f"source {n} not fetched: {r}" for n, r in self.stale.items()),
            *(
                f"source {n} not read (left out of this rebuild): {r}"
                for n, r in self.left_out.items()
            ),
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "updated": self.updated,
            "moved": self.moved,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "failed": dict(sorted(self.failed.items())),
            "chunks_embedded": self.chunks_embedded,
            "sentences_embedded": self.sentences_embedded,
            "chunks_written": self.chunks_written,
            "chunks_per_second": round(self.chunks_written / self.seconds, 1)
            if self.seconds
            else 0.0,
            "seconds": round(self.seconds, 3),
            "repaired": self.repaired,
            "rebuild_reasons": self.rebuild_reasons,
            "unavailable_sources": dict(sorted(self.unavailable.items())),
            "stale_sources": dict(sorted(self.stale.items())),
            "left_out_sources": dict(sorted(self.left_out.items())),
            "cancelled": self.cancelled,
            "counts": self.counts.to_dict() if self.counts is not None else None,
        }


@dataclass
class IndexCheck:
    status: str
    """``current``, ``update`` or ``rebuild``."""
    reasons: list[str] = field(default_factory=list)
    manifest_changes: list[str] = field(default_factory=list)
    changed_files: int = 0

    @property
    def exit_code(self) -> int:
        return 0 if self.status == "current" else 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reasons": self.reasons,
            "manifest_changes": self.manifest_changes,
            "changed_files": self.changed_files,
        }


class _Cancelled(Exception):
    """Raised between two model calls when a cancel was asked for."""


@dataclass(slots=True)
class _Prepared:
    file: FileText
    note: ParsedNote
    chunks: list[Chunk]
    hashes: list[str]
    date: float


class IndexManager:
    def __init__(
        self,
        vault: Path,
        index_dir: Path,
        config: Config,
        embedder: Embedder | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.vault = vault
        self.config = config
        self.layout = IndexLayout(index_dir)
        self.parsers = ParserRegistry(config.parsers)
        self.rules = IgnoreRules(vault, config.excluded(), index_dir)
        self.sources = SourceSet(vault, index_dir, config)
        self._last_scan: SourceScan | None = None
        self.embedder = embedder or Embedder(config.embedding)
        self.progress = progress or SilentProgress()
        self.lock = WriterLock(self.layout.lock)
        self.cancel_requested = threading.Event()
        """Set by another thread to stop the run after the model call in progress; what
        is committed by then stays, and the files not reached stay pending."""
        self.cache = EmbeddingCache(
            default_cache_dir(config.embedding.cache_dir), config.embedding.cache_size_mb * MB
        )
        self._box: ParseBox | None = None
        """The child process that parses files, kept from run to run (``close``)."""
        self._salvage: SalvagedEmbeddings | None = None
        self._from_cache = 0

    def use_sources(self, config: Config) -> None:
        """Another list of named sources (added or removed), keeping this manager's
        writer lock: a source is removed under the lock taken before its config went."""
        self.config = config
        self.sources = SourceSet(self.vault, self.layout.root, config)

    # --- read-only questions -------------------------------------------------
    def scan(self) -> dict[str, FileInfo]:
        """The files of the vault and of every named source (as their note ids)."""
        return self._scan().files

    def _scan(self, only: str | None = None, sync: bool = False) -> SourceScan:
        self._reload_rules()
        return self.sources.scan(self.rules, only, sync)

    def _reload_rules(self) -> None:
        """A long-lived writer must see an edited .gitignore / .vaultsearchignore."""
        self.rules = IgnoreRules(self.vault, self.config.excluded(), self.layout.root)

    def rebuild_check(self) -> IndexCheck | None:
        """Why the next run must rebuild (no index, another format, changed settings,
        a damaged catalog), or None; reads no file of the vault."""
        current = self.layout.current()
        if current is None or not current.catalog.is_file():
            if self.layout.legacy_catalog.is_file():
                return IndexCheck(
                    "rebuild", ["an index of an older format: rebuilt reusing its embeddings"]
                )
            return IndexCheck("rebuild", ["no index has been built yet"])
        old = read_manifest(current.root)
        expected = expected_manifest(self.config, recorded_dimension(old, self.config))
        changes = manifest_differences(old, expected)
        if changes:
            return IndexCheck("rebuild", [f"manifest field changed: {c}" for c in changes], changes)
        if damage := catalog_problems(current):
            return IndexCheck("rebuild", damage)
        return None

    def check(self) -> IndexCheck:
        """Is the index current? Never loads the model and never writes."""
        if (rebuild := self.rebuild_check()) is not None:
            return rebuild
        current = self.layout.current()
        assert current is not None
        catalog = open_catalog_for_reading(current.catalog)
        try:
            scanned, known, failures, scan = self._look(catalog, None)
            plan = plan_changes(scanned, known, failures, self.sources.read_limit)
            state = read_state(current.root) or {}
            behind = state.get("generation") != catalog.generation
        finally:
            catalog.close()
        reasons = describe_plan(plan)
        reasons += [f"source {name} has not been cloned yet" for name in sorted(scan.never_read)]
        if behind:
            reasons.append("derived indexes are behind the catalog (an interrupted run)")
        n = len(plan.changed) + len(plan.moved) + len(plan.deleted) + len(plan.failed)
        return IndexCheck("update" if reasons else "current", reasons, [], n)

    def verify(self) -> CheckReport:
        """``check``: every file of the live generation, then the vault's files against
        the catalog. Reads only, so it works on a read-only index."""
        report = verify_store(self.layout, self.config)
        current = self.layout.current()
        if not report.ok or current is None:
            return report
        catalog = open_catalog_for_reading(current.catalog)
        try:
            plan = self._plan_against(catalog)
        finally:
            catalog.close()
        report.problems += [f"files: {d} since the last index run" for d in describe_plan(plan)]
        return report

    def _plan_against(self, catalog: Catalog) -> ChangePlan:
        """What the vault's files would change in this catalog (read-only questions)."""
        scanned, known, failures, _ = self._look(catalog, None)
        return plan_changes(scanned, known, failures, self.sources.read_limit)

    # --- writing --------------------------------------------------------------
    @contextmanager
    def _writing(self, fix: str) -> Iterator[None]:
        """The writer lock (kept if the caller already held it), and a swept index
        folder: old generations no reader holds, and what killed runs left."""
        acquired = not self.lock.held
        if acquired and not self.lock.acquire():
            raise IndexBusyError(
                f"Another vaultsearch process is writing the index at {self.layout.root}.",
                fix=fix,
            )
        try:
            self._remove_stale_temps()
            finish_publish(self.layout)
            sweep(self.layout)
            yield
        finally:
            if acquired:
                self.lock.release()

    def _remove_stale_temps(self) -> None:
        """A writer killed inside an atomic write leaves its temp file behind (FAISS's
        is as big as the index). The lock holder sweeps the temps of what only it
        writes: everything in a generation, and its own files in the index folder
        (``run.json`` too: a run records itself only once it holds the lock). A
        running server writes ``manager.json`` there without the lock; sweeping its
        temp mid-write made that server crash."""
        owned = {self.layout.pointer.name, self.layout.manifest.name, SOURCES_STATE, RUN_NAME}
        for tmp in self.layout.root.glob(".*.tmp"):
            if temp_target(tmp.name) in owned:
                tmp.unlink(missing_ok=True)
        current = self.layout.current()
        if current is not None:
            for tmp in current.root.glob(".*.tmp"):
                tmp.unlink(missing_ok=True)

    def _settings(self) -> DerivedSettings:
        return DerivedSettings(
            self.embedder.cache_key,
            self.embedder.dimension,
            self.config.keyword.stemming,
            tuple(self.config.keyword.frontmatter_fields),
            self.config.embedding.sentences,
            vector_index=self.config.index.vector_index,
            ann_threshold=self.config.index.ann_threshold,
        )

    def update(
        self,
        full: bool = False,
        progress: Progress | None = None,
        paths: Collection[str] | None = None,
        source: str | None = None,
        reason: str | None = None,
    ) -> IndexSummary:
        """``paths`` (vault-relative files or folders, e.g. from the watcher) limits the
        look for changes to them; a move is recognised when both of its sides are given.
        ``source`` limits it to one source (``vault`` for the vault's own notes); a name
        no longer configured removes what the index holds of it. ``reason`` (who asked,
        or what changed) is recorded with the run for every process to see."""
        if progress is not None:
            self.progress = progress
        fix = "wait for it to finish, or stop the other 'vaultsearch index/watch/mcp'"
        with self._writing(fix):
            display = self.progress
            kind = "rebuild" if full else "update"
            recorded = self.progress = RecordedProgress(display, self.layout.root, kind, reason)
            try:
                summary = self._update(full, paths, source)
                self._record_sources(summary)
                summary.counts = current_counts(self.layout)
                if summary.counts is not None:
                    show_counts(self.progress, summary.counts)
            except BaseException as exc:
                recorded.end(None, str(exc) or type(exc).__name__)
                raise
            finally:
                self.progress = display
            recorded.end(summary)
            return summary

    def repair(self) -> IndexSummary:
        """A new generation whose derived indexes are rebuilt from the catalog (cached
        vectors only), or, when the catalog itself is damaged, from the vault's files
        with stored embeddings: what ``check --repair`` runs."""
        summary = IndexSummary()
        with self._writing("wait for it to finish; the writer repairs the index itself"):
            t0 = time.perf_counter()
            current = self.layout.current()
            if current is not None and not current.root.is_dir():
                current = None  # CURRENT names a generation that is not there
            if current is None and (current := newest_intact(self.layout)) is not None:
                summary.repaired.append(
                    f"CURRENT: missing or unreadable; started from generation {current.name}"
                )
            manifest = expected_manifest(self.config, self.embedder.dimension)
            if current is None or catalog_problems(current):
                summary.repaired.append("catalog: rebuilt from the vault's files")
                self._rebuild_from_files(current, manifest, summary)
                summary.repaired += self._reuse_lines(summary)
            else:
                try:
                    self._rebuild_from_catalog(current, manifest, summary)
                    summary.repaired.append("derived indexes: rebuilt from the catalog")
                except MissingVectors as exc:
                    summary.repaired.append(f"{exc}: rebuilt from the vault's files")
                    self._rebuild_from_files(current, manifest, summary)
                    summary.repaired += self._reuse_lines(summary)
            summary.seconds = time.perf_counter() - t0
            return summary

    def _update(
        self, full: bool, paths: Collection[str] | None = None, source: str | None = None
    ) -> IndexSummary:
        t0 = time.perf_counter()
        summary = IndexSummary()
        manifest = expected_manifest(self.config, self.embedder.dimension)
        current = self.layout.current()
        old = read_manifest(current.root) if current is not None else None
        damage = self._catalog_damage(current) if current is not None else []
        changes = [] if current is None else manifest_differences(old, manifest)
        needed = current is None or bool(damage) or "notes" in rebuild_scope(changes)
        if full or needed:
            summary.rebuild_reasons = ["--full"] if full else damage or changes
            self._rebuild_from_files(current, manifest, summary, keep_sources=not needed)
        else:
            assert current is not None
            try:
                if changes:
                    summary.rebuild_reasons = changes
                    current = self._rebuild_from_catalog(current, manifest, summary)
                self._incremental(current, manifest, summary, paths, source)
            except MissingVectors as exc:
                summary = IndexSummary(rebuild_reasons=[str(exc)])
                self._rebuild_from_files(current, manifest, summary)
            except (sqlite3.DatabaseError, ValueError):
                # the cheap check above reads a few pages: damage elsewhere shows when a
                # row is read, and the whole check then decides whether it is damage
                if not (damage := catalog_problems(current)):
                    raise
                summary = IndexSummary(rebuild_reasons=damage)
                self._rebuild_from_files(current, manifest, summary)
        summary.seconds = time.perf_counter() - t0
        return summary

    def _incremental(
        self,
        live: Generation,
        manifest: dict[str, Any],
        summary: IndexSummary,
        paths: Collection[str] | None,
        source: str | None = None,
    ) -> None:
        """Changes go into a new generation made from the live one (Tantivy's immutable
        segments hard-linked) and one transaction of the shared catalog, published in
        one step when all are in, so a reader never sees part of a run; a run with
        nothing to do writes nothing."""
        catalog = open_catalog_for_reading(live.catalog)
        try:
            scanned, known, failures, scan = self._look(catalog, paths, source, sync=True)
            healthy = _looks_whole(live, catalog)
        finally:
            catalog.close()
        self._last_scan = scan
        summary.unavailable = dict(scan.unavailable)
        summary.stale = dict(scan.stale)
        plan = plan_changes(scanned, known, failures, self.sources.read_limit)
        summary.unchanged = plan.unchanged
        if plan.empty and healthy:
            if read_manifest(live.root) != manifest:  # a change that needs no rebuild
                self._rebuild_from_catalog(live, manifest, summary)
            return
        generation = clone_generation(self.layout, live)
        try:
            writer = GenerationWriter(
                generation, self._settings(), fresh=False, shared=True, cache=self.cache
            )
        except (IndexCorruptError, RuntimeError, ValueError) as exc:
            summary.repaired.append(f"derived indexes: unreadable, rebuilt ({exc})")
            writer = GenerationWriter(
                generation, self._settings(), True, True, cache=self.cache, donor=live
            )
            healthy = False
        try:
            if not healthy:  # reading every id of every index is what an edit must not cost
                summary.repaired += writer.level()
            self._run_plan(writer, plan, summary, manifest)
        finally:
            writer.close()
        self._publish(generation)

    def _rebuild_from_files(
        self,
        previous: Generation | None,
        manifest: dict[str, Any],
        summary: IndexSummary,
        keep_sources: bool = False,
    ) -> Generation:
        """Parse every note into a new generation beside the live one and switch
        readers to it at the end; embeddings come from the caches, not the model.

        ``keep_sources``: the rebuild was asked for (``--full``), not needed, so it is
        refused rather than leave out the notes of a source that cannot be read now
        (an unmounted disk); a rebuild the index needs goes ahead and reports them."""
        scan = self._scan(sync=True)
        if keep_sources and previous is not None:
            _refuse_to_drop(previous, scan.unavailable)
        sources = self._embedding_sources(previous or newest_intact(self.layout))
        generation = create_generation(self.layout, self.layout.next_catalog())
        writer = GenerationWriter(
            generation, self._settings(), fresh=True, shared=False, cache=self.cache
        )
        try:
            self._last_scan = scan
            summary.left_out = dict(scan.unavailable)
            summary.stale = dict(scan.stale)
            plan = plan_changes(scan.files, {}, {}, self.sources.read_limit)
            summary.unchanged = plan.unchanged
            self._run_plan(writer, plan, summary, manifest, sources=sources)
        finally:
            writer.close()
            for source in sources:
                source.close()
        if summary.cancelled and previous is not None:
            # part of a rebuild would hide notes the live generation still finds; what
            # was embedded waits in the caches for the next run
            sweep(self.layout)
            return previous
        self._publish(generation)
        return generation

    def _rebuild_from_catalog(
        self, previous: Generation, manifest: dict[str, Any], summary: IndexSummary
    ) -> Generation:
        """A new generation on the same catalog with derived indexes rebuilt from it: a
        tokenizer change, or derived files too damaged to update."""
        generation = generation_sharing_catalog(self.layout, previous)
        writer = GenerationWriter(
            generation, self._settings(), True, True, cache=self.cache, donor=previous
        )
        try:
            writer.level()
            writer.commit(manifest, summary.to_dict())
        finally:
            writer.close()
        self._publish(generation)
        return generation

    def _record_sources(self, summary: IndexSummary) -> None:
        """When each source was last read and from which commit: status and
        list_sources show it; a source that could not be read keeps its last entry."""
        scan = self._last_scan
        if scan is None:
            return
        self._last_scan = None
        state = read_sources_state(self.layout.root)
        configured = {VAULT_SOURCE, *self.sources.names}
        state = {k: v for k, v in state.items() if k in configured}
        now = now_iso()
        for name in scan.read:
            entry = {"last_indexed": now}
            if name in scan.commits:
                entry["commit"] = scan.commits[name]
            state[name] = entry
        for name, reason in {**scan.stale, **scan.unavailable}.items():
            state[name] = {**state.get(name, {}), "error": reason}
        atomic_write_json(self.layout.root / SOURCES_STATE, state)

    def _catalog_damage(self, generation: Generation) -> list[str]:
        """Every update looks at the catalog's header and a few pages, not at every page
        (SQLite's quick_check reads the whole file: ``check`` runs it)."""
        return catalog_problems(generation, thorough=False)

    def _publish(self, generation: Generation) -> None:
        publish(self.layout, generation)
        checkpoint(generation.catalog)
        sweep(self.layout)
        remove_legacy_files(self.layout)

    def _embedding_sources(self, previous: Generation | None) -> list[Catalog | SalvagedEmbeddings]:
        """Catalogs whose stored embeddings a rebuild may reuse: the live generation's
        and an index from before generations, when they can be read; a damaged one is
        read row by row, after the per-user cache."""
        self._salvage, self._from_cache = None, 0
        sources: list[Catalog | SalvagedEmbeddings] = []
        for path in (previous.catalog if previous else None, self.layout.legacy_catalog):
            if path is None or not path.is_file():
                continue
            if previous is not None and path == previous.catalog and catalog_problems(previous):
                self._salvage = SalvagedEmbeddings(
                    path,
                    self.embedder.dimension,
                    (VectorPart.location(previous), SentencePart.location(previous)),
                    settings_of(previous, self.config).embedding_key,
                )
                sources.append(self._salvage)
                continue
            try:
                catalog = Catalog(path, readonly=True)
                catalog.count("embeddings")
            except Exception:
                continue
            sources.append(catalog)
        return sources

    def _reuse_lines(self, summary: IndexSummary) -> list[str]:
        """Where a catalog rebuilt from the files got its vectors: what a repair cost."""
        salvaged = self._salvage.found if self._salvage is not None else 0
        return [
            f"embeddings: {self._from_cache} from the per-user cache, {salvaged} read from "
            f"the damaged catalog, {summary.chunks_embedded} chunks and "
            f"{summary.sentences_embedded} sentences embedded again"
        ]

    def _run_plan(
        self,
        writer: GenerationWriter,
        plan: ChangePlan,
        summary: IndexSummary,
        manifest: dict[str, Any],
        sources: Sequence[Catalog | SalvagedEmbeddings] = (),
    ) -> None:
        """Every batch into the catalog and the derived indexes; the derived indexes
        reach the disk once, at the end (nobody reads an unpublished generation). A
        cancel stops between two model calls and commits the batches done."""
        self._reparse_moved_code(plan)
        self.progress.start(len(plan.changed) + len(plan.moved))
        if self._box is None or self._box.budget != self.config.index:
            self.close()
            self._box = ParseBox(self.config.index)
        try:
            batches = [
                plan.changed[i : i + BATCH_FILES] for i in range(0, len(plan.changed), BATCH_FILES)
            ]
            for n, batch in enumerate(batches or [[]]):
                if self.cancel_requested.is_set():
                    summary.cancelled = True
                    break
                try:
                    self._commit_batch(writer, plan if n == 0 else None, batch, summary, sources)
                except _Cancelled:
                    summary.cancelled = True
                    break
            with writer.catalog.transaction():
                resolve_links(writer.catalog)
            writer.commit(manifest, summary.to_dict())
        finally:
            self.progress.finish()

    def close(self) -> None:
        """Stop the parse child. A long-lived manager (``watch``, an MCP server) keeps it
        between runs: starting a Python child per edit was most of a small update's
        time on a loaded machine."""
        box, self._box = self._box, None
        if box is not None:
            box.close()

    def _look(
        self,
        catalog: Catalog,
        paths: Collection[str] | None,
        source: str | None = None,
        sync: bool = False,
    ) -> tuple[
        dict[str, FileInfo],
        dict[str, tuple[int, str, int, int]],
        dict[str, tuple[str, int, int]],
        SourceScan,
    ]:
        """Files on disk, catalog notes and recorded failures: of the whole vault and its
        sources, of one source, or of just ``paths`` (in the vault) and what lies under
        them, so that nothing else looks deleted. The notes of a source that could not
        be read are left out on both sides, so they stay as they are."""
        if paths is None:
            scan = self._scan(source, sync)
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
        return self._look_at(catalog, paths, sync)

    def _look_at(
        self, catalog: Catalog, paths: Collection[str], sync: bool
    ) -> tuple[
        dict[str, FileInfo],
        dict[str, tuple[int, str, int, int]],
        dict[str, tuple[str, int, int]],
        SourceScan,
    ]:
        """``_look`` for named paths: vault paths, or note ids of a source (``lib:``
        is all of it, ``lib:src/`` a folder in it). Only those paths of the vault and of a
        folder source are looked at; a git source is fetched, listed whole and cut."""
        self._reload_rules()
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

        known = {p: v for p, v in catalog.file_states().items() if keep(p)}
        failures = {p: v for p, v in catalog.failures().items() if keep(p)}
        return scan.files, known, failures, scan

    def _commit_batch(
        self,
        writer: GenerationWriter,
        plan: ChangePlan | None,
        batch: Sequence[FileText],
        summary: IndexSummary,
        sources: Sequence[Catalog | SalvagedEmbeddings] = (),
    ) -> None:
        catalog = writer.catalog
        prepared: list[_Prepared] = []
        failed_now: list[tuple[FileText, str]] = []
        for ft in batch:
            working_on(self.progress, ft.info.path)
            result = self._prepare(ft)
            if isinstance(result, str):
                failed_now.append((ft, result))
                summary.failed[ft.info.path] = result
            else:
                prepared.append(result)
        credited = self._embed_missing(catalog, prepared, summary, len(batch), sources)

        removed_ids: list[int] = []
        added_ids: list[int] = []
        stale_paths: list[str] = []
        with catalog.transaction():
            if plan is not None:
                stale_paths += self._apply_plan_moves(catalog, plan, removed_ids, summary)
            for p in prepared:
                note_id, existed = catalog.upsert_note(
                    p.note,
                    p.file.content_hash,
                    p.file.info.mtime_ns,
                    p.file.info.size,
                    p.date,
                    self.sources.split(p.note.path)[0],
                )
                old_ids, new_ids = catalog.replace_chunks(note_id, p.chunks, p.hashes)
                catalog.replace_links(note_id, p.note.links)
                catalog.clear_failure(p.note.path)
                removed_ids += old_ids
                added_ids += new_ids
                stale_paths.append(p.note.path)
                if existed:
                    summary.updated += 1
                else:
                    summary.added += 1
            for ft, reason in failed_now:
                old_note = catalog.note_by_path(ft.info.path)
                if old_note is not None:
                    removed_ids += catalog.delete_note(old_note.id)
                    stale_paths.append(ft.info.path)
                catalog.set_failure(ft.info.path, reason, ft.info.mtime_ns, ft.info.size)
            catalog.bump_generation()
        summary.chunks_written += len(added_ids)
        writer.apply(Batch(catalog, removed_ids, added_ids, stale_paths))
        self.progress.advance(files=len(batch) + (len(plan.moved) if plan else 0) - credited)

    def _reparse_moved_code(self, plan: ChangePlan) -> None:
        """Code is named by its path (``package.module.Class.method``): a moved code file
        is parsed again at its new path, not just moved with its old names."""
        kept = []
        for note_id, old_path, ft in plan.moved:
            parser = self.sources.parser_for(ft.info.path)
            if parser is not None and getattr(parser, "named_by_path", False):
                plan.deleted.append((note_id, old_path))
                plan.changed.append(ft)
                plan.new_paths.add(ft.info.path)
            else:
                kept.append((note_id, old_path, ft))
        plan.moved = kept

    def _apply_plan_moves(
        self, catalog: Catalog, plan: ChangePlan, removed_ids: list[int], summary: IndexSummary
    ) -> list[str]:
        """Deletes, moves, touches and failures: the part of a plan that needs no parsing."""
        stale = []
        for note_id, path in plan.deleted:
            removed_ids += catalog.delete_note(note_id)
            stale.append(path)
            summary.removed += 1
        for note_id, old_path, ft in plan.moved:
            title = self._title_of(ft)
            catalog.move_note(note_id, ft.info.path, ft.info.mtime_ns, title)
            stale += [old_path, ft.info.path]
            summary.moved += 1
        for note_id, mtime_ns in plan.touched:
            catalog.touch_note(note_id, mtime_ns)
        for path, (reason, mtime_ns, size) in plan.failed.items():
            catalog.set_failure(path, reason, mtime_ns, size)
            summary.failed[path] = reason
        for path in plan.gone_failures:
            catalog.clear_failure(path)
        return stale

    def _title_of(self, ft: FileText) -> str | None:
        """A moved file parsed before, so this should not fail; if it does, keep the title."""
        try:
            parsed = self.sources.parse(ft.info.path, ft.text, ft.data)
        except Exception:
            return None
        return parsed.title if parsed else None

    def _prepare(self, ft: FileText) -> _Prepared | str:
        """The parsed and chunked note, or the reason it could not be."""
        path = ft.info.path
        if self.sources.parser_for(path) is None:
            return "no parser for this file type"
        try:
            note = self.sources.parse(path, ft.text, ft.data, self._box)
            assert note is not None
            cfg = self.config.chunking
            chunks, capped = chunk_capped(note, cfg.size, cfg.overlap, cfg.max_chunks_per_note)
        except FileUnreadableError as exc:
            return exc.message
        except Exception as exc:  # a parser bug must not abort the batch
            return f"parser error: {type(exc).__name__}: {exc}"
        warnings = [*ft.warnings, *([capped] if capped else [])]
        if warnings:
            note = _with_warnings(note, warnings)
        date = note.date.timestamp() if note.date else ft.info.mtime_ns / 1e9
        return _Prepared(ft, note, chunks, [text_hash(c.embed_text) for c in chunks], date)

    def _embed_missing(
        self,
        catalog: Catalog,
        prepared: Sequence[_Prepared],
        summary: IndexSummary,
        files: int,
        sources: Sequence[Catalog | SalvagedEmbeddings] = (),
    ) -> float:
        """Embed only texts no store holds (this catalog, the catalogs a rebuild may
        reuse, the per-user cache); each sub-batch is committed at once, so an
        interrupted run never pays for the same chunk again; when the model fails (an
        endpoint gone), what it answered before is committed first. The progress bar moves
        after every model call, its files credited in proportion to the chunks embedded
        (returned, so the commit credits the rest)."""
        key = self.embedder.cache_key
        wanted: dict[str, str] = {}
        path_of: dict[str, str] = {}
        chunk_hashes = {h for p in prepared for h in p.hashes}
        sentences = self.config.embedding.sentences
        for p in prepared:
            for h, c in zip(p.hashes, p.chunks, strict=True):
                wanted.setdefault(h, c.embed_text)
                path_of.setdefault(h, p.note.path)
                for unit in unit_texts(c.text, p.note.kind) if sentences else ():
                    u = text_hash(unit)
                    wanted.setdefault(u, unit)
                    path_of.setdefault(u, p.note.path)
        have = catalog.cached_hashes(key, wanted)
        need = [h for h in wanted if h not in have]
        found: dict[str, bytes] = {}
        for source in sources:
            if need and isinstance(source, Catalog):
                found.update(source.embedding_blobs(key, need))
                need = [h for h in need if h not in found]
        if found:
            self.cache.put(key, {h: np.frombuffer(v, dtype=np.float32) for h, v in found.items()})
        if need:
            cached = self.cache.get(key, need)
            self._from_cache += len(cached)
            found.update(cached)
            need = [h for h in need if h not in found]
        for source in sources:
            if need and not isinstance(source, Catalog):
                found.update(source.embedding_blobs(key, need))
                need = [h for h in need if h not in found]
        if found:
            with catalog.transaction():
                catalog.put_embedding_blobs(key, found)
        # by length: each model call then pads its texts to nearly the same length
        missing = sorted(((h, wanted[h]) for h in need if h not in found), key=_text_len)
        step = max(1, self.config.embedding.batch_size)
        credited = 0.0
        if missing:
            working_on(self.progress, path_of[missing[0][0]], chunks=len(missing))
        for start in range(0, len(missing), EMBED_BATCH):
            part = missing[start : start + EMBED_BATCH]
            vecs = []
            failure: Exception | None = None
            for at in range(0, len(part), step):
                if self.cancel_requested.is_set():
                    part = part[:at]
                    break
                piece = part[at : at + step]
                working_on(self.progress, path_of[piece[0][0]])
                try:
                    vecs.append(self.embedder.embed_texts([t for _, t in piece]))
                except Exception as exc:  # keep what the model answered before it failed
                    part, failure = part[:at], exc
                    break
                share = files * len(piece) / len(missing)
                credited += share
                self.progress.advance(files=share, chunks=len(piece))
            if not part:
                raise failure or _Cancelled()
            with catalog.transaction():
                vectors = normalize(np.vstack(vecs))
                catalog.put_embeddings(key, zip((h for h, _ in part), vectors, strict=True))
            self.cache.put(key, dict(zip((h for h, _ in part), vectors, strict=True)))
            summary.chunks_embedded += sum(h in chunk_hashes for h, _ in part)
            summary.sentences_embedded += sum(h not in chunk_hashes for h, _ in part)
            if failure is not None:
                raise failure
            if self.cancel_requested.is_set():
                raise _Cancelled
        return credited


def _text_len(item: tuple[str, str]) -> int:
    return len(item[1])


def _looks_whole(generation: Generation, catalog: Catalog) -> bool:
    """A cheap look (files there, state level with the catalog) deciding whether a run
    with no file changes may skip writing; ``check`` is the thorough one."""
    state = read_state(generation.root) or {}
    return (
        all(cls.written(generation) for cls in DERIVED)
        and state.get("generation") == catalog.generation
        and state.get("chunks") == catalog.count("chunks")
        and state.get("vectors") == state.get("chunks") == state.get("keyword_docs")
    )


def _with_warnings(note: ParsedNote, warnings: list[str]) -> ParsedNote:
    from dataclasses import replace

    return replace(note, warnings=tuple(note.warnings) + tuple(warnings))


def read_sources_state(index_dir: Path) -> dict[str, dict[str, str]]:
    import json

    try:
        data = json.loads((index_dir / SOURCES_STATE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _refuse_to_drop(previous: Generation, unavailable: dict[str, str]) -> None:
    if not unavailable:
        return
    catalog = open_catalog_for_reading(previous.catalog)
    try:
        held = Counter(catalog.note_sources().values())
    finally:
        catalog.close()
    for name, reason in sorted(unavailable.items()):
        if count := held[name]:
            raise VaultsearchError(
                f"A full rebuild now would leave out the {count} indexed notes of source "
                f"'{name}', which cannot be read: {reason}",
                fix="make it readable again, or run 'vaultsearch index' without --full "
                f"(it keeps them as indexed), or remove it with 'vaultsearch sources "
                f"remove {name}'",
            )
