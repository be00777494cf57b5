"""The IndexManager: parse every changed note and fan it out to the three indexes.

Every batch is committed in one order: the catalog transaction first (the source of
truth), then FAISS, Tantivy and the graph, then the manifest and the state file.
A crash at any point leaves a catalog that is ahead of, or equal to, the derived
indexes, and the next open brings them level from the catalog without the model.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vaultsearch.config import Config
from vaultsearch.embedding import Embedder, text_hash
from vaultsearch.errors import IndexBusyError
from vaultsearch.indexes.catalog import Catalog
from vaultsearch.indexes.keywords import KeywordDoc, KeywordIndex
from vaultsearch.indexes.vectors import VectorIndex, normalize
from vaultsearch.indexing.changes import ChangePlan, FileText, describe_plan, plan_changes
from vaultsearch.indexing.chunker import chunk_note
from vaultsearch.indexing.derived import DerivedIndexes, keyword_docs, stored_keyword_doc
from vaultsearch.indexing.layout import IndexLayout
from vaultsearch.indexing.links import LinkResolver
from vaultsearch.indexing.lock import WriterLock
from vaultsearch.indexing.manifest import (
    expected_manifest,
    manifest_differences,
    read_manifest,
    read_state,
    rebuild_scope,
    write_manifest,
)
from vaultsearch.indexing.progress import Progress, SilentProgress
from vaultsearch.indexing.scan import FileInfo, IgnoreRules, scan_paths, scan_vault
from vaultsearch.models import Chunk, ParsedNote
from vaultsearch.parsers import ParserRegistry

BATCH_FILES = 256
EMBED_BATCH = 128
PENDING_REBUILD = "rebuild_pending"


@dataclass
class IndexSummary:
    added: int = 0
    updated: int = 0
    moved: int = 0
    removed: int = 0
    unchanged: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    chunks_embedded: int = 0
    chunks_written: int = 0
    seconds: float = 0.0
    repaired: list[str] = field(default_factory=list)
    rebuild_reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "updated": self.updated,
            "moved": self.moved,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "failed": dict(sorted(self.failed.items())),
            "chunks_embedded": self.chunks_embedded,
            "chunks_written": self.chunks_written,
            "chunks_per_second": round(self.chunks_written / self.seconds, 1)
            if self.seconds
            else 0.0,
            "seconds": round(self.seconds, 3),
            "repaired": self.repaired,
            "rebuild_reasons": self.rebuild_reasons,
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
        self.rules = IgnoreRules(vault, config.vault.exclude, index_dir)
        self.embedder = embedder or Embedder(config.embedding)
        self.progress = progress or SilentProgress()
        self.lock = WriterLock(self.layout.lock)
        self.derived = DerivedIndexes(self.layout, config, self.embedder.model_id)

    # --- read-only questions -------------------------------------------------
    def scan(self) -> dict[str, FileInfo]:
        self._reload_rules()
        return scan_vault(self.vault, self.rules, self.parsers)

    def _reload_rules(self) -> None:
        """A long-lived writer must see an edited .gitignore / .vaultsearchignore."""
        self.rules = IgnoreRules(self.vault, self.config.vault.exclude, self.layout.root)

    def check(self) -> IndexCheck:
        """Is the index current? Never loads the model and never writes."""
        expected = expected_manifest(self.config)
        if not self.layout.exists():
            return IndexCheck("rebuild", ["no index has been built yet"])
        changes = manifest_differences(read_manifest(self.layout.root), expected)
        if changes:
            return IndexCheck("rebuild", [f"manifest field changed: {c}" for c in changes], changes)
        catalog = Catalog(self.layout.catalog, readonly=True)
        try:
            if catalog.get_meta(PENDING_REBUILD) == "1":
                return IndexCheck("rebuild", ["an earlier rebuild was interrupted"])
            plan = plan_changes(
                self.scan(),
                catalog.file_states(),
                catalog.failures(),
                self.config.vault.max_file_size,
            )
            state = read_state(self.layout.root) or {}
            behind = state.get("generation") != catalog.generation
        finally:
            catalog.close()
        reasons = describe_plan(plan)
        if behind:
            reasons.append("derived indexes are behind the catalog (an interrupted run)")
        n = len(plan.changed) + len(plan.moved) + len(plan.deleted) + len(plan.failed)
        return IndexCheck("update" if reasons else "current", reasons, [], n)

    # --- writing --------------------------------------------------------------
    @contextmanager
    def _writing(self, fix: str) -> Iterator[Catalog]:
        """The writer lock (kept if the caller already held it) and a catalog."""
        acquired = not self.lock.held
        if acquired and not self.lock.acquire():
            raise IndexBusyError(
                f"Another vaultsearch process is writing the index at {self.layout.root}.",
                fix=fix,
            )
        self._remove_stale_temps()
        catalog = Catalog(self.layout.catalog)
        try:
            yield catalog
        finally:
            catalog.close()
            if acquired:
                self.lock.release()

    def _remove_stale_temps(self) -> None:
        """A writer killed inside an atomic write leaves its temp file behind (FAISS's
        is as big as the index); only the lock holder writes them, so it may sweep."""
        for target in (
            self.layout.vectors,
            self.layout.graph,
            self.layout.manifest,
            self.layout.state,
        ):
            for tmp in target.parent.glob(f".{target.name}.*.tmp"):
                tmp.unlink(missing_ok=True)

    def update(
        self,
        full: bool = False,
        progress: Progress | None = None,
        paths: Collection[str] | None = None,
    ) -> IndexSummary:
        """``paths`` (vault-relative files or folders, e.g. from the watcher) limits the
        look for changes to them; a move is recognised when both of its sides are given."""
        if progress is not None:
            self.progress = progress
        fix = "wait for it to finish, or stop the other 'vaultsearch index/watch/mcp'"
        with self._writing(fix) as catalog:
            return self._update(catalog, full, paths)

    def repair(self) -> IndexSummary:
        """Bring FAISS, Tantivy and the graph level with the catalog, from cached
        vectors only: what opening after a crash, and ``check --repair``, need."""
        summary = IndexSummary()
        with self._writing("wait for it to finish; the writer repairs the index itself") as catalog:
            t0 = time.perf_counter()
            dim = self.embedder.dimension
            vectors = self.derived.open_vectors(catalog, dim, False, summary)
            keywords = self.derived.open_keywords(catalog, False, False, summary)
            manifest = read_manifest(self.layout.root) or expected_manifest(self.config, dim)
            self.derived.commit(catalog, vectors, keywords, catalog.generation, manifest, summary)
            summary.seconds = time.perf_counter() - t0
            return summary

    def _update(
        self, catalog: Catalog, full: bool, paths: Collection[str] | None = None
    ) -> IndexSummary:
        t0 = time.perf_counter()
        summary = IndexSummary()
        dim = self.embedder.dimension
        manifest = expected_manifest(self.config, dim)
        old = read_manifest(self.layout.root)
        fresh = old is None and catalog.count("notes") == 0
        changes = [] if fresh else manifest_differences(old, manifest)
        scope = {"notes", "vectors", "keywords", "graph"} if full else rebuild_scope(changes)
        summary.rebuild_reasons = ["--full"] if full else changes
        reparse_all = "notes" in scope or catalog.get_meta(PENDING_REBUILD) == "1"
        if reparse_all:
            with catalog.transaction():
                catalog.set_meta(PENDING_REBUILD, "1")

        vectors = self.derived.open_vectors(catalog, dim, "vectors" in scope, summary)
        keywords = self.derived.open_keywords(catalog, "keywords" in scope, reparse_all, summary)

        scanned, known, failures = self._look(catalog, None if reparse_all else paths)
        plan = plan_changes(
            scanned, known, failures, self.config.vault.max_file_size, reparse_all=reparse_all
        )
        summary.unchanged = plan.unchanged
        state_ok = (read_state(self.layout.root) or {}).get("generation") == catalog.generation
        if plan.empty and not reparse_all and not summary.repaired and state_ok:
            if old != manifest:
                write_manifest(self.layout.root, manifest)
            summary.seconds = time.perf_counter() - t0
            return summary

        self.progress.start(len(plan.changed) + len(plan.moved))
        try:
            batches = [
                plan.changed[i : i + BATCH_FILES] for i in range(0, len(plan.changed), BATCH_FILES)
            ]
            for n, batch in enumerate(batches or [[]]):
                self._commit_batch(
                    catalog, vectors, keywords, plan if n == 0 else None, batch, summary,
                    last=n == max(len(batches) - 1, 0), reparse_all=reparse_all, manifest=manifest,
                )  # fmt: skip
        finally:
            self.progress.finish()
        summary.seconds = time.perf_counter() - t0
        return summary

    def _look(
        self, catalog: Catalog, paths: Collection[str] | None
    ) -> tuple[
        dict[str, FileInfo], dict[str, tuple[int, str, int, int]], dict[str, tuple[str, int, int]]
    ]:
        """Files on disk, catalog notes and recorded failures: of the whole vault, or of
        just ``paths`` and what lies under them, so that nothing else looks deleted."""
        if paths is None:
            return self.scan(), catalog.file_states(), catalog.failures()
        self._reload_rules()
        scanned = scan_paths(self.vault, self.rules, self.parsers, paths)
        prefixes = tuple(p.rstrip("/") + "/" for p in paths)
        wanted = set(paths)

        def inside(path: str) -> bool:
            return path in wanted or path.startswith(prefixes)

        known = {p: v for p, v in catalog.file_states().items() if inside(p)}
        failures = {p: v for p, v in catalog.failures().items() if inside(p)}
        return scanned, known, failures

    def _commit_batch(
        self,
        catalog: Catalog,
        vectors: VectorIndex,
        keywords: KeywordIndex,
        plan: ChangePlan | None,
        batch: Sequence[FileText],
        summary: IndexSummary,
        *,
        last: bool,
        reparse_all: bool,
        manifest: dict[str, Any],
    ) -> None:
        prepared: list[_Prepared] = []
        failed_now: list[tuple[FileText, str]] = []
        for ft in batch:
            result = self._prepare(ft)
            if isinstance(result, str):
                failed_now.append((ft, result))
                summary.failed[ft.info.path] = result
            else:
                prepared.append(result)
        self._embed_missing(catalog, prepared, summary)

        removed_ids: list[int] = []
        added_ids: list[int] = []
        stale_paths: list[str] = []
        docs: list[KeywordDoc] = []
        with catalog.transaction():
            if plan is not None:
                stale_paths += self._apply_plan_moves(catalog, plan, removed_ids, summary)
            for p in prepared:
                note_id, existed = catalog.upsert_note(
                    p.note, p.file.content_hash, p.file.info.mtime_ns, p.file.info.size, p.date
                )
                old_ids, new_ids = catalog.replace_chunks(note_id, p.chunks, p.hashes)
                catalog.replace_links(note_id, p.note.links)
                catalog.clear_failure(p.note.path)
                removed_ids += old_ids
                added_ids += new_ids
                stale_paths.append(p.note.path)
                docs += keyword_docs(
                    p.note, p.chunks, new_ids, self.config.keyword.frontmatter_fields
                )
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
            _resolve_links(catalog)
            if last and reparse_all:
                catalog.db.execute("DELETE FROM meta WHERE key=?", (PENDING_REBUILD,))
            generation = catalog.bump_generation()
        if plan is not None:
            docs += self._moved_docs(catalog, plan)
        summary.chunks_written += len(added_ids)

        vectors.remove(removed_ids)
        vectors.add(
            added_ids, catalog.vectors_by_ids(self.embedder.model_id, vectors.dim, added_ids)
        )
        keywords.delete_paths(stale_paths)
        keywords.add(docs)
        self.derived.commit(catalog, vectors, keywords, generation, manifest, summary)
        self.progress.advance(files=len(batch) + (len(plan.moved) if plan else 0))

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
            parser = self.parsers.parser_for(ft.info.path)
            title = parser.parse(ft.info.path, ft.text).title if parser else None
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

    def _moved_docs(self, catalog: Catalog, plan: ChangePlan) -> list[KeywordDoc]:
        docs: list[KeywordDoc] = []
        for _, _, ft in plan.moved:
            row = catalog.note_by_path(ft.info.path)
            if row is None:
                continue
            meta_keys = self.config.keyword.frontmatter_fields
            docs += [stored_keyword_doc(row, c, meta_keys) for c in catalog.chunks_of(row.id)]
        return docs

    def _prepare(self, ft: FileText) -> _Prepared | str:
        """The parsed and chunked note, or the reason it could not be."""
        path = ft.info.path
        parser = self.parsers.parser_for(path)
        if parser is None:
            return "no parser for this file type"
        try:
            note = parser.parse(path, ft.text)
            chunks = chunk_note(note, self.config.chunking.size, self.config.chunking.overlap)
        except Exception as exc:  # a parser bug must not abort the batch
            return f"parser error: {type(exc).__name__}: {exc}"
        if ft.warnings:
            note = _with_warnings(note, ft.warnings)
        date = note.date.timestamp() if note.date else ft.info.mtime_ns / 1e9
        return _Prepared(ft, note, chunks, [text_hash(c.embed_text) for c in chunks], date)

    def _embed_missing(
        self, catalog: Catalog, prepared: Sequence[_Prepared], summary: IndexSummary
    ) -> None:
        """Embed only texts the cache lacks; each sub-batch is committed at once, so an
        interrupted run never pays for the same chunk again."""
        wanted: dict[str, str] = {}
        for p in prepared:
            for h, c in zip(p.hashes, p.chunks, strict=True):
                wanted.setdefault(h, c.embed_text)
        cached = catalog.cached_hashes(self.embedder.model_id, wanted)
        missing = [(h, t) for h, t in wanted.items() if h not in cached]
        for start in range(0, len(missing), EMBED_BATCH):
            part = missing[start : start + EMBED_BATCH]
            vecs = normalize(self.embedder.embed_texts([t for _, t in part]))
            with catalog.transaction():
                catalog.put_embeddings(
                    self.embedder.model_id, zip((h for h, _ in part), vecs, strict=True)
                )
            summary.chunks_embedded += len(part)
            self.progress.advance(chunks=len(part))


def _resolve_links(catalog: Catalog) -> None:
    """Re-resolve every link: adding or removing one note can change where others point."""
    notes = catalog.notes()
    resolver = LinkResolver((n.path, n.aliases) for n in notes)
    path_of = {n.id: n.path for n in notes}
    updates = []
    for link in catalog.links():
        target = resolver.resolve_link(link.target, link.label, path_of.get(link.source_id))
        if target != link.target_path:
            updates.append((target, link.source_id, link.target, link.label))
    if updates:
        catalog.set_link_targets(updates)


def _with_warnings(note: ParsedNote, warnings: list[str]) -> ParsedNote:
    from dataclasses import replace

    return replace(note, warnings=tuple(note.warnings) + tuple(warnings))
