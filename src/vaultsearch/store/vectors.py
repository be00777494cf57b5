"""Dense vectors: exact inner product over L2-normalised vectors, keyed by chunk id,
read from the segments of a generation (``segments.py``).

A search scans each segment with FAISS's flat kernel (the one ``IndexFlatIP`` runs)
and merges the results as one flat index over every live row in order would have:
the same scores, and ties broken by position the same way, except a tie at the k-th
cosine, which a search's ``tie_order`` cuts (note path, then chunk id: where a row sits
is not the vault's order once a repair, a merge or an edit moves it; ``store/ties.py``).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from typing import Any

from vaultsearch._runtime import prepare_openmp

prepare_openmp()

import faiss  # noqa: E402
import numpy as np  # noqa: E402

from vaultsearch.store import scanpool  # noqa: E402
from vaultsearch.store.segments import Entry, Segment  # noqa: E402
from vaultsearch.store.ties import TIE_FETCH, TieOrder, settle, wider_read  # noqa: E402

_threads = threading.local()


def _one_openmp_thread() -> None:
    """One query scans on one thread: a second OpenMP thread more than doubled the time of
    a 55k-vector search here (8.4 ms against 3.5 ms) while the other core runs the keyword
    branch. OpenMP keeps this setting per calling thread, so it is made in each thread
    that reads the index: set once at import, it held for the main thread only, and the
    query pool's searches ran on two."""
    if not getattr(_threads, "single", False):
        faiss.omp_set_num_threads(1)
        _threads.single = True


