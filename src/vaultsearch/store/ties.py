"""Ties at a top k's cut: which hits of equal score a branch keeps.

An engine's top k keeps, of the hits tied at the k-th score, those it met first, and
what it meets first is where the hits were written (Tantivy's document addresses, a
vector's segment and row): a repair, a rebuild or a merge writes the same chunks in
another order, and identical notes (templates, copies) then changed places in a top k.
So a branch reads past k while the last hit read still ties the k-th (``wider_read``)
and cuts the tie in an order of the vault's own (``settle``: the search's
``tie_order``, the note's path, then the chunk id). The local keyword index, the vector
segments and the Milvus reader's two sides read and cut alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

TIE_FETCH = 4096
"""The most hits past ``k`` a search reads (from one source: a keyword index, a vector
segment) to settle a tie at its cut: a tie longer than this is settled among the hits
read (the vault replicated 110 times ties 110 copies of a note; a lone word of a common
length can tie thousands)."""

TieOrder = Callable[[Sequence[int]], Sequence[Any]]
"""Sort keys of chunk ids (``Snapshot.tie_order``)."""


def wider_read(
    scores: Sequence[float] | np.ndarray,
    k: int,
    asked: int,
    cap: int,
    kth: float | None = None,
) -> int | None:
    """How many hits to read next to settle the tie at the k-th score, or None when it
    is settled: fewer hits came than were asked for, the last one read is below the
    k-th (``scores`` best first; ``kth``: the k-th of the whole search when these are one
    part's, a segment's), or ``cap`` was asked for already."""
    if len(scores) < asked or asked >= cap:
        return None
    if scores[-1] < (scores[k - 1] if kth is None else kth):
        return None
    return min(4 * asked, cap)


def settle(
    order: np.ndarray,
    ids: np.ndarray,
    scores: np.ndarray,
    k: int,
    tie_order: TieOrder | None,
) -> bool:
    """Put the hits tied at the k-th score (``order``: positions into ``ids`` and
    ``scores``, best first) in ``tie_order`` when the tie crosses the cut, in place;
    whether it did. Only that group moves: the order of equal scores within the top k
    changes no fusion (ranks are tied ranks)."""
    if tie_order is None or len(order) <= k or scores[order[k]] != scores[order[k - 1]]:
        return False
    tied = np.flatnonzero(scores[order] == scores[order[k - 1]])
    keys = tie_order(ids[order[tied]].tolist())
    order[tied] = order[tied][sorted(range(len(tied)), key=keys.__getitem__)]
    return True
