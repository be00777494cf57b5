"""One batch of files made ready for the catalog: each file parsed and chunked
(``prepare``), then every text no store holds yet embedded (``BatchEmbedder``). The
IndexManager decides what goes in a batch and commits it; this is the part that calls
the parser child and the model."""

from __future__ import annotations

import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

import numpy as np

from vaultsearch.config import ChunkingConfig, EmbeddingConfig
from vaultsearch.embedding import Embedder, text_hash
from vaultsearch.errors import FileUnreadableError
from vaultsearch.fault import OURS, Failure
from vaultsearch.indexing.changes import FileText
from vaultsearch.indexing.chunker import chunk_capped
from vaultsearch.indexing.parsebox import ParseBox
from vaultsearch.indexing.progress import Progress, working_on
from vaultsearch.indexing.sources import SourceSet
from vaultsearch.indexing.summary import IndexSummary
from vaultsearch.models import Chunk, ParsedNote
from vaultsearch.parsers.sentences import unit_texts
from vaultsearch.store.catalog import Catalog
from vaultsearch.store.embedcache import EmbeddingCache
from vaultsearch.store.salvage import SalvagedEmbeddings
from vaultsearch.store.vectors import normalize

EMBED_BATCH = 128


class Cancelled(Exception):
    """Raised between two model calls when a cancel was asked for."""


@dataclass(slots=True)
class Prepared:
    file: FileText
    note: ParsedNote
    chunks: list[Chunk]
    hashes: list[str]
    date: float


def prepare(
    ft: FileText, sources: SourceSet, chunking: ChunkingConfig, box: ParseBox | None
) -> Prepared | Failure:
    """The parsed and chunked note, or why it could not be and whose fault that is:
    the file's when a parser or the parse box says so (``FileUnreadableError``), ours
    for any other exception, raised by our own code on bytes already read."""
    path = ft.info.path
    if sources.parser_for(path) is None:
        return Failure("no parser for this file type")
    try:
        note = sources.parse(path, ft.text, ft.data, box)
        assert note is not None
        chunks, capped = chunk_capped(
            note, chunking.size, chunking.overlap, chunking.max_chunks_per_note
        )
    except FileUnreadableError as exc:
        return Failure(exc.message, exc.fault)
    except Exception as exc:  # a parser bug must not abort the batch
        return Failure(f"parser error: {type(exc).__name__}: {exc}", OURS)
    warnings = [*ft.warnings, *([capped] if capped else [])]
    if warnings:
        note = replace(note, warnings=tuple(note.warnings) + tuple(warnings))
    date = note.date.timestamp() if note.date else ft.info.mtime_ns / 1e9
    return Prepared(ft, note, chunks, [text_hash(c.embed_text) for c in chunks], date)


