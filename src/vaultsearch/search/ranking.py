"""From each branch's retrieved chunks to ranked notes: the one fusion the product runs.

Pure over its inputs (branch results, a read-only view of the index, the settings and
the clock), so the tuning bench re-fuses cached branch results with exactly this code,
graph boost and recency included, instead of a copy that drifts from what ships.

A note is scored per branch by its best chunk (plus ``chunk_share`` of its other
chunks' scores) before the branches are fused: a long note is not several candidates,
and a note matching in two chunks of two branches is still one piece of evidence each.
"""

from __future__ import annotations

import bisect
import functools
import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from vaultsearch.config import SearchConfig
from vaultsearch.models import BranchPart, Explain
from vaultsearch.search.filters import NoteMeta
from vaultsearch.search.fusion import graph_boost, normalise, recency_curve, tied_ranks

FUSION_METHODS = ("convex", "rrf")
NORMALISATIONS = ("tm2c2", "minmax")

SOURCE_BOUND_GIFTS = True
"""Whether link gifts are kept from lifting a note over a better-scored note of another
source (``bound_gifts``)."""

CUT = 1e-9
"""A cut gift leaves its note this far below the other source's note it may not pass."""

NAME_MATCH = 1.0
"""Added for an exact title or alias: more than any fused score (convex tops at 1)."""

BranchHits = Sequence[tuple[int, float]]
"""One branch's (chunk id, score) pairs, best first."""


class FusionView(Protocol):
    """What fusion reads of an index generation (a ``Snapshot`` is one)."""

    @property
    def notes(self) -> Mapping[int, NoteMeta]: ...
    @property
    def note_of_chunk(self) -> Mapping[int, int]: ...
    @property
    def note_by_path(self) -> Mapping[str, int]: ...
    def first_chunks(self, note_id: int) -> list[int]: ...


@dataclass(frozen=True, slots=True)
class FusionSettings:
    method: str = "convex"
    weights: Mapping[str, float] = field(default_factory=dict)
    rrf_k: float = 60.0
    normalisation: str = "tm2c2"
    chunk_share: float = 0.0
    graph_share: float = 0.0
    graph_top: int = 10
    graph_lead: float = 0.0
    """The share the best candidate passes to its neighbours (``graph_boost``)."""
    recency_tiers: tuple[tuple[float, float], ...] = ()
    hop_weight: float = 0.0
    """How much of a top note's score a neighbour takes per unit of its own closeness
    to the query (``hops.hop_gifts``); 0 = off."""
    hop_top: int = 3
    hop_margin: float = 0.0
    """The least closeness (best chunk cosine over the best retrieved cosine) that
    earns a neighbour the hop gift."""
    hop_anchor: bool = False
    """Judge a link by the top note's sentence around it (``hops.anchor_gifts``)
    instead of the linked note's own cosine."""
    hop_below: bool = False
    """An anchor gift never lifts a note past the note that gives it."""
    hop_local: bool = False
    """An anchor gift only for a link inside a chunk that scored the top note."""
    hop_residual: bool = False
    """An anchor sentence counts only the query words the top note's name and scoring
    chunks do not hold outside it."""
    ref_weight: float = 0.0
    """How much of its fused score a note of another kind gives the code file whose
    definition its passage names in backticks (``symbolrefs``); 0 = off."""
    ref_top: int = 5
    """How many of the best notes give the reference gift."""

    @classmethod
    def from_config(cls, s: SearchConfig, mode: str) -> FusionSettings:
        """Keyword mode never takes the graph boost: it must return only notes that
        contain the words (a linked note without them is not a keyword match)."""
        graph = s.graph_share if s.graph_boost and mode != "keyword" else 0.0
        return cls(
            method=s.fusion,
            weights={
                "keyword": s.keyword_weight,
                "semantic": s.semantic_weight,
                "sentences": s.sentence_weight,
            },
            rrf_k=float(s.rrf_k),
            normalisation=s.normalisation,
            chunk_share=s.chunk_share,
            graph_share=graph,
            graph_top=s.graph_top,
            recency_tiers=tuple((float(d), float(m)) for d, m in s.recency_tiers)
            if s.recency
            else (),
            hop_weight=s.hop_weight if s.graph_boost and mode != "keyword" else 0.0,
            hop_top=s.hop_top,
            hop_margin=s.hop_margin,
            hop_anchor=s.hop_anchor,
            hop_below=s.hop_below,
            hop_local=s.hop_local,
            hop_residual=s.hop_residual,
            ref_weight=s.code_ref_weight if mode != "keyword" else 0.0,
            ref_top=s.code_ref_top,
        )