def dot_rows(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Each row's inner product with ``query``, the same for the same row wherever it sits.
    BLAS's matrix-vector product rounds rows apart by their position (35 of 59 stack
    heights gave one repeated row two values): identical notes then fused 1e-7 apart and
    ranked by that noise instead of by path."""
    return np.einsum("ij,j->i", rows, query)


@functools.lru_cache(maxsize=4)
def _half_decoder(dim: int) -> Any:
    return faiss.IndexScalarQuantizer(
        dim, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT
    )


def decode_half(rows: np.ndarray) -> np.ndarray:
    """float16 rows as float32 by FAISS's SIMD decoder (numpy's conversion took 2.4
    times as long)."""
    rows = np.ascontiguousarray(rows, dtype=np.float16)
    _one_openmp_thread()
    return np.asarray(_half_decoder(rows.shape[1]).sa_decode(rows.view(np.uint8)))


UNIT_SLACK = 1e-3
"""A row within this of unit length is stored as it is (float16 rounding moves a norm
by ~1e-4)."""


def encode(vectors: np.ndarray, dtype: str) -> np.ndarray:
    """Unit vectors as a segment stores them: float32, float16, or int8 codes of each
    row scaled by its largest component (``decode`` divides by the codes' norm, so the
    scale needs no bytes of its own)."""
    rows = np.ascontiguousarray(vectors, dtype=np.float32)
    rows = rows.reshape(1, -1) if rows.ndim == 1 else rows
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    # a row decoded from a segment (a repair's) is unit to its storage's precision:
    # divided again, float16 would round some components to their neighbours
    off = np.abs(norms - 1.0) > UNIT_SLACK
    rows = np.where(off, rows / np.where(norms == 0, 1.0, norms), rows).astype(np.float32)
    if dtype != "int8":
        return rows.astype(dtype)
    scale = np.maximum(np.abs(rows).max(axis=1, keepdims=True), 1e-12) / 127.0
    return np.clip(np.rint(rows / scale), -127, 127).astype(np.int8)


def decode(rows: np.ndarray) -> np.ndarray:
    """Stored rows as float32 unit vectors (the inverse of ``encode``, up to its
    rounding)."""
    if rows.dtype == np.float16:
        return decode_half(rows)
    if rows.dtype == np.int8:
        return normalize(np.asarray(rows, dtype=np.float32))
    return np.asarray(rows, dtype=np.float32)


def float_rows(seg: Segment) -> np.ndarray:
    """A segment's rows as float32 for the flat kernel: float32 rows stay mapped; other
    rows are decoded once per segment and process (a segment never changes)."""
    if seg.rows.dtype == np.float32:
        return seg.rows
    cached = seg.__dict__.get("decoded")
    if cached is None:
        cached = seg.__dict__["decoded"] = decode(np.asarray(seg.rows))
    return cached


def normalize(vectors: np.ndarray) -> np.ndarray:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors.reshape(1, -1)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


class SegmentedVectors:
    """What a search reads of the chunk vectors: nothing until the first semantic
    search or score, then only the pages of the mapped segments it touches."""

    def __init__(self, dim: int, segments: Sequence[Segment] = ()) -> None:
        self.dim = dim
        self.segments = list(segments)

    @classmethod
    def from_arrays(cls, ids: Sequence[int] | np.ndarray, vectors: np.ndarray) -> SegmentedVectors:
        """One segment held in memory (tools and tests), normalised as the writer does."""
        rows = normalize(vectors)
        ids = np.asarray(ids, dtype=np.int64)
        entry = Entry("memory", len(ids), (), ("", ""))
        return cls(rows.shape[1], [Segment(entry, ids=ids, rows=rows)])

    def __len__(self) -> int:
        return sum(s.entry.live for s in self.segments)

    def ids(self) -> np.ndarray:
        """Every live id, in position order."""
        parts = [s.live_ids() for s in self.segments]
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)

    def search(
        self,
        query: np.ndarray,
        k: int,
        allowed: np.ndarray | None = None,
        tie_order: TieOrder | None = None,
    ) -> list[tuple[int, float]]:
        """Top-k (chunk id, cosine) pairs; ``allowed`` restricts the scan itself, so that
        a filtered query still gets k results when k exist. Equal cosines at the k-th
        (identical notes: the same text gives the same vector, and a row's score does
        not depend on where it sits) are cut in ``tie_order``; None: by position, as one
        flat index over every live row in order would (tools holding a vector)."""
        if k <= 0 or len(self) == 0 or (allowed is not None and len(allowed) == 0):
            return []
        q = normalize(query)
        wanted = None if allowed is None else np.asarray(allowed, dtype=np.int64)
        scanned = [n for n, seg in enumerate(self.segments) if seg.entry.live]
        # k + 1 a segment: a segment whose (k+1)-th still ties the k-th holds more of
        # the tie than it gave (``_settled``); the top k is the same set as k would give
        read = k + 1 if tie_order is not None else k
        costs = [_scan_cost(self.segments[n]) for n in scanned]
        if len(scanned) > 1 and sum(costs) >= PARALLEL_ROWS:
            for n in scanned:
                _held_here(self.segments[n])
            mine, theirs = scanpool.halves(costs)
            a, b = scanpool.both(
                lambda: self._tops(q, k, read, wanted, [scanned[i] for i in mine]),
                lambda: self._tops(q, k, read, wanted, [scanned[i] for i in theirs]),
            )
            found = a + b
        else:
            found = self._tops(q, k, read, wanted, scanned)
        if not found:
            return []
        if tie_order is not None:
            found = self._settled(q, k, read, wanted, found)
        scores, seg_no, pos, ids = (np.concatenate(a) for a in zip(*found, strict=True))
        # as one flat scan: the earlier position wins a tie for the last place, and tied
        # results come out latest position first
        order = np.lexsort((pos, seg_no, -scores))
        cut = settle(order, ids, scores, k, tie_order)
        top = order[:k]
        top = top[np.lexsort((-pos[top], -seg_no[top], -scores[top]))]
        if cut:  # the tie at the cut, the lowest score kept, in ``tie_order``
            kth = scores[order[k - 1]]
            top[scores[top] == kth] = order[:k][scores[order[:k]] == kth]
        return [(int(ids[i]), float(scores[i])) for i in top]

    def _settled(
        self,
        q: np.ndarray,
        k: int,
        read: int,
        wanted: np.ndarray | None,
        found: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
    ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """``found`` with every segment's rows tied at the search's k-th cosine: a
        segment whose last row read still ties it is read again, wider (``wider_read``,
        up to ``TIE_FETCH`` past k a segment). Reading wider adds no row above the k-th,
        so the k-th cosine stays what the first reads found."""
        every = np.concatenate([scores for scores, *_ in found])
        if len(every) <= k:  # every segment gave fewer than it was asked for
            return found
        kth = float(-np.partition(-every, k - 1)[k - 1])
        out = []
        for part in found:
            asked = max(read, len(part[0]))  # an approximate segment gives all it scored
            while (wider := wider_read(part[0], k, asked, k + TIE_FETCH, kth)) is not None:
                asked = wider
                part = self._tops(q, k, asked, wanted, [int(part[1][0])])[0]
            out.append(part)
        return out

    def _tops(
        self, q: np.ndarray, k: int, read: int, wanted: np.ndarray | None, numbers: list[int]
    ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """The top ``read`` of each of these segments (by number), the search's ``k``
        sizing an approximate segment's candidates: (scores, segment number, positions,
        ids), for ``search`` to merge."""
        _one_openmp_thread()
        found = []
        for n in numbers:
            seg = self.segments[n]
            mask = seg.live_mask
            if wanted is not None:
                hit = np.isin(seg.ids, wanted)
                mask = hit if mask is None else mask & hit
            scores, pos = _segment_top(q, seg, k, mask, read)
            found.append((scores, np.full(len(pos), n), pos, np.asarray(seg.ids)[pos]))
        return found

    def vectors_of(self, ids: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The stored vector of each given id held (first occurrence order); an unknown
        id is left out."""
        wanted, parts = self._held(ids)
        if not parts:
            return np.zeros(0, dtype=np.int64), np.zeros((0, self.dim), dtype=np.float32)
        held_ids = np.concatenate([held for held, _ in parts])
        rows = np.concatenate([rows for _, rows in parts])
        order = _first_occurrence_order(wanted, held_ids)
        return held_ids[order], np.asarray(rows[order], dtype=np.float32)

    def _held(
        self, ids: Sequence[int] | np.ndarray
    ) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
        """The given ids, each once in first occurrence order, and per segment holding
        some of them alive, those ids and their rows decoded."""
        given = np.asarray(ids, dtype=np.int64).reshape(-1)
        _, first = np.unique(given, return_index=True)
        wanted = given[np.sort(first)]
        parts = []
        for seg in self.segments:
            if not len(wanted) or seg.entry.live == 0:
                continue
            held, pos = seg.positions(wanted)
            if len(held):
                parts.append((held, decode(np.asarray(seg.rows[pos]))))
        return wanted, parts

    def score(self, query: np.ndarray, ids: Sequence[int] | np.ndarray) -> list[tuple[int, float]]:
        """The cosine of each given chunk id: the exact score of a chunk that a top-k
        search did not reach. An id the index does not hold is left out."""
        held, cosines = self.scores(query, ids)
        return list(zip(held.tolist(), cosines.tolist(), strict=True))

    def scores(
        self, query: np.ndarray, ids: Sequence[int] | np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """``score`` as two arrays (the ids held, their float32 cosines). Each segment's
        rows are scored where they were decoded and the scores put in order, not the
        rows: the completion scores thousands of rows, and copying them into one array
        and again into order cost more than their dot products (a row's score does not
        depend on where it sits: ``dot_rows``)."""
        wanted, parts = self._held(ids)
        if not parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        q = normalize(query)[0]
        held_ids = np.concatenate([held for held, _ in parts])
        cosines = np.concatenate([dot_rows(rows, q) for _, rows in parts])
        order = _first_occurrence_order(wanted, held_ids)
        return held_ids[order], cosines[order]


def _first_occurrence_order(wanted: np.ndarray, held: np.ndarray) -> np.ndarray:
    """The order that puts ``held`` (some of ``wanted``, each once) in ``wanted``'s order,
    in arrays: the completion scores thousands of chunks a query, and a dict of them
    cost more than their dot products."""
    if len(held) == len(wanted) and np.array_equal(held, wanted):
        return np.arange(len(held))
    sorter = np.argsort(wanted, kind="stable")
    rank = sorter[np.searchsorted(wanted, held, sorter=sorter)]
    return np.argsort(rank, kind="stable")


PARALLEL_ROWS = 20_000
"""From this many rows' worth of scanning (``_scan_cost``) a search splits its segments
between two threads (``scanpool``); below it the hand-over costs more than it saves."""
ANN_COST_ROWS = 50_000
"""What an approximate segment's search costs, as rows of a flat float16 scan: its
graph walk and its 800 candidates read and scored took ~4 ms at a million chunks, a
flat scan ~3 ms per 40,000 rows."""


def _scan_cost(seg: Segment) -> float:
    return ANN_COST_ROWS if seg.entry.ann is not None else seg.entry.live


def _held_here(seg: Segment) -> None:
    """Make what a scan keeps on the segment (its approximate index, its float16 index,
    its decoded rows, its ids and tombstones) on this thread, not the scan thread: glibc
    gives each thread its own heap, and memory freed from the scan thread's (an idle
    reader drops those indexes) stayed there: 762 MB anonymous in an idle reader after
    20 searches at a million chunks against 655 MB before the split (and now)."""
    _ = seg.ids, seg.live_mask
    if seg.entry.ann is not None:
        _ = seg.ann_index
    elif _half_scanned(seg):
        _half_index(seg)
    else:
        float_rows(seg)


def _segment_top(
    query: np.ndarray, seg: Segment, k: int, mask: np.ndarray | None, read: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """A segment's top ``read`` (``k`` when None) (scores, positions): flat, or the
    candidates of its approximate index scored by the flat kernel (the scores a flat
    scan gives them). The candidates are those a top ``k`` asks for, more only when
    ``read`` passes them: a read of k + 1 scores the same rows, and gives them all (the
    graph's candidates; a narrow filter's selected rows are scanned as a flat segment)."""
    read = k if read is None else read
    if seg.entry.ann is None:
        if _half_scanned(seg):
            return _half_top(query, seg, read, mask)
        return _flat_top(query, float_rows(seg), read, mask)
    from vaultsearch.store import ann

    if mask is not None and mask.sum() < ann.MIN_SELECTED * len(mask):
        picked, taken = np.flatnonzero(mask), read  # every selected row: a flat scan
    else:
        picked = ann.candidates(seg.ann_index, query, max(k, -(-read // ann.OVERSAMPLE)), mask)
        # a read past k (a search settling ties) takes every candidate it scored: read
        # wider, it would walk the graph again for the same candidates (at a million
        # chunks 17 of 50 searches did, 1 ms a search more on average)
        taken = max(read, len(picked)) if read > k else k
    scores, at = _flat_top(query, _candidate_rows(seg, picked), taken, None)
    return scores, picked[at]


HALF_SCAN_ROWS = 4096
"""From this many float16 rows a flat segment is scanned in float16 (``_half_top``)
rather than decoded to float32 and scanned: a search reads half the bytes, and holds no
float32 copy of the segment while warm."""
HALF_SLACK = 1e-3
"""More than twice the most a float16 scan's inner product can differ from the flat
kernel's over the same floats (the sum of 384 float32 products taken in another order
moves it by under 5e-5; ~3e-8 measured)."""


def _half_scanned(seg: Segment) -> bool:
    """Whether a flat segment is scanned in float16 (``_half_top``): what a search of it
    uses and ``_held_here`` makes ahead of the split."""
    return seg.rows.dtype == np.float16 and len(seg.rows) >= HALF_SCAN_ROWS


def _half_top(
    query: np.ndarray, seg: Segment, k: int, mask: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """``_flat_top`` over a float16 segment: FAISS's float16 scan finds every row that may
    reach the top k (the rows within ``HALF_SLACK`` of its k-th score), and the flat
    kernel scores those alone, so the scores are the flat scan's own. Rows tied for the
    last place are taken earliest position first, as the merge of segments takes them;
    the flat kernel's own pick among them (k >= 100 runs FAISS's reservoir) depends on
    every row it passed. When the rows near the k-th score outnumber the candidates asked
    for (identical notes tie), more are asked for."""
    selected = len(seg.rows) if mask is None else int(mask.sum())
    k = min(k, selected)
    if k <= 0:
        return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.int64)
    from vaultsearch.store import ann

    index = _half_index(seg)
    params = faiss.SearchParameters()
    _kept = ann.restrict(params, mask)
    want = 2 * k
    while True:
        want = min(want, selected)
        approx, labels = index.search(query.reshape(1, -1), want, params=params)
        approx, labels = approx[0], labels[0]
        if want >= selected or approx[want - 1] < approx[k - 1] - HALF_SLACK:
            break
        want *= 4
    # a row whose float16 score is below the k-th's by more than the slack cannot reach
    # the k-th's flat score (the loop's own bound): of the 2k asked for, ~k are scored
    picked = np.sort(labels[(labels >= 0) & (approx >= approx[k - 1] - HALF_SLACK)])
    rows = decode(_half_rows(index, seg.rows.shape[1])[picked])
    scores, at = _flat_top(query, rows, len(picked), None)
    top = np.lexsort((picked[at], -scores))[:k]
    return scores[top], picked[at][top]


def _half_rows(index: Any, dim: int) -> np.ndarray:
    """The float16 index's codes as the segment's rows (a view, not a copy: they are
    the rows' bytes), for its candidates to be read from memory the scan holds anyway
    rather than from the file, a ``pread`` each (~100 a segment a query). The caller
    holds ``index`` while it reads the view."""
    codes = faiss.rev_swig_ptr(index.codes.data(), index.codes.size())
    return np.asarray(codes).view(np.float16).reshape(-1, dim)


def _half_index(seg: Segment) -> Any:
    """The segment's float16 rows as FAISS's float16 flat index (its codes are these
    rows' bytes, copied once per segment and process, dropped with the pages when idle:
    ``Segment.release_pages``)."""
    index = seg.__dict__.get("half_index")
    if index is None:
        rows = np.ascontiguousarray(seg.rows, dtype=np.float16)
        index = faiss.IndexScalarQuantizer(
            rows.shape[1], faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT
        )
        index.add_sa_codes(rows.view(np.uint8))
        seg.__dict__["half_index"] = index
    return index


def _candidate_rows(seg: Segment, picked: np.ndarray) -> np.ndarray:
    """The candidates' rows as float32, decoded alone: a segment big enough for an
    approximate index is too big to hold decoded (1.5 GB at a million float16 rows),
    and a row decodes to the same floats alone as in its segment."""
    cached = seg.__dict__.get("decoded")
    if cached is not None:
        return np.asarray(cached[picked])
    return decode(seg.take_rows(picked))


def _flat_top(
    query: np.ndarray, rows: np.ndarray, k: int, mask: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """FAISS's flat inner-product top-k over ``rows`` (mapped rows are not copied),
    restricted to ``mask`` by a bitmap selector: (scores, positions)."""
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    n, dim = rows.shape
    k = min(k, n if mask is None else int(mask.sum()))
    if k <= 0:
        return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.int64)
    distances = np.empty((1, k), dtype=np.float32)
    labels = np.empty((1, k), dtype=np.int64)
    bitmap = None if mask is None else np.packbits(mask, bitorder="little")
    selector = None if bitmap is None else faiss.IDSelectorBitmap(n, faiss.swig_ptr(bitmap))
    faiss.knn_inner_product(
        faiss.swig_ptr(query), faiss.swig_ptr(rows), dim, 1, n, k,
        faiss.swig_ptr(distances), faiss.swig_ptr(labels), selector,
    )  # fmt: skip
    keep = labels[0] >= 0
    return distances[0][keep], labels[0][keep]