class BatchEmbedder:
    """The model, the per-user cache and the cancel flag of one IndexManager."""

    def __init__(self, embedder: Embedder, cache: EmbeddingCache, cancel: threading.Event) -> None:
        self.embedder = embedder
        self.cache = cache
        self.cancel = cancel
        self.from_cache = 0
        """Texts this run took from the per-user cache (reported by a repair)."""

    def embed_missing(
        self,
        catalog: Catalog,
        prepared: Sequence[Prepared],
        summary: IndexSummary,
        files: int,
        progress: Progress,
        settings: EmbeddingConfig,
        sources: Sequence[Catalog | SalvagedEmbeddings] = (),
        sentences: bool = True,
    ) -> float:
        """Embed only texts no store holds (this catalog, the catalogs a rebuild may
        reuse, the per-user cache); each sub-batch is committed at once, so an
        interrupted run never pays for the same chunk again; when the model fails (an
        endpoint gone), what it answered before is committed first. The progress bar moves
        after every model call, its files credited in proportion to the chunks embedded
        (returned, so the commit credits the rest). ``sentences`` False: the chunks only
        (a first build's first stage; ``embed_sentences`` does the rest later), with the
        sentence vectors the reused catalogs hold taken as well (``_reuse``)."""
        wanted: dict[str, str] = {}
        path_of: dict[str, str] = {}
        later: set[str] = set()
        chunk_hashes = {h for p in prepared for h in p.hashes}
        for p in prepared:
            for h, c in zip(p.hashes, p.chunks, strict=True):
                wanted.setdefault(h, c.embed_text)
                path_of.setdefault(h, p.note.path)
                for unit in unit_texts(c.text, p.note.kind) if settings.sentences else ():
                    u = text_hash(unit)
                    if not sentences:
                        later.add(u)
                        continue
                    wanted.setdefault(u, unit)
                    path_of.setdefault(u, p.note.path)
        if later and sources:
            self._reuse(catalog, later.difference(wanted), sources)
        return self._embed(
            catalog, wanted, path_of, chunk_hashes, summary, files, progress, settings, sources
        )

    def _reuse(
        self,
        catalog: Catalog,
        hashes: set[str],
        sources: Sequence[Catalog | SalvagedEmbeddings],
    ) -> None:
        """The vectors of a first stage's sentences that the catalogs a rebuild reuses
        hold, put in this run's table, where the sentence index takes them at once.
        Stage 2 runs after the rebuild is published, which deletes an older index's
        catalog (``remove_legacy_files``): there only the per-user cache or the model
        could answer, and a cache that is off or cold sent every sentence to the model
        again. A damaged catalog (read row by row) is left to stage 2 and the caches."""
        found, _ = self._from_catalogs(catalog, hashes, sources)
        if found:
            with catalog.run_embeddings():
                catalog.put_embedding_blobs(self.embedder.cache_key, found)

    def _from_catalogs(
        self,
        catalog: Catalog,
        hashes: Collection[str],
        sources: Sequence[Catalog | SalvagedEmbeddings],
    ) -> tuple[dict[str, bytes], list[str]]:
        """The vectors of ``hashes`` this run's catalog lacks that the reused catalogs
        hold (put in the per-user cache too), and the hashes still missing."""
        key = self.embedder.cache_key
        have = catalog.cached_hashes(key, hashes)
        need = [h for h in hashes if h not in have]
        found: dict[str, bytes] = {}
        for source in sources:
            if need and isinstance(source, Catalog):
                found.update(source.embedding_blobs(key, need))
                need = [h for h in need if h not in found]
        if found:
            self.cache.put(key, {h: np.frombuffer(v, dtype=np.float32) for h, v in found.items()})
        return found, need

    def embed_sentences(
        self,
        catalog: Catalog,
        texts: dict[str, str],
        summary: IndexSummary,
        progress: Progress,
        settings: EmbeddingConfig,
    ) -> None:
        """A first build's second stage: these sentence texts (by hash), those no store
        holds sent to the model, committed as ``embed_missing`` commits."""
        label = {h: "sentence vectors" for h in texts}
        self._embed(catalog, texts, label, set(), summary, 0, progress, settings)

    def _embed(
        self,
        catalog: Catalog,
        wanted: dict[str, str],
        path_of: dict[str, str],
        chunk_hashes: set[str],
        summary: IndexSummary,
        files: int,
        progress: Progress,
        settings: EmbeddingConfig,
        sources: Sequence[Catalog | SalvagedEmbeddings] = (),
    ) -> float:
        key = self.embedder.cache_key
        found, need = self._from_catalogs(catalog, wanted, sources)
        if need:
            cached = self.cache.get(key, need)
            self.from_cache += len(cached)
            found.update(cached)
            need = [h for h in need if h not in found]
        for source in sources:
            if need and not isinstance(source, Catalog):
                found.update(source.embedding_blobs(key, need))
                need = [h for h in need if h not in found]
        if found:
            with catalog.run_embeddings():
                catalog.put_embedding_blobs(key, found)
        # by length: each model call then pads its texts to nearly the same length
        missing = sorted(((h, wanted[h]) for h in need if h not in found), key=_text_len)
        step = max(1, settings.batch_size)
        credited = 0.0
        if missing:
            working_on(progress, path_of[missing[0][0]], chunks=len(missing))
        for start in range(0, len(missing), EMBED_BATCH):
            part = missing[start : start + EMBED_BATCH]
            vecs = []
            failure: Exception | None = None
            for at in range(0, len(part), step):
                if self.cancel.is_set():
                    part = part[:at]
                    break
                piece = part[at : at + step]
                working_on(progress, path_of[piece[0][0]])
                try:
                    vecs.append(self.embedder.embed_texts([t for _, t in piece]))
                except Exception as exc:  # keep what the model answered before it failed
                    part, failure = part[:at], exc
                    break
                share = files * len(piece) / len(missing)
                credited += share
                progress.advance(files=share, chunks=len(piece))
            if not part:
                raise failure or Cancelled()
            with catalog.run_embeddings():
                vectors = normalize(np.vstack(vecs))
                catalog.put_embeddings(key, zip((h for h, _ in part), vectors, strict=True))
            self.cache.put(key, dict(zip((h for h, _ in part), vectors, strict=True)))
            summary.chunks_embedded += sum(h in chunk_hashes for h, _ in part)
            summary.sentences_embedded += sum(h not in chunk_hashes for h, _ in part)
            if failure is not None:
                raise failure
            if self.cancel.is_set():
                raise Cancelled
        return credited


def _text_len(item: tuple[str, str]) -> int:
    return len(item[1])
