"""The sentence vectors as a derived index: every sentence unit of every chunk
(``parsers/sentences.py``), keyed ``chunk id << SENTENCE_BITS | unit``.

Searches never scan it: it is a re-scorer, whose ``search`` scores the sentences of the
chunks the branches found (``allowed``; ``SentenceVectors.best``), so it is kept in
int8 codes (a quarter of float32; ``store/vectors.encode``: the scale of a row is its
codes' norm, so it costs no bytes), and each segment keeps its rows in id order, so
that the sentences of a chunk are one slice of it.

A first build embeds them last (``IndexManager``: stage 1 publishes chunk vectors,
keywords and the graph, stage 2 the sentences), so a generation may hold chunks that
have no sentence rows yet: they are listed in ``sentences.pending.json`` beside the list,
``check`` accepts exactly those, and a search scores such a chunk by its own vector
(``stand_in``), as it does a chunk whose text has no sentence.
"""

from __future__ import annotations

import functools
import json
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vaultsearch.store.atomic import atomic_write_json
from vaultsearch.store.catalog import SENTENCE_BITS, Catalog
from vaultsearch.store.derived.base import DerivedSettings, Query, Role
from vaultsearch.store.derived.vectors import VectorPart
from vaultsearch.store.layout import Generation
from vaultsearch.store.segments import Entry, Segment
from vaultsearch.store.vectors import decode, dot_rows, encode, normalize