def complete(
    branches: Mapping[str, BranchHits],
    extra: Mapping[str, BranchHits],
    note_of_chunk: Mapping[int, int],
) -> dict[str, list[tuple[int, float]]]:
    """Each branch's hits plus its ``extra`` scores for the notes another branch found
    and it did not, best first.

    A note one branch missed is not a note that branch scores zero: its cosine is only
    below that branch's cut-off. Counting it as zero let a note both branches rate well
    lose to one a single branch rates a little better (nDCG@10 +0.02 and +0.03 on the
    judged vaults, +0.002 on SciFact train; "Ranking ideas" in docs/benchmarks.md).
    Extra scores of notes no branch found are ignored: the candidates stay those the
    branches retrieved."""
    found = {
        b: {n for cid, _ in hits if (n := note_of_chunk.get(cid)) is not None}
        for b, hits in branches.items()
    }
    union = set().union(*found.values()) if found else set()
    out = {}
    for b, hits in branches.items():
        missing = union - found[b]
        more = [(c, s) for c, s in extra.get(b, ()) if note_of_chunk.get(c) in missing]
        out[b] = sorted([*hits, *more], key=lambda x: -x[1]) if more else list(hits)
    return out


Part = tuple[str, int, int, float, float, float, float]
"""A ``BranchPart``'s fields in order: fusion keeps a note's parts as tuples and makes the
frozen dataclasses only for a candidate whose ``explain`` is read."""


_PENDING = (
    "name_added",
    "graph_added",
    "graph_from",
    "recency_multiplier",
    "recency_added",
    "expansions",
)
"""The ``Explain`` fields a candidate's pending tuple carries after its method and parts."""


class Candidate:
    """A ranked note. Its ``explain`` is made on first read: fusion ranks a few hundred
    notes a query and a search reads the explains of the ``top_k`` it returns, while
    making every one (an ``Explain`` and a ``BranchPart`` per branch, frozen dataclasses)
    took most of the fusion's time."""

    __slots__ = ("_chunk_scores", "_chunks", "_explain", "_pending", "note_id", "score")

    def __init__(
        self,
        note_id: int,
        chunks: list[int],
        score: float,
        explain: Explain | None = None,
        pending: tuple[Any, ...] | None = None,
        chunk_scores: Mapping[int, float] | None = None,
    ) -> None:
        self.note_id = note_id
        self._chunks = chunks
        self._chunk_scores = chunk_scores
        """Set while ``chunks`` are in the order found: they are ordered by these scores
        (best first, then by id, each once) on first read."""
        self.score = score
        self._explain = explain
        self._pending = pending
        """``Explain``'s arguments, its branch parts as ``Part`` tuples, until read."""

    @property
    def chunks(self) -> list[int]:
        """The note's retrieved chunks, best evidence first."""
        scores = self._chunk_scores
        if scores is not None:
            ordered = sorted(self._chunks, key=lambda c: (-scores[c], c))
            self._chunks, self._chunk_scores = list(dict.fromkeys(ordered)), None
        return self._chunks

    @chunks.setter
    def chunks(self, value: list[int]) -> None:
        self._chunks, self._chunk_scores = value, None

    @property
    def explain(self) -> Explain:
        if self._explain is None:
            method, parts, *rest = self._pending or ("convex", ())
            branches = tuple(BranchPart(*p) for p in parts)
            self._explain = Explain(method, branches, **dict(zip(_PENDING, rest, strict=False)))
            self._pending = None
        return self._explain

    @explain.setter
    def explain(self, value: Explain) -> None:
        self._explain, self._pending = value, None

    def __repr__(self) -> str:
        return f"Candidate({self.note_id}, {self.chunks}, {self.score}, {self.explain!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Candidate):
            return NotImplemented
        return (self.note_id, self.chunks, self.score, self.explain) == (
            other.note_id,
            other.chunks,
            other.score,
            other.explain,
        )

    __hash__ = None  # type: ignore[assignment]


