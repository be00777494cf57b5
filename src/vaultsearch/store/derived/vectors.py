"""The chunk vectors as a derived index: one vector per catalog chunk, from the
embedding store, in immutable segments (``store/segments.py``).

An update tombstones the rows of removed chunks in the list and writes the added rows
as one new segment; when ``TIER`` neighbours are of like size, or past ``MAX_DEAD``
dead rows, the commit merges segments into a new one. Every file it writes is new and in the
unpublished generation, so a kill at any point leaves the published one whole.

The sentence index (``sentences.py``) is this class with several rows per chunk: it
overrides the hooks (``location``, ``_rows``, ``_chunk_of``, ``_remove``, ``_wanted``),
its role and ``reader``.

A search reads it as the semantic branch: the query vector's nearest chunks, and the
cosine of any chunk a top-k missed (``VectorReader.score``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vaultsearch.store import ann
from vaultsearch.store.catalog import Catalog
from vaultsearch.store.derived.base import Batch, DerivedSettings, Query, Role
from vaultsearch.store.layout import Generation
from vaultsearch.store.segments import (
    Entry,
    Segment,
    SegmentList,
    file_sha256,
    folder_of,
    link_segments,
    merge_plan,
    needs_write,
    npy_shape,
    open_segments,
    read_list,
    remove_unlisted,
    reuse_mapped,
    write_ann,
    write_list,
    write_segment,
)
from vaultsearch.store.vectors import SegmentedVectors, decode, encode, float_rows


class MissingVectors(Exception):
    """Rows a derived vector index needs that no store holds (a damaged segment whose
    vectors the per-user cache no longer has): only the files can give them back."""


@dataclass
class Supply:
    """Where a vector index finds the rows it must write besides the run's embeddings:
    ``donor``, the generation being rebuilt (the same catalog, so the same ids), and the
    per-user cache (``store/embedcache.py``)."""

    cache: Any = None
    donor: Generation | None = None
    _opened: dict[str, list[Segment]] = dataclasses.field(default_factory=dict)

    def donor_segments(self, location: Any, dtype: str) -> list[Segment]:
        """The donor's segments of one index, its unreadable ones left out (their digests
        are checked when a row is read)."""
        if self.donor is None:
            return []
        path = location(self.donor)
        if str(path) not in self._opened:
            segments: list[Segment] = []
            try:
                listing = read_list(path)
                if listing.dtype == dtype:
                    folder = folder_of(path)
                    segments = [
                        Segment(e, folder)
                        for e in listing.segments
                        if all(p.is_file() for p in e.files(folder))
                    ]
            except ValueError:
                pass
            self._opened[str(path)] = segments
        return self._opened[str(path)]


class VectorPart:
    name = "vectors"
    role: Role = "branch"
    branch = "semantic"
    modes = frozenset({"hybrid", "semantic"})
    label = "the vector index"
    count_key: str | None = "vectors"
    completes = True
    analyses = False
    dtype = "float16"
    """How a row is stored (``store/vectors.encode``): float16 ranks as float32 did
    (bench/topk_dump.py), in half the bytes."""
    approximate = True
    """Whether a large segment gets an approximate index (``store/ann.py``)."""
    sorted_rows = False
    """Whether a segment keeps its rows in id order (else in the order they were added,
    which is the order a search breaks ties by)."""

    def __init__(self, generation: Generation, settings: DerivedSettings) -> None:
        self.path = self.location(generation)
        self.folder = folder_of(self.path)
        self.number = generation.number
        self.settings = settings
        self.segments: list[Segment] = []
        self.pending: list[tuple[np.ndarray, np.ndarray]] = []
        self.supply = Supply()

    @staticmethod
    def location(generation: Generation) -> Path:
        """The list of the segments (in ``segments/``) and their tombstones."""
        return generation.root / "vectors.json"

    @classmethod
    def written(cls, generation: Generation) -> bool:
        return cls.location(generation).is_file()

    @classmethod
    def carry(cls, source: Generation, target: Generation) -> None:
        link_segments(cls.location(source), cls.location(target))

    @classmethod
    def status(cls, reader: Any) -> dict[str, int]:
        return {cls.name: len(reader)}

    def counts(self, state: dict[str, Any]) -> dict[str, int]:
        """From the list alone: its live rows."""
        return {self.name: len(read_list(self.path)) if self.path.is_file() else 0}

    def _units(self, catalog: Catalog, chunk_ids: Sequence[int]) -> tuple[np.ndarray, list[str]]:
        """The row ids these chunks put in the index, and the hash of each row's text."""
        return catalog.chunk_hashes(chunk_ids)

    def _rows(self, catalog: Catalog, chunk_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The (row id, stored row) pairs these chunks put in the index. The index holds
        the only copy of a vector, so a row comes, in this order, from the generation
        being repaired (the same catalog's ids, its bytes as they were), the run's own
        embeddings (computed, or found in the per-user cache, this run), the per-user
        cache; ``MissingVectors`` when none holds it (the writer then rebuilds from the
        files, embedding what it must)."""
        ids, out, lost = self._gather(catalog, chunk_ids)
        if lost.any():
            raise MissingVectors(f"{self.name}: {int(lost.sum())} vectors are in no store")
        return ids, out

    def _gather(
        self, catalog: Catalog, chunk_ids: Sequence[int]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``_rows`` with the rows no store holds marked (``lost``) instead of raised."""
        ids, hashes = self._units(catalog, chunk_ids)
        out = np.zeros((len(ids), self.settings.dimension), dtype=self.dtype)
        todo = np.ones(len(ids), dtype=bool)
        for seg in self.supply.donor_segments(self.location, self.dtype):
            try:
                held, pos = seg.positions(ids[todo])
                if len(held):
                    at = np.searchsorted(ids, held)
                    out[at] = np.asarray(seg.rows[pos])
                    todo[at] = False
            except Exception:  # a damaged donor segment: its rows come from elsewhere
                continue
        need = [hashes[i] for i in np.flatnonzero(todo)]
        key = self.settings.embedding_key
        found = catalog.embedding_blobs(key, need) if need else {}
        if self.supply.cache is not None and (rest := [h for h in need if h not in found]):
            found.update(self.supply.cache.get(key, rest))
        lost = np.zeros(len(ids), dtype=bool)
        width = 4 * self.settings.dimension
        good: list[int] = []
        for i in np.flatnonzero(todo):
            blob = found.get(hashes[i])
            if blob is None or len(blob) != width:
                lost[i] = True
            else:
                good.append(int(i))
        # a block at a time, not row by row (126 of 861 profiled seconds of a 45k-chunk
        # build): each row's bytes are the same either way
        for start in range(0, len(good), 65536):
            block = good[start : start + 65536]
            blobs = b"".join(found[hashes[i]] for i in block)
            rows = np.frombuffer(blobs, dtype=np.float32).reshape(len(block), -1)
            out[block] = self._stored(rows)
        return ids, out, lost

    def _chunk_of(self, row_ids: np.ndarray) -> np.ndarray:
        return row_ids

    def _wanted(self, catalog: Catalog) -> set[int]:
        """The chunks that must have rows."""
        return set(catalog.chunk_ids())

    def _stored(self, vectors: np.ndarray) -> np.ndarray:
        """Vectors as a segment stores them."""
        rows = encode(vectors, self.dtype)
        if rows.shape[1] != self.settings.dimension:
            raise ValueError(
                f"vector dimension {rows.shape[1]} != index dimension {self.settings.dimension}"
            )
        return rows

    def open(self, fresh: bool) -> None:
        self.segments, self.pending = [], []
        if fresh or not self.path.is_file():
            return
        listing, segments = open_segments(self.path)
        if (listing.dim, listing.dtype) != (self.settings.dimension, self.dtype):
            raise ValueError(
                f"{self.path.name}: {listing.dim} x {listing.dtype}, "
                f"not {self.settings.dimension} x {self.dtype}"
            )
        self.segments = segments

    def _ids(self) -> np.ndarray:
        parts = [s.live_ids() for s in self.segments] + [ids for ids, _ in self.pending]
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)

    def __len__(self) -> int:
        return sum(s.entry.live for s in self.segments) + sum(len(i) for i, _ in self.pending)

    def _add(self, ids: np.ndarray, rows: np.ndarray) -> None:
        """Rows as ``_rows`` gives them (stored already)."""
        if len(ids):
            self.pending.append((np.asarray(ids, dtype=np.int64), rows))

    def _remove_rows(self, row_ids: np.ndarray) -> None:
        """Tombstone these row ids in the segments, drop them from the rows not written."""
        if not len(row_ids):
            return
        gone = np.unique(np.asarray(row_ids, dtype=np.int64))
        for n, seg in enumerate(self.segments):
            held, _ = seg.positions(gone)
            if len(held):
                dead = tuple(sorted({*seg.entry.dead, *held.tolist()}))
                entry = dataclasses.replace(seg.entry, dead=dead)
                self.segments[n] = Segment(entry, self.folder, ids=seg.ids)
        self.pending = [
            (ids[keep], rows[keep])
            for ids, rows in self.pending
            if (keep := ~np.isin(ids, gone)).any()
        ]

    def level_with(self, catalog: Catalog) -> bool:
        want = self._wanted(catalog)
        have = set(self._chunk_of(self._ids()).tolist())
        extra, missing = sorted(have - want), sorted(want - have)
        if not extra and not missing:
            return False
        self._remove(extra)
        self._add(*self._rows(catalog, missing))
        return True

    def _remove(self, chunk_ids: Sequence[int]) -> None:
        """Here a row id is the chunk id: no need to read the index's ids."""
        self._remove_rows(np.asarray(chunk_ids, dtype=np.int64))

    def apply(self, batch: Batch) -> None:
        self._remove(batch.removed_chunks)
        self._add(*self._rows(batch.catalog, list(batch.added_chunks)))

    def commit(self, catalog: Catalog) -> dict[str, Any]:
        items = list(self.segments)
        if self.pending:
            ids = np.concatenate([i for i, _ in self.pending])
            rows = np.concatenate([r for _, r in self.pending])
            items.append(Segment(Entry("", len(ids), (), ("", "")), ids=ids, rows=rows))
        entries: list[Entry] = []
        for group in merge_plan([s.entry for s in items]):
            parts = [items[i] for i in group]
            if len(parts) == 1 and parts[0].entry.name and not needs_write(parts[0].entry):
                entries.append(self._approximate(parts[0]))
                continue
            entries.append(self._approximate(self._write(parts)))
        listing = SegmentList(self.settings.dimension, self.dtype, tuple(entries))
        write_list(self.path, listing)
        remove_unlisted(self.folder, self.name, listing)
        self.segments = [Segment(e, self.folder) for e in entries]
        self.pending = []
        return {self.name: len(listing)}

    def _approximate(self, seg: Segment) -> Entry:
        """The segment's entry with the approximate index the settings want beside it:
        written once when it is missing (a new segment, or the setting changed), dropped
        when it is not wanted."""
        kind = ann.resolve(self.settings.vector_index) if self.approximate else None
        if kind is None or seg.entry.rows <= self.settings.ann_threshold:
            return dataclasses.replace(seg.entry, ann=None)
        if seg.entry.ann is not None and seg.entry.ann[0] == kind:
            return seg.entry
        return write_ann(self.folder, seg.entry, kind, float_rows(seg))

    def _write(self, parts: list[Segment]) -> Segment:
        """One new segment of the live rows of ``parts``, in their order."""
        ids = np.concatenate([np.asarray(p.live_ids()) for p in parts]).astype(np.int64)
        rows = np.concatenate(
            [np.asarray(p.rows if p.live_mask is None else p.rows[p.live_mask]) for p in parts]
        )
        if self.sorted_rows:
            order = np.argsort(ids, kind="stable")
            ids, rows = ids[order], rows[order]
        seq = 0
        while (name := f"{self.name}-{self.number:06d}-{seq:03d}") and any(
            (self.folder / f"{name}{suffix}").exists() for suffix in (".ids.npy", ".rows.npy")
        ):
            seq += 1
        return Segment(write_segment(self.folder, name, ids, rows), self.folder, ids, rows)

    def check(self, catalog: Catalog, recorded: dict[str, Any]) -> list[str]:
        try:
            listing = read_list(self.path)
        except ValueError as exc:
            return [f"{self.name}: unreadable ({str(exc)[:160]})"]
        if (listing.dim, listing.dtype) != (self.settings.dimension, self.dtype):
            return [
                f"{self.name}: {listing.dim} x {listing.dtype} vectors, not "
                f"{self.settings.dimension} x {self.dtype}"
            ]
        problems = self._file_problems(listing)
        if problems:
            return problems
        try:
            _, segments = open_segments(self.path)
            for seg in segments:
                _check_shape(seg, listing)
                if seg.entry.ann is not None and seg.ann_index.ntotal != seg.entry.rows:
                    raise ValueError(f"{seg.entry.name}: its {seg.entry.ann[0]} index differs")
        except Exception as exc:
            return [f"{self.name}: unreadable ({type(exc).__name__}: {str(exc)[:120]})"]
        for seg in segments:
            if not set(seg.entry.dead) <= set(np.asarray(seg.ids).tolist()):
                problems.append(f"{self.name}: {seg.entry.name} tombstones rows it does not hold")
            if self.sorted_rows and seg.order is not None:
                problems.append(f"{self.name}: {seg.entry.name} rows are not in id order")
        ids = np.concatenate([s.live_ids() for s in segments]) if segments else np.zeros(0)
        if len(ids) != len(set(ids.tolist())):
            problems.append(f"{self.name}: duplicate ids")
        want = self._wanted(catalog)
        have = set(self._chunk_of(ids.astype(np.int64)).tolist())
        if extra := have - want:
            problems.append(
                f"{self.name}: {len(extra)} entries for chunks the catalog does not have"
            )
        if missing := want - have:
            problems.append(f"{self.name}: {len(missing)} catalog chunks missing")
        if self.name in recorded and recorded[self.name] != len(listing):
            problems.append(
                f"{self.name}: {len(listing)} rows, the state file says {recorded[self.name]}"
            )
        if not problems and not self._rows_sound(segments):
            problems.append(f"{self.name}: a vector is not a unit vector")
        return problems

    def _file_problems(self, listing: SegmentList) -> list[str]:
        """Every listed file there, each byte as written (their digests are in the list)."""
        problems = []
        for entry in listing.segments:
            digests = (*entry.sha256, *([] if entry.ann is None else [entry.ann[1]]))
            for path, digest in zip(entry.all_files(self.folder), digests, strict=True):
                if not path.is_file():
                    problems.append(f"{self.name}: segment file {path.name} is missing")
                elif file_sha256(path) != digest:
                    problems.append(
                        f"{self.name}: segment file {path.name} differs from the one written"
                    )
        return problems

    def _rows_sound(self, segments: list[Segment]) -> bool:
        """Every live row decodes to a finite unit vector. No other copy of the vectors
        is kept to compare with: a changed byte is found by the segment's digest."""
        for seg in segments:
            rows = np.asarray(seg.rows if seg.live_mask is None else seg.rows[seg.live_mask])
            for start in range(0, len(rows), 65536):
                norms = np.linalg.norm(decode(rows[start : start + 65536]), axis=1)
                if not np.all(np.abs(norms - 1.0) < 1e-2):
                    return False
        return True

    def damage(self, state: dict[str, Any]) -> str | None:
        """Why a search cannot trust these vectors, found at open without reading a row:
        the list gone or unreadable, a segment file missing or of another length. Changed
        bytes inside a segment are ``check``'s to find (its digests are in the list)."""
        if not self.path.is_file():
            return f"{self.path.name} is missing" if state.get(self.name) else None
        try:
            listing, segments = open_segments(self.path)
            for seg in segments:
                for path, shape in zip(
                    seg.entry.files(self.folder),
                    ((seg.entry.rows,), (seg.entry.rows, listing.dim)),
                    strict=True,
                ):
                    if (found := npy_shape(path)) != shape:
                        return f"{path.name} holds {found}, the list says {shape}"
        except Exception as exc:
            return f"{self.path.name}: {str(exc)[:160]}"
        return None

    def reader(self, previous: Any = None) -> Any:
        """``previous``: an older generation's reader, whose mapped segments this one
        takes where the lists name the same (``segments.reuse_mapped``)."""
        if not self.path.is_file():
            return self.empty(self.settings)
        dim, segments = self._segments(previous)
        return VectorReader(dim, segments)

    def _segments(self, previous: Any) -> tuple[int, list[Segment]]:
        listing, segments = open_segments(self.path)
        held = getattr(previous, "segments", None)
        if held and getattr(previous, "dim", None) == listing.dim:
            segments = reuse_mapped(segments, held)
        return listing.dim, segments

    @classmethod
    def empty(cls, settings: DerivedSettings) -> Any:
        return VectorReader(settings.dimension)


class VectorReader:
    """The chunk vectors as a search reads them: by a ``Query`` (the contract), or by a
    vector (``nearest``, ``vectors_of``: tools that hold one, such as similar notes)."""

    def __init__(self, dim: int, segments: Sequence[Segment] = ()) -> None:
        self.vectors = SegmentedVectors(dim, segments)
        self.dim = dim

    @property
    def segments(self) -> list[Segment]:
        return self.vectors.segments

    def release_pages(self) -> None:
        for seg in self.segments:
            seg.release_pages()

    def __len__(self) -> int:
        return len(self.vectors)

    def search(self, query: Query, k: int, allowed: Any = None) -> list[tuple[int, float]]:
        if query.vector is None:
            return []
        return self.vectors.search(query.vector, k, allowed, query.tie_order)

    def score(self, query: Query, ids: Sequence[int] | np.ndarray) -> list[tuple[int, float]]:
        """The exact cosine of each given chunk a top-k search did not reach."""
        return [] if query.vector is None else self.vectors.score(query.vector, ids)

    def scores(
        self, query: Query, ids: Sequence[int] | np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """``score`` as two arrays, the ids held and their cosines: the completion scores
        thousands of chunks a query and keeps them as arrays (``search/chunkscores.py``)."""
        if query.vector is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        return self.vectors.scores(query.vector, ids)

    def nearest(self, vector: np.ndarray, k: int, allowed: Any = None) -> list[tuple[int, float]]:
        return self.vectors.search(vector, k, allowed)

    def vectors_of(self, ids: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.vectors.vectors_of(ids)

    def ids(self) -> np.ndarray:
        return self.vectors.ids()


def _check_shape(seg: Segment, listing: SegmentList) -> None:
    ids, rows = seg.ids, seg.rows
    if ids.dtype != np.int64 or ids.ndim != 1:
        raise ValueError(f"{seg.entry.name}: ids are {ids.dtype} x {ids.ndim}")
    if rows.shape != (seg.entry.rows, listing.dim) or rows.dtype != np.dtype(listing.dtype):
        raise ValueError(f"{seg.entry.name}: rows are {rows.dtype} {rows.shape}")
