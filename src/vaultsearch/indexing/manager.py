"""The IndexManager: parse every changed note and fan it out to the store.

No run writes the generation readers use. An update fills a new generation from
the live one (Tantivy's segments hard-linked) and changes the shared catalog in one
transaction that readers see only once the generation is published; a rebuild
(``--full``, a changed manifest, a damaged catalog, ``check --repair``) fills an empty
generation and a new catalog file. Either is published in one step when complete, so
a crash or a full disk leaves the previous generation served, and no reader ever sees
part of a run (``store/generations.py``).

A first build is the exception, since there is nothing to serve before it: it runs in
two stages. Stage 1 (parse, chunk, chunk vectors, keywords, graph) publishes its first
``index.first_batch`` files at once, then a generation at most every
``index.publish_seconds``, each an update of the last, so a search answers within
seconds and a kill keeps what was published. Stage 2 (``_fill_sentences``) embeds the
sentences of the chunks the sentence index lists as pending
(``store/derived/sentences.py``), publishing as it goes; it reads what is left from the
live generation, so a restart resumes it, and what was embedded before a kill comes
back from the per-user cache. Any run of more than ``index.first_batch`` files embeds
its chunks first the same way. ``update`` runs both stages; a long-lived process
(``defer_sentences``) runs stage 2 in steps between its updates.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from vaultsearch.config import Config, IndexConfig
from vaultsearch.embedding import Embedder
from vaultsearch.errors import (
    IndexBusyError,
    IndexCorruptError,
    VaultsearchError,
)
from vaultsearch.fault import OURS, Failure, FailureRow, read_again
from vaultsearch.indexing.batch import BatchEmbedder, Cancelled, Prepared, prepare
from vaultsearch.indexing.changes import (
    ChangePlan,
    FileText,
    describe_plan,
    describe_retries,
    plan_changes,
)
from vaultsearch.indexing.linking import resolve_links
from vaultsearch.indexing.looking import VaultFiles
from vaultsearch.indexing.parsebox import ParseBox
from vaultsearch.indexing.progress import (
    Progress,
    SilentProgress,
    enter_stage,
    show_counts,
    working_on,
)
from vaultsearch.indexing.runrecord import RecordedProgress
from vaultsearch.indexing.scan import FileInfo, IgnoreRules
from vaultsearch.indexing.sources import SourceScan, SourceSet, now_iso
from vaultsearch.indexing.summary import IndexCheck, IndexSummary
from vaultsearch.sourceconfig import VAULT_SOURCE
from vaultsearch.store.atomic import atomic_write_json, temp_target
from vaultsearch.store.catalog import Catalog, checkpoint, open_catalog_for_reading
from vaultsearch.store.counts import current_counts
from vaultsearch.store.derived import DERIVED, Batch, DerivedSettings
from vaultsearch.store.derived.sentences import SentencePart, read_pending
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
    recorded_manifest,
    resplit_kinds,
)
from vaultsearch.store.runstate import RUN_NAME
from vaultsearch.store.salvage import SalvagedEmbeddings
from vaultsearch.store.verify import CheckReport, settings_of, verify_store
from vaultsearch.store.writer import (
    GenerationWriter,
    catalog_problems,
    clone_generation,
    generation_sharing_catalog,
    read_damage,
)

SOURCES_STATE = "sources.json"
BATCH_FILES = 256
FIRST_BATCH = IndexConfig.first_batch
"""The default of ``index.first_batch``: a first build publishes after this many files."""
FIRST_BUILD = "first_build"
"""Catalog meta key: "1" while a first build's stage 1 has not committed every file, so
the run that resumes it publishes as it goes too."""
MB = 1024 * 1024


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
        self.files = VaultFiles(vault, index_dir, config)
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
        self.keep_parse_child = False
        """Set by a long-lived process (``LiveIndex``: ``watch``, an MCP server) to keep
        the parse child from run to run; a one-shot run stops it when it ends, so the
        children of managers nobody closes do not pile up (a test suite's ran to 35)."""
        """The child process that parses files, kept from run to run (``close``)."""
        self._salvage: SalvagedEmbeddings | None = None
        self.batches = BatchEmbedder(self.embedder, self.cache, self.cancel_requested)
        self.defer_sentences = False
        """Set by a long-lived process (``LiveIndex``): ``update`` leaves stage 2 to
        ``fill_sentences``, which that process runs in steps between its updates."""
        self._deferring = False
        """This run embeds chunks only (stage 1)."""
        self._damaged: set[Path] = set()
        """Catalogs a read found damaged that ``catalog_problems`` passes: a rebuild
        salvages their embeddings row by row rather than trust them."""

    def use_sources(self, config: Config) -> None:
        """Another list of named sources (added or removed), keeping this manager's
        writer lock: a source is removed under the lock taken before its config went."""
        self.config = config
        self.files.use_sources(config)

    def use_config(self, config: Config) -> None:
        """Index with ``config`` from the next run on (parsers and sources included)."""
        self.config = config
        self.files = VaultFiles(self.vault, self.layout.root, config)

    @property
    def sources(self) -> SourceSet:
        return self.files.sources

    @property
    def rules(self) -> IgnoreRules:
        return self.files.rules

    # --- read-only questions -------------------------------------------------
    def scan(self) -> dict[str, FileInfo]:
        """The files of the vault and of every named source (as their note ids)."""
        return self.files.scan().files

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
        old, expected, damaged = self._recorded_manifest(current)
        if old is None and damaged:
            return IndexCheck("rebuild", [damaged], [damaged])
        changes = manifest_differences(old, expected)
        if changes and resplit_kinds(old, changes) is None:
            return IndexCheck("rebuild", [f"manifest field changed: {c}" for c in changes], changes)
        if damage := catalog_problems(current):
            return IndexCheck("rebuild", damage)
        return None

    def _recorded_manifest(
        self, current: Generation
    ) -> tuple[dict[str, Any] | None, dict[str, Any], str]:
        """What built ``current``, what the settings would build, and what is wrong with
        the manifest file (``recorded_manifest``)."""
        expected = expected_manifest(
            self.config, recorded_dimension(read_manifest(current.root), self.config)
        )
        old, damaged = recorded_manifest(current.root, expected)
        return old, expected, damaged

    def check(self) -> IndexCheck:
        """Is the index current? Never loads the model and never writes."""
        if (rebuild := self.rebuild_check()) is not None:
            return rebuild
        current = self.layout.current()
        assert current is not None
        catalog = open_catalog_for_reading(current.catalog)
        try:
            scanned, known, failures, scan = self.files.look(catalog, None)
            plan = plan_changes(scanned, known, failures, self.sources.read_limit)
            state = read_state(current.root) or {}
            behind = state.get("generation") != catalog.generation
        finally:
            catalog.close()
        reasons = describe_plan(plan)
        reasons += [retries] if (retries := describe_retries(plan)) else []
        old, expected, damaged = self._recorded_manifest(current)
        reasons += [damaged] if damaged else []
        changes = manifest_differences(old, expected)
        if (kinds := resplit_kinds(old, changes)) is not None:
            reasons.append(
                f"manifest field changed: {changes[0]}: the sentence units of "
                f"{' and '.join(sorted(kinds)) or 'no'} notes are derived again"
            )
        reasons += [f"source {name} has not been cloned yet" for name in sorted(scan.never_read)]
        if behind:
            reasons.append("derived indexes are behind the catalog (an interrupted run)")
        if waiting := len(read_pending(current)):
            reasons.append(f"{waiting} chunks wait for their sentence vectors (a build's stage 2)")
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
            plan = self.files.plan(catalog)
        finally:
            catalog.close()
        report.problems += [f"files: {d} since the last index run" for d in describe_plan(plan)]
        if retries := describe_retries(plan):
            report.problems.append(f"files: {retries}")
        return report

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
            try:
                yield
            except BaseException:
                self._tidy_after_failure()
                raise
        finally:
            if acquired:
                self.lock.release()

    def _tidy_after_failure(self) -> None:
        """A run that failed (a full disk) leaves its unpublished generation and a
        rebuild's new catalog: half a rebuild's bytes, which the user freeing space
        for the next run would otherwise not get back until that run. A commit the
        pointer switch did not follow is finished first, as at the start of a run;
        if even that cannot be written, nothing is removed."""
        with contextlib.suppress(Exception):
            finish_publish(self.layout)
            sweep(self.layout)

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

        def work() -> IndexSummary:
            summary = self._update(full, paths, source)
            if not self.defer_sentences and not summary.cancelled:
                self._fill_sentences(summary)
                summary.seconds = time.perf_counter() - summary.started
            self._record_sources(summary)
            summary.counts = current_counts(self.layout)
            if summary.counts is not None:
                show_counts(self.progress, summary.counts)
            return summary

        fix = "wait for it to finish, or stop the other 'vaultsearch index/watch/mcp'"
        return self._recorded("rebuild" if full else "update", reason, fix, work)

    def _recorded(
        self, kind: str, reason: str | None, fix: str, work: Callable[[], IndexSummary]
    ) -> IndexSummary:
        """``work`` under the writer lock, its progress and its end (or its error)
        recorded for every process to see."""
        with self._writing(fix):
            display = self.progress
            recorded = self.progress = RecordedProgress(display, self.layout.root, kind, reason)
            try:
                summary = work()
            except BaseException as exc:
                recorded.end(None, str(exc) or type(exc).__name__)
                raise
            finally:
                self.progress = display
                self.cache.flush()
            recorded.end(summary)
            return summary

    def sentences_pending(self) -> int:
        """Chunks of the live generation still waiting for their sentence vectors."""
        current = self.layout.current()
        return len(read_pending(current)) if current is not None else 0

    def fill_sentences(
        self, progress: Progress | None = None, reason: str | None = None, steps: int = 0
    ) -> IndexSummary:
        """Stage 2 alone, under the writer lock: ``steps`` published generations at most
        (0: until none is pending), so a long-lived process can put an edit's update
        between two of them."""
        if progress is not None:
            self.progress = progress

        def work() -> IndexSummary:
            summary = IndexSummary()
            self._fill_sentences(summary, steps)
            summary.seconds = time.perf_counter() - summary.started
            summary.counts = current_counts(self.layout)
            return summary

        fix = "wait for it to finish; the writer adds the sentences itself"
        return self._recorded("sentences", reason, fix, work)

    def _fill_sentences(self, summary: IndexSummary, steps: int = 0) -> None:
        """Stage 2: the pending chunks' sentences embedded, note by note, into a clone
        of the live generation, published as stage 1 publishes. Stops when none is
        pending, on cancel, or when a step fills nothing (their vectors cannot be had)."""
        if not self.config.embedding.sentences:
            return
        manifest = expected_manifest(self.config, self.embedder.dimension)
        step = 0
        started = False
        try:
            while not self.cancel_requested.is_set() and (not steps or step < steps):
                live = self.layout.current()
                if live is None or not read_pending(live) or read_manifest(live.root) != manifest:
                    return  # settings changed since stage 1: the next update rebuilds first
                step += 1
                generation = clone_generation(self.layout, live)
                writer = GenerationWriter(
                    generation, self._settings(), False, True, cache=self.cache
                )
                try:
                    part = _sentence_part(writer)
                    by_note = writer.catalog.chunks_by_note(part.awaiting)
                    notes = sorted(by_note)
                    if not started:
                        started = True
                        enter_stage(
                            self.progress,
                            2,
                            f"sentence vectors of {len(notes)} notes ({len(part.awaiting)} "
                            "chunks); search answers meanwhile",
                        )
                        self.progress.start(len(notes))
                    filled = self._fill_step(writer, part, notes, by_note, summary, step == 1)
                    writer.commit(manifest, summary.to_dict())
                finally:
                    writer.close()
                self._publish(generation)
                if not filled or summary.cancelled:
                    return
        finally:
            if started:
                self.progress.finish()

    def _fill_step(
        self,
        writer: GenerationWriter,
        part: SentencePart,
        notes: list[int],
        by_note: dict[int, list[int]],
        summary: IndexSummary,
        first: bool,
    ) -> int:
        """One published step: ``index.fill_notes`` notes at a time until ``index.publish_seconds``
        have passed, or one group only for the first step, as stage 1 publishes its
        first files at once."""
        t0 = time.monotonic()
        filled = 0
        step = self.config.index.fill_notes
        for start in range(0, len(notes), step):
            group = [c for n in notes[start : start + step] for c in by_note[n]]
            texts = writer.catalog.sentence_texts(group)
            try:
                self.batches.embed_sentences(
                    writer.catalog, texts, summary, self.progress, self.config.embedding
                )
            except Cancelled:
                summary.cancelled = True
            filled += part.fill(writer.catalog, group)
            self.progress.advance(files=len(notes[start : start + step]))
            late = time.monotonic() - t0 >= self.config.index.publish_seconds
            if summary.cancelled or first or late:
                break
        return filled

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
            elif alone := self._manifest_alone_damaged(current):
                summary.repaired.append(alone[1])
                self._rewrite_manifest(current, alone[0], summary)
            else:
                reason = None
                try:
                    self._rebuild_from_catalog(current, manifest, summary)
                    summary.repaired.append("derived indexes: rebuilt from the catalog")
                except MissingVectors as exc:
                    reason = str(exc)
                except sqlite3.DatabaseError as exc:
                    if not (damage := read_damage(exc)):
                        raise
                    self._damaged.add(current.catalog)
                    reason = damage[0]
                if reason is not None:
                    summary.repaired.append(f"{reason}: rebuilt from the vault's files")
                    self._rebuild_from_files(current, manifest, summary)
                    summary.repaired += self._reuse_lines(summary)
            summary.seconds = time.perf_counter() - t0
            return summary

    def _manifest_alone_damaged(self, current: Generation) -> tuple[dict[str, Any], str] | None:
        """The manifest to write again and what was wrong with it, when nothing else is:
        its bytes differ from those the state recorded, the settings in use have them,
        and ``check`` finds no other problem. ``index`` then writes the file again
        sharing every segment, and so does ``check --repair``, rather than rebuild what
        is whole."""
        old, _expected, damaged = self._recorded_manifest(current)
        if old is None or not damaged:
            return None
        problems = verify_store(self.layout, self.config).problems
        return (old, damaged) if all(p.startswith("manifest:") for p in problems) else None

    def _update(
        self, full: bool, paths: Collection[str] | None = None, source: str | None = None
    ) -> IndexSummary:
        t0 = time.perf_counter()
        summary = IndexSummary(started=t0)
        manifest = expected_manifest(self.config, self.embedder.dimension)
        current = self.layout.current()
        old, damaged = recorded_manifest(current.root, manifest) if current else (None, "")
        damage = self._catalog_damage(current) if current is not None else []
        changes = [] if current is None else manifest_differences(old, manifest)
        if damaged and old is None:
            changes = [damaged]
        elif damaged:
            summary.repaired.append(damaged)
        if (kinds := resplit_kinds(old, changes)) is not None:
            changes = []
        needed = current is None or bool(damage) or "notes" in rebuild_scope(changes)
        if full or needed:
            summary.rebuild_reasons = ["--full"] if full else damage or changes
            self._rebuild_from_files(current, manifest, summary, keep_sources=not needed)
        else:
            assert current is not None
            try:
                if kinds is not None:
                    current = self._rewrite_manifest(current, manifest, summary, kinds)
                elif changes:
                    summary.rebuild_reasons = changes
                    current = self._rebuild_from_catalog(current, manifest, summary)
                self._incremental(current, manifest, summary, paths, source, bool(damaged))
            except MissingVectors as exc:
                summary = IndexSummary(rebuild_reasons=[str(exc)], started=t0)
                self._rebuild_from_files(current, manifest, summary)
            except (sqlite3.DatabaseError, ValueError) as exc:
                # the cheap check above reads a few pages: damage elsewhere shows when a
                # row is read, and the whole check then decides whether it is damage
                if not (damage := catalog_problems(current) or read_damage(exc)):
                    raise
                summary = IndexSummary(rebuild_reasons=damage, started=t0)
                self._damaged.add(current.catalog)
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
        rewrite_manifest: bool = False,
    ) -> None:
        """Changes go into a new generation made from the live one (Tantivy's immutable
        segments hard-linked) and one transaction of the shared catalog, published in
        one step when all are in, so a reader never sees part of a run; a run with
        nothing to do writes nothing but a damaged manifest (``rewrite_manifest``)."""
        catalog = open_catalog_for_reading(live.catalog)
        try:
            scanned, known, failures, scan = self.files.look(catalog, paths, source, sync=True)
            healthy = _looks_whole(live, catalog)
            early = catalog.get_meta(FIRST_BUILD) == "1"
        finally:
            catalog.close()
        self._last_scan = scan
        summary.unavailable = dict(scan.unavailable)
        summary.stale = dict(scan.stale)
        plan = plan_changes(scanned, known, failures, self.sources.read_limit)
        summary.unchanged = plan.unchanged
        if plan.empty and healthy:
            if rewrite_manifest:
                self._rewrite_manifest(live, manifest, summary)
            elif read_manifest(live.root) != manifest:  # a change that needs no rebuild
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
            self._run_plan(writer, plan, summary, manifest, early=early)
        finally:
            writer.close()
        self._publish(writer.generation)

    def _rewrite_manifest(
        self,
        live: Generation,
        manifest: dict[str, Any],
        summary: IndexSummary,
        kinds: Collection[str] = (),
    ) -> Generation:
        """A clone of the live generation with its manifest written again, sharing every
        segment: the damage was to that file only (an edit's run, had there been one,
        writes it anyway), or a new sentence split changed the units of ``kinds``' notes
        only, whose chunks' sentences stage 2 embeds again. No index is rebuilt."""
        writer = GenerationWriter(
            clone_generation(self.layout, live), self._settings(), False, True, cache=self.cache
        )
        try:
            if kinds:
                _sentence_part(writer).split_again(writer.catalog.chunk_ids_of_kinds(kinds))
            writer.commit(manifest, summary.to_dict())
        finally:
            writer.close()
        self._publish(writer.generation)
        return writer.generation

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
        scan = self.files.scan(sync=True)
        if keep_sources and previous is not None:
            _refuse_to_drop(previous, scan.unavailable)
        sources = self._embedding_sources(previous or newest_intact(self.layout))
        generation = create_generation(self.layout, self.layout.next_catalog())
        writer = GenerationWriter(
            generation, self._settings(), fresh=True, shared=False, cache=self.cache
        )
        early = previous is None  # nothing is served yet: publish as it goes
        try:
            self._last_scan = scan
            summary.left_out = dict(scan.unavailable)
            summary.stale = dict(scan.stale)
            plan = plan_changes(scan.files, {}, {}, self.sources.read_limit)
            summary.unchanged = plan.unchanged
            self._run_plan(writer, plan, summary, manifest, sources=sources, early=early)
        finally:
            writer.close()
            for source in sources:
                source.close()
        if summary.cancelled and previous is not None:
            # part of a rebuild would hide notes the live generation still finds; what
            # was embedded waits in the caches for the next run
            sweep(self.layout)
            return previous
        self._publish(writer.generation)
        return writer.generation

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
            _sentence_part(writer).awaiting = read_pending(previous)
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
        """Every generation published here was committed by a ``GenerationWriter``,
        which synced it."""
        publish(self.layout, generation, synced=True)
        checkpoint(generation.catalog)
        sweep(self.layout)
        remove_legacy_files(self.layout)

    def _embedding_sources(self, previous: Generation | None) -> list[Catalog | SalvagedEmbeddings]:
        """Catalogs whose stored embeddings a rebuild may reuse: the live generation's
        and an index from before generations, when they can be read; a damaged one is
        read row by row, after the per-user cache."""
        self._salvage, self.batches.from_cache = None, 0
        sources: list[Catalog | SalvagedEmbeddings] = []
        for path in (previous.catalog if previous else None, self.layout.legacy_catalog):
            if path is None or not path.is_file():
                continue
            if (
                previous is not None
                and path == previous.catalog
                and (path in self._damaged or catalog_problems(previous))
            ):
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
            f"embeddings: {self.batches.from_cache} from the per-user cache, {salvaged} read from "
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
        early: bool = False,
    ) -> None:
        """Every batch into the catalog and the derived indexes; the derived indexes
        reach the disk once, at the end (nobody reads an unpublished generation), or,
        ``early`` (a first build), after the first ``index.first_batch`` files and then every
        ``index.publish_seconds``, each time going on in a clone (``GenerationWriter.follow``).
        A cancel stops between two model calls and commits the batches done."""
        self._reparse_moved_code(plan)
        self.progress.start(len(plan.changed) + len(plan.moved))
        if self._box is None or self._box.budget != self.config.index:
            self.close()
            self._box = ParseBox(self.config.index)
        first_batch = self.config.index.first_batch
        self._deferring = self.config.embedding.sentences and len(plan.changed) > first_batch
        _sentence_part(writer).defer = self._deferring
        if self._deferring:
            enter_stage(
                self.progress, 1, "chunk vectors, keywords and links; sentence vectors after"
            )
        try:
            first = first_batch if early else BATCH_FILES
            changed = plan.changed
            batches = [changed[:first]] if changed else []
            batches += [
                changed[i : i + BATCH_FILES] for i in range(first, len(changed), BATCH_FILES)
            ]
            if early:
                with writer.catalog.transaction():
                    writer.catalog.set_meta(FIRST_BUILD, "1")
            published = time.monotonic()
            for n, batch in enumerate(batches or [[]]):
                if self.cancel_requested.is_set():
                    summary.cancelled = True
                    break
                try:
                    self._commit_batch(writer, plan if n == 0 else None, batch, summary, sources)
                except Cancelled:
                    summary.cancelled = True
                    break
                due = n == 0 or time.monotonic() - published >= self.config.index.publish_seconds
                if early and due and n + 1 < len(batches):
                    self._publish_step(writer, manifest, summary)
                    published = time.monotonic()
            summary.to_retry = {  # this run's try and the earlier ones; the limit's was the last
                p: tries
                for p in summary.to_retry
                if read_again(OURS, tries := plan.retried.get(p, 0) + 1)
            }
            with writer.catalog.transaction():
                resolve_links(writer.catalog)
                if early and not summary.cancelled:
                    writer.catalog.set_meta(FIRST_BUILD, "0")
            writer.commit(manifest, summary.to_dict())
        finally:
            self._deferring = False
            self.progress.finish()
            if not self.keep_parse_child:
                self.close()

    def _publish_step(
        self, writer: GenerationWriter, manifest: dict[str, Any], summary: IndexSummary
    ) -> None:
        """What a first build has committed so far, published; the writer goes on in a
        clone of it."""
        with writer.catalog.transaction():
            resolve_links(writer.catalog)
        writer.commit(manifest, summary.to_dict())
        self._publish(writer.generation)
        writer.follow(self.layout)

    def close(self) -> None:
        """Stop the parse child. A long-lived manager (``keep_parse_child``) keeps it
        between runs: starting a Python child per edit was most of a small update's
        time on a loaded machine."""
        box, self._box = self._box, None
        if box is not None:
            box.close()

    def _commit_batch(
        self,
        writer: GenerationWriter,
        plan: ChangePlan | None,
        batch: Sequence[FileText],
        summary: IndexSummary,
        sources: Sequence[Catalog | SalvagedEmbeddings] = (),
    ) -> None:
        catalog = writer.catalog
        prepared: list[Prepared] = []
        failed_now: list[tuple[FileText, Failure]] = []
        for ft in batch:
            working_on(self.progress, ft.info.path)
            result = prepare(ft, self.sources, self.config.chunking, self._box)
            if isinstance(result, Failure):
                failed_now.append((ft, result))
                summary.failed[ft.info.path] = result.reason
                if result.retried:
                    summary.to_retry[ft.info.path] = 1  # the earlier tries added at the end
            else:
                prepared.append(result)
        credited = self.batches.embed_missing(
            catalog,
            prepared,
            summary,
            len(batch),
            self.progress,
            self.config.embedding,
            sources,
            sentences=not self._deferring,
        )

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
            for ft, failure in failed_now:
                old_note = catalog.note_by_path(ft.info.path)
                if old_note is not None:
                    removed_ids += catalog.delete_note(old_note.id)
                    stale_paths.append(ft.info.path)
                row = FailureRow(failure.reason, ft.info.mtime_ns, ft.info.size, failure.fault)
                catalog.set_failure(ft.info.path, row)
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
        for path, failure in plan.failed.items():
            catalog.set_failure(path, failure)
            summary.failed[path] = failure.reason
            if failure.retried:
                summary.to_retry[path] = 1
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


def _sentence_part(writer: GenerationWriter) -> SentencePart:
    return next(p for p in writer.parts if isinstance(p, SentencePart))


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
