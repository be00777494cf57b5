"""The hop gift: a top note's link, judged by its own closeness to the query.

A multi-hop question ("the property PGP lacks according to my notes on ...") finds the
note it is asked through first; the answer is a note that note links to, often too far
from the words to be retrieved at all. The graph share gives every neighbour the same
small slice of the top note's score, which cannot lift the answer without lifting every
other link as much. Here each neighbour of the ``hop_top`` best notes is scored by its
best chunk's cosine to the query (the vectors are stored; no branch had to find it) over
the best cosine retrieved, and takes ``hop_weight`` x the top note's fused score x that
closeness when the closeness clears ``hop_margin``: the link that also reads like the
answer climbs, the others barely move.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from vaultsearch.search.ranking import Candidate, FusionSettings, FusionView


def hop_gifts(
    ranked: Sequence[Candidate],
    view: FusionView,
    neighbours: Callable[[str], Iterable[str]],
    chunks_of: Callable[[int], Sequence[int]],
    cosines: Callable[[list[int]], Sequence[tuple[int, float]]],
    best_cosine: float,
    settings: FusionSettings,
) -> dict[int, tuple[float, str]]:
    """Note -> (gift, path of the top note it came from), the largest gift per note."""
    if settings.hop_weight <= 0 or best_cosine <= 0 or not ranked:
        return {}
    sources = ranked[: settings.hop_top]
    linked: dict[int, list[Candidate]] = {}
    for src in sources:
        path = view.notes[src.note_id].path
        for n in neighbours(path):
            nid = view.note_by_path.get(n)
            if nid is not None and nid != src.note_id:
                linked.setdefault(nid, []).append(src)
    if not linked:
        return {}
    note_of: Mapping[int, int] = view.note_of_chunk
    wanted = [c for nid in sorted(linked) for c in chunks_of(nid)]
    closest: dict[int, float] = {}
    for cid, cos in cosines(wanted):
        nid = note_of.get(cid)
        if nid is not None and cos > closest.get(nid, float("-inf")):
            closest[nid] = cos
    out: dict[int, tuple[float, str]] = {}
    for nid, srcs in linked.items():
        closeness = closest.get(nid, 0.0) / best_cosine
        if closeness < settings.hop_margin or closeness <= 0:
            continue
        for src in srcs:
            gift = settings.hop_weight * max(src.explain.fused, 0.0) * closeness
            if gift > out.get(nid, (0.0, ""))[0]:
                out[nid] = (gift, view.notes[src.note_id].path)
    return out