def fuse(
    branches: Mapping[str, BranchHits],
    view: FusionView,
    settings: FusionSettings,
    now: float,
    neighbours: Callable[[str], Iterable[str]] | None = None,
    allowed: set[int] | None = None,
    banned: frozenset[int] | set[int] = frozenset(),
    expansions: tuple[str, ...] = (),
    name: str = "",
    hops: Mapping[int, tuple[float, str]] | None = None,
    refs: Mapping[int, tuple[float, str]] | None = None,
) -> list[Candidate]:
    """Ranked candidate notes; every score is the sum of its ``Explain`` parts.

    ``name``: the query as typed; a candidate whose title or alias it is (a user typing
    a note's name to get to it) gets ``NAME_MATCH`` added, which puts it first.
    ``hops``: note -> (gift, from) of ``hops.hop_gifts``; a note takes the larger of it
    and its graph-share gift, as a note linked twice takes the larger gift. ``refs``: the
    same of ``symbolrefs.reference_gifts``, taken after the link gifts are bound to their
    source (a reference crosses sources by design)."""
    fusion = Fusion(branches, view, settings, now, neighbours, allowed, banned, expansions, name)
    return fusion.ranked(hops, refs)


class Fusion:
    """``fuse`` in two steps: the branches' parts and the graph-share gifts, once, then
    the ranking with a given set of hop gifts, as often as asked. A search ranks twice
    when the top notes' links earn hop gifts, and the second ranking differs only in
    those gifts: fusing the branches again cost as much as the first time (~400
    candidates for a hub note's neighbours at a million chunks). A candidate whose gift
    did not change is the same object in both rankings (nothing changes a candidate
    between them; the orchestrator's reranker changes only the one it returns)."""

    def __init__(
        self,
        branches: Mapping[str, BranchHits],
        view: FusionView,
        settings: FusionSettings,
        now: float,
        neighbours: Callable[[str], Iterable[str]] | None = None,
        allowed: set[int] | None = None,
        banned: frozenset[int] | set[int] = frozenset(),
        expansions: tuple[str, ...] = (),
        name: str = "",
    ) -> None:
        self.view, self.settings, self.now = view, settings, now
        self.allowed, self.banned, self.expansions = allowed, banned, expansions
        self.target = _fold(name) if name else ""
        self.recency = recency_curve(settings.recency_tiers) if settings.recency_tiers else None
        weights = {b: settings.weights.get(b, 1.0) for b in branches}
        total_w = sum(weights.values()) or 1.0
        parts: dict[int, list[Part]] = {}
        chunk_score: dict[int, float] = {}
        note_chunks: dict[int, list[int]] = {}
        note_of = view.note_of_chunk.get
        for branch, hits in sorted(branches.items()):  # each note's parts in branch order
            w = weights[branch]
            if w == 0:
                continue
            kept = [(cid, s, nid) for cid, s in hits if (nid := note_of(cid)) is not None]
            if banned or allowed is not None:
                kept = [
                    k for k in kept if k[2] not in banned and (allowed is None or k[2] in allowed)
                ]
            for (cid, _, nid), norm in zip(
                kept, normalise([s for _, s, _ in kept], "tm2c2"), strict=True
            ):
                chunk_score[cid] = chunk_score.get(cid, 0.0) + w * norm
                if (found := note_chunks.get(nid)) is None:
                    note_chunks[nid] = [cid]
                else:
                    found.append(cid)
            for nid, part in _branch_parts(branch, kept, w, total_w, settings):
                parts.setdefault(nid, []).append(part)
        self.parts, self.chunk_score, self.note_chunks = parts, chunk_score, note_chunks
        self.fused = fused = {nid: sum(p[6] for p in ps) for nid, ps in parts.items()}

        self.graph: dict[int, tuple[float, str]] = {}
        if settings.graph_share > 0 and neighbours is not None and fused:
            # only the givers: graph_boost ranks its scores (best first, then by path) and
            # lets the first graph_top give, so it is handed those alone
            paths = {n: view.notes[n].path for n in fused}
            top = heapq.nsmallest(settings.graph_top, fused, key=lambda n: (-fused[n], paths[n]))
            _, gifts = graph_boost(
                {paths[n]: fused[n] for n in top},
                neighbours,
                settings.graph_top,
                settings.graph_share,
                settings.graph_lead,
            )
            for path, gift in gifts.items():
                nid = view.note_by_path.get(path)
                if nid is None or not self._admits(nid):
                    continue
                self.graph[nid] = (gift.added, str(gift.source))
        self._notes: dict[int, tuple[float, float, str, str]] = {}
        """Per candidate note: its name match, recency multiplier, source and path."""
        self._made: dict[int, tuple[float, str | None, Candidate | None]] = {}
        """Per note: the gift it was last ranked with and its candidate (None: no chunk)."""

    def _admits(self, nid: int) -> bool:
        return nid not in self.banned and (self.allowed is None or nid in self.allowed)

    def _note(self, nid: int) -> tuple[float, float, str, str]:
        known = self._notes.get(nid)
        if known is None:
            note = self.view.notes[nid]
            target, recency = self.target, self.recency
            named = NAME_MATCH if target and _named(note, target) else 0.0
            mult = recency((self.now - note.date) / 86400) if recency else 1.0
            known = self._notes[nid] = (named, mult, note.source, note.path)
        return known

    def ranked(
        self,
        hops: Mapping[int, tuple[float, str]] | None = None,
        refs: Mapping[int, tuple[float, str]] | None = None,
    ) -> list[Candidate]:
        """The candidates ranked with these hop and reference gifts (see ``fuse``)."""
        fused, parts = self.fused, self.parts
        graph = _larger(self.graph, hops, self._admits)
        ids = set(fused) | set(graph)
        notes = {n: self._note(n) for n in ids}
        if SOURCE_BOUND_GIFTS and graph:
            bases = {n: fused.get(n, 0.0) + notes[n][0] for n in ids}
            mults = {n: notes[n][1] for n in ids}
            graph = bound_gifts(graph, bases, mults, {n: notes[n][2] for n in ids})
        graph = _larger(graph, refs, fused.__contains__)
        method, expansions, made = self.settings.method, self.expansions, self._made
        out = []
        for nid in ids:
            added, source = graph.get(nid, (0.0, None))
            before = made.get(nid)
            if before is not None and before[0] == added and before[1] == source:
                if before[2] is not None:
                    out.append(before[2])
                continue
            cand = None
            chunks = self.note_chunks.get(nid) or self.view.first_chunks(nid)
            if chunks:
                named, mult = notes[nid][0], notes[nid][1]
                base = fused.get(nid, 0.0) + named
                recency_added = (base + added) * (mult - 1.0)
                ps = parts.get(nid, ())
                # Explain.total's sum, in its order, so the score is the same float
                total = sum(p[6] for p in ps) + named + added + recency_added + 0.0
                pending = (method, ps, named, added, source, mult, recency_added, expansions)
                order = self.chunk_score if len(chunks) > 1 else None
                cand = Candidate(nid, chunks, total, pending=pending, chunk_scores=order)
                out.append(cand)
            made[nid] = (added, source, cand)
        out.sort(key=lambda c: (-c.score, notes[c.note_id][3]))
        return out


