"""The ranking maths, as pure functions: weighted RRF, score normalisation for a convex
combination, graph-neighbour boost, recency.

Kept free of indexes and I/O so every formula can be checked by hand in a test,
and deterministic: ties are broken by key, never by hash order.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def weighted_rrf(
    rankings: Mapping[str, Sequence[K] | Mapping[K, int]],
    weights: Mapping[str, float],
    k: float,
) -> dict[K, float]:
    """``score(c) = Σ_s w_s / (k + rank_s(c))`` with 1-based ranks; a strategy with no
    weight given counts 1.0. A ranking is a best-first list (an item listed twice
    counts once, at its first rank) or a mapping of item to rank (see ``tied_ranks``)."""
    scores: dict[K, float] = {}
    for strategy, ranked in rankings.items():
        w = weights.get(strategy, 1.0)
        if w == 0:
            continue
        ranks = ranked if isinstance(ranked, Mapping) else _list_ranks(ranked)
        for item, rank in ranks.items():
            scores[item] = scores.get(item, 0.0) + w / (k + rank)
    return scores


def normalise(scores: Sequence[float], method: str) -> list[float]:
    """Scores mapped into [0, 1] so that two branches' scores can be added.

    ``tm2c2`` divides by the list's best score with the theoretical minimum 0 (BM25 and
    cosine scores of a match are positive; a negative cosine clips to 0): it keeps how
    far apart the scores are, which rank-based RRF throws away. ``minmax`` stretches the
    list's own range onto [0, 1] (Bruch, Gai & Ingber, ACM TOIS 2023, compare both)."""
    if not scores:
        return []
    top = max(scores)
    if method == "minmax":
        low = min(scores)
        if top == low:
            return [1.0] * len(scores)
        return [(s - low) / (top - low) for s in scores]
    if top <= 0:
        return [0.0] * len(scores)
    return [max(s, 0.0) / top for s in scores]


def _list_ranks(ranked: Sequence[K]) -> dict[K, int]:
    return {item: rank for rank, item in enumerate(dict.fromkeys(ranked), start=1)}


def tied_ranks(scored: Sequence[tuple[K, float]]) -> dict[K, int]:
    """Competition ranks ("1224") from best-first (item, score) pairs: items with equal
    raw scores share a rank, so two identical notes fuse to equal scores instead of
    being split by whatever order an index returned them in."""
    ranks: dict[K, int] = {}
    prev: float | None = None
    current = 0
    for position, (item, score) in enumerate(scored, start=1):
        if item in ranks:
            continue
        if prev is None or score != prev:
            current, prev = position, score
        ranks[item] = current
    return ranks


@dataclass(frozen=True, slots=True)
class GraphBoost:
    source: Hashable
    added: float


def graph_boost(
    scores: Mapping[K, float],
    neighbours: Callable[[K], Iterable[K]],
    top: int,
    share: float,
    lead: float = 0.0,
) -> tuple[dict[K, float], dict[K, GraphBoost]]:
    """Each of the ``top`` candidates passes ``share`` of its score to its 1-hop
    neighbours, the best one ``max(share, lead)``: a question asked through a note
    ("the property PGP lacks according to my notes on ...") finds that note first, and
    the answer is what it links to. A neighbour linked from several top candidates takes
    the largest gift, not the sum, so a hub note cannot climb on link count alone.
    Neighbours outside the pool enter it with that gift."""
    ranked = rank_items(scores)[:top]
    best: dict[K, GraphBoost] = {}
    for i, cand in enumerate(ranked):
        gift = (max(share, lead) if i == 0 else share) * scores[cand]
        for n in neighbours(cand):
            if n == cand:
                continue
            prior = best.get(n)
            if prior is None or gift > prior.added:
                best[n] = GraphBoost(cand, gift)
    boosted = dict(scores)
    for n, b in best.items():
        boosted[n] = boosted.get(n, 0.0) + b.added
    return boosted, best


def recency_multiplier(age_days: float, tiers: Sequence[Sequence[float]]) -> float:
    """The multiplier of the first tier ``[max_days, multiplier]`` (sorted by days)
    that the age falls within; 1.0 when older than every tier. Future dates count as 0 days."""
    return recency_curve(tiers)(age_days)


def recency_curve(tiers: Sequence[Sequence[float]]) -> Callable[[float], float]:
    """``recency_multiplier`` with the tiers sorted once, for a query's hundred candidates."""
    steps = sorted((float(d), float(m)) for d, m in tiers)

    def multiplier(age_days: float) -> float:
        age = max(age_days, 0.0)
        for max_days, mult in steps:
            if age <= max_days:
                return mult
        return 1.0

    return multiplier


def rank_items(scores: Mapping[K, float]) -> list[K]:
    """Best first; equal scores ordered by key so that results never depend on hashing."""
    return sorted(scores, key=lambda item: (-scores[item], _sort_key(item)))


def _sort_key(item: object) -> tuple[str, str]:
    return (type(item).__name__, str(item)) if not isinstance(item, int) else ("", f"{item:020d}")