class SentencePart(VectorPart):
    name = "sentences"
    role: Role = "rescore"
    branch = "sentences"
    label = "the sentence vectors"
    count_key: str | None = "sentences"
    completes = False
    dtype = "int8"
    sorted_rows = True
    approximate = False
    stand_in = "vectors"
    """The index whose score a chunk with no sentence rows yet takes in a search."""

    def __init__(self, generation: Generation, settings: DerivedSettings) -> None:
        super().__init__(generation, settings)
        self.pending_path = self.pending_location(generation)
        self.awaiting: set[int] = read_pending(generation)
        """Chunks whose sentences are not embedded yet (a first build's second stage)."""
        self.defer = False
        """Leave a chunk whose sentence vectors no store holds pending instead of raising
        ``MissingVectors``: set by a run that embeds chunks first."""

    @staticmethod
    def location(generation: Generation) -> Path:
        return generation.root / "sentences.json"

    @staticmethod
    def pending_location(generation: Generation) -> Path:
        return generation.root / "sentences.pending.json"

    @classmethod
    def carry(cls, source: Generation, target: Generation) -> None:
        super().carry(source, target)
        if (pending := cls.pending_location(source)).is_file():
            shutil.copyfile(pending, cls.pending_location(target))

    def open(self, fresh: bool) -> None:
        super().open(fresh)
        if fresh:
            self.awaiting = set()

    def _rows(self, catalog: Catalog, chunk_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        if not self.defer:
            return super()._rows(catalog, chunk_ids)
        ids, out, lost = self._gather(catalog, chunk_ids)
        short = np.unique(self._chunk_of(ids[lost]))
        self.awaiting.update(short.tolist())
        keep = ~np.isin(self._chunk_of(ids), short)
        return ids[keep], out[keep]

    def fill(self, catalog: Catalog, chunk_ids: Iterable[int]) -> int:
        """Rows for these pending chunks from the run's embeddings (stage 2); a chunk
        whose sentences are still not all embedded stays pending. Returns how many left
        the pending list."""
        todo = [c for c in chunk_ids if c in self.awaiting]
        before = len(self.awaiting)
        self.awaiting.difference_update(todo)
        defer, self.defer = self.defer, True
        try:
            self._add(*self._rows(catalog, todo))
        finally:
            self.defer = defer
        return before - len(self.awaiting)

    def split_again(self, chunk_ids: Sequence[int]) -> None:
        """These chunks' rows dropped and the chunks left pending: their text is split
        into other units now, which stage 2 embeds (the caches serve any it has seen)."""
        if self.settings.sentences and len(chunk_ids):
            self._remove(chunk_ids)
            self.awaiting.update(int(c) for c in chunk_ids)

    def level_with(self, catalog: Catalog) -> bool:
        self.awaiting &= set(catalog.chunk_ids())
        return super().level_with(catalog)

    def check(self, catalog: Catalog, recorded: dict[str, Any]) -> list[str]:
        problems = super().check(catalog, recorded)
        if stray := self.awaiting - set(catalog.chunk_ids()):
            problems.append(f"{self.name}: {len(stray)} pending chunks the catalog does not have")
        if recorded.get("sentences_pending", 0) != len(self.awaiting):
            problems.append(
                f"{self.name}: {len(self.awaiting)} chunks pending, the state file says "
                f"{recorded.get('sentences_pending', 0)}"
            )
        return problems

    def commit(self, catalog: Catalog) -> dict[str, Any]:
        if not self.settings.sentences:
            self.awaiting = set()
        counts = super().commit(catalog)
        if self.awaiting:
            atomic_write_json(self.pending_path, sorted(self.awaiting))
        else:
            self.pending_path.unlink(missing_ok=True)
        counts["sentences_pending"] = len(self.awaiting)
        counts["sentences_pending_notes"] = len(catalog.chunks_by_note(self.awaiting))
        return counts

    def _units(self, catalog: Catalog, chunk_ids: Sequence[int]) -> tuple[np.ndarray, list[str]]:
        if not self.settings.sentences:
            return np.zeros(0, dtype=np.int64), []
        return catalog.sentence_units(chunk_ids)

    def _chunk_of(self, row_ids: np.ndarray) -> np.ndarray:
        return row_ids >> SENTENCE_BITS

    def _remove(self, chunk_ids: Sequence[int]) -> None:
        """A chunk's sentences are one id range: found by binary search in each
        segment's ids, not by reading every sentence id of the index."""
        if len(chunk_ids) == 0:
            return
        self.awaiting.difference_update(np.asarray(chunk_ids, dtype=np.int64).tolist())
        chunks = np.unique(np.asarray(chunk_ids, dtype=np.int64))
        lo, hi = chunks << SENTENCE_BITS, (chunks + 1) << SENTENCE_BITS
        found = []
        held = [(np.asarray(s.ids), s.order) for s in self.segments]
        for ids, order in [*held, *((i, np.argsort(i)) for i, _ in self.pending)]:
            ordered = ids if order is None else ids[order]
            starts, ends = np.searchsorted(ordered, lo), np.searchsorted(ordered, hi)
            found += [ordered[a:b] for a, b in zip(starts, ends, strict=True) if b > a]
        if found:
            self._remove_rows(np.concatenate(found))

    def _wanted(self, catalog: Catalog) -> set[int]:
        """Every chunk not pending, unless ``embedding.sentences`` is off: then none."""
        return super()._wanted(catalog) - self.awaiting if self.settings.sentences else set()

    def reader(self, previous: Any = None) -> Any:
        if not self.path.is_file():
            return self.empty(self.settings)
        return SentenceVectors(*self._segments(previous))

    @classmethod
    def empty(cls, settings: DerivedSettings) -> Any:
        return SentenceVectors(settings.dimension)


def read_pending(generation: Generation) -> set[int]:
    """The chunks of this generation still waiting for their sentence vectors."""
    try:
        ids = json.loads(SentencePart.pending_location(generation).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    return {int(i) for i in ids} if isinstance(ids, list) else set()


class SentenceVectors:
    """What a search reads: the segments' rows, found by chunk with a binary search of
    each segment's (mapped) ids, in id order, and read by position from the rows file
    (``Segment.take_rows``). Scoring a few thousand of them by FAISS id lookups cost
    ~2 ms a query at 279,135 sentences; slices cost a fraction of that."""

    def __init__(self, dim: int, segments: Sequence[Segment] = ()) -> None:
        self.dim = dim
        self.segments = list(segments)

    @classmethod
    def from_arrays(cls, ids: Sequence[int] | np.ndarray, vectors: np.ndarray) -> SentenceVectors:
        """One segment held in memory, stored as the writer stores it (tests, tools)."""
        ids = np.asarray(ids, dtype=np.int64)
        order = np.argsort(ids, kind="stable")
        rows = encode(vectors, SentencePart.dtype)[order]
        entry = Entry("memory", len(ids), (), ("", ""))
        return cls(rows.shape[1], [Segment(entry, ids=ids[order], rows=rows)])

    def __len__(self) -> int:
        return sum(s.entry.live for s in self.segments)

    @functools.cached_property
    def _chunks(self) -> list[np.ndarray]:
        return [np.asarray(s.ids) >> SENTENCE_BITS for s in self.segments]

    def _decoded(self, seg: Segment, rows: np.ndarray) -> np.ndarray:
        """These rows of a segment as float32 (bench/sentence_storage.py compares other
        storage by overriding this)."""
        return decode(seg.take_rows(rows))

    def search(self, query: Query, k: int, allowed: Any = None) -> list[tuple[int, float]]:
        """The ``allowed`` chunks by their best sentence (every chunk when None: a full
        scan, which a search never asks for)."""
        if query.vector is None:
            return []
        chunks = np.concatenate(self._chunks) if allowed is None and self._chunks else allowed
        return self.best(query.vector, [] if chunks is None else chunks)[:k]

    def best(
        self, query: np.ndarray, chunk_ids: Sequence[int] | np.ndarray
    ) -> list[tuple[int, float]]:
        """Each given chunk that has sentences, with its best sentence's cosine, best first
        (ties by chunk id)."""
        chunks = np.unique(np.asarray(chunk_ids, dtype=np.int64))
        if not len(chunks) or not len(self):
            return []
        q = normalize(query)[0]
        found: list[np.ndarray] = []
        best: list[np.ndarray] = []
        for seg, owners in zip(self.segments, self._chunks, strict=True):
            lo = np.searchsorted(owners, chunks, "left")
            counts = np.searchsorted(owners, chunks, "right") - lo
            if not counts.any():
                continue
            starts = np.cumsum(counts) - counts
            rows = np.repeat(lo - starts, counts) + np.arange(counts.sum())
            if seg.live_mask is not None:
                rows = rows[seg.live_mask[rows]]
                if not len(rows):
                    continue
            owner = owners[rows]
            first = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
            scores = dot_rows(self._decoded(seg, rows), q)
            found.append(owner[first])
            best.append(np.maximum.reduceat(scores, first))
        if not found:
            return []
        got, top = np.concatenate(found), np.concatenate(best)
        order = np.lexsort((got, -top))
        seen: set[int] = set()
        out = []
        for i in order:  # a chunk in two segments (an id used again) counts its best once
            if (c := int(got[i])) not in seen:
                seen.add(c)
                out.append((c, float(top[i])))
        return out