def _larger(
    graph: dict[int, tuple[float, str]],
    gifts: Mapping[int, tuple[float, str]] | None,
    takes: Callable[[int], bool],
) -> dict[int, tuple[float, str]]:
    """``graph`` with each of ``gifts`` that is larger than the note's gift there, for the
    notes ``takes`` admits: a note given twice takes the larger gift. ``graph`` itself is
    not changed (a second ranking starts from it again)."""
    if not gifts:
        return graph
    out = dict(graph)
    for nid, (gift, source) in gifts.items():
        if takes(nid) and gift > out.get(nid, (0.0, ""))[0]:
            out[nid] = (gift, source)
    return out


def bound_gifts(
    graph: Mapping[int, tuple[float, str]],
    bases: Mapping[int, float],
    mults: Mapping[int, float],
    source_of: Mapping[int, str],
) -> dict[int, tuple[float, str]]:
    """Each link gift cut so that it lifts its note over no note of another source
    that ranked above it without the gifts; a gift cut to nothing is dropped.

    Links join notes of one source (docs pages link docs pages; code files link nothing),
    so a gift measures a note against its own source only: uncut, the docs page on a
    function, lifted by the pages linking to it, outranked the function itself although
    the branches rated the function higher (``bench/mixed_code.py``). Within one source
    nothing changes, nor for a note only a link brought in (a multi-hop answer). Scores
    compared are final (recency included, ``bases`` times ``mults``); another source's
    note counts with its own gift uncut."""
    sources = set(source_of.values())
    if len(sources) < 2:
        return dict(graph)
    rows: dict[str, list[tuple[float, float]]] = {s: [] for s in sources}
    for nid, base in bases.items():
        gift = graph.get(nid, (0.0, ""))[0]
        rows[source_of[nid]].append((-base * mults[nid], (base + gift) * mults[nid]))
    keys: dict[str, list[float]] = {}
    lowest: dict[str, list[float]] = {}  # the least final score among the first i + 1
    for s, r in rows.items():
        r.sort()
        keys[s] = [k for k, _ in r]
        lowest[s] = list(itertools.accumulate((a for _, a in r), min))
    out = {}
    for nid, (added, giver) in graph.items():
        before, mine = bases[nid] * mults[nid], source_of[nid]
        if before <= 0:
            out[nid] = (added, giver)  # only the link brought it: no score of its own to keep
            continue
        ceiling = math.inf
        for s in sources - {mine}:
            above = bisect.bisect_right(keys[s], -before)  # those scored >= before
            if above:
                ceiling = min(ceiling, lowest[s][above - 1])
        cut = min(added, max(ceiling / mults[nid] - bases[nid] - CUT, 0.0))
        if cut > 0:
            out[nid] = (cut, giver)
    return out


def extend(ranked: list[Candidate], deeper: Sequence[Candidate]) -> list[Candidate]:
    """``ranked`` with the notes only a deeper retrieval found after it, in that
    retrieval's order: a page longer than one ranking holds grows at its end, and the
    hits before stay those of a shorter page. Their scores come from the deeper fusion,
    so one may exceed the last score of ``ranked``; the order is the tiers'."""
    seen = {c.note_id for c in ranked}
    return [*ranked, *(c for c in deeper if c.note_id not in seen)]


@functools.lru_cache(maxsize=65536)
def _fold(text: str) -> str:
    """Cached: every query folds the title of each of its few hundred candidates."""
    return " ".join(text.casefold().split())


def _named(note: NoteMeta, target: str) -> bool:
    """Whether ``target`` (folded) is the note's title or one of its aliases (``aliases``
    or ``alias``, a string or a list)."""
    if _fold(note.title) == target:
        return True
    for key in ("aliases", "alias"):
        value = note.frontmatter.get(key)
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str) and _fold(v) == target:
                return True
    return False


def _branch_parts(
    name: str,
    kept: Sequence[tuple[int, float, int]],
    weight: float,
    total_weight: float,
    settings: FusionSettings,
) -> list[tuple[int, Part]]:
    """Each note's part of this branch, by note id."""
    best: dict[int, list[float]] = {}  # note -> [best chunk, its score, sum of the rest]
    for cid, score, nid in kept:
        entry = best.get(nid)
        if entry is None:
            best[nid] = [cid, score, 0.0]
        else:
            entry[2] += max(score, 0.0)
    raw = sorted(
        ((nid, e[1] + settings.chunk_share * e[2]) for nid, e in best.items()),
        key=lambda x: (-x[1], x[0]),
    )
    ranks = tied_ranks(raw)
    if settings.method == "rrf":
        norms = [1.0 / (settings.rrf_k + ranks[nid]) for nid, _ in raw]
        scale = weight
    else:
        norms = normalise([s for _, s in raw], settings.normalisation)
        scale = weight / total_weight
    return [
        (nid, (name, int(best[nid][0]), ranks[nid], s, n, scale, scale * n))
        for (nid, s), n in zip(raw, norms, strict=True)
    ]
