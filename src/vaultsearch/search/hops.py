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

import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from vaultsearch.search.query import words
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


BELOW = 1e-9
"""With ``hop_below``, a linked note ends this far under the note whose sentence links it."""


def anchor_gifts(
    ranked: Sequence[Candidate],
    view: FusionView,
    anchors: Callable[[int], Iterable[tuple[str, str, int]]],
    stem: Callable[[str], str],
    weights: Mapping[str, float],
    settings: FusionSettings,
    matched: Callable[[Candidate], Sequence[tuple[int, int, str]]] = lambda _: (),
) -> dict[int, tuple[float, str]]:
    """Note -> (gift, path of the top note it came from), each link of the ``hop_top``
    best notes judged by the sentence it stands in.

    The linked note's own text cannot tell the answer from the top note's other links
    (it is about something else: that is why a hop was needed); the top note's sentence
    around the link can: "PGP doesn't have [[Forward Secrecy]]". Its closeness is the
    idf-weighted share of the query's words it holds, leaving out the words of the top
    note's title, which the first hop has answered already. ``anchors(note)``: (target
    path, sentence, line) per outgoing link; ``weights``: query stem -> idf;
    ``matched(candidate)``: (first line, last line, text) of the chunks that scored it.

    ``hop_local``: only a link inside a chunk that scored the top note counts; a link
    elsewhere in the note (a list of related notes at its head) is another topic of the
    note, not the passage the query found. ``hop_residual``: the words left out are also
    the note's file name's and those its scoring chunks hold outside the link's sentence,
    so a sentence counts only for what the first hop does not answer by itself."""
    if settings.hop_weight <= 0 or not weights:
        return {}
    out: dict[int, tuple[float, str]] = {}
    # a linked note's candidate, its explain read only when a gift needs it: making every
    # candidate's (~400 with a hub note's neighbours at a million chunks) cost more than
    # the gifts
    own = {c.note_id: c for c in ranked}
    for src in ranked[: settings.hop_top]:
        meta = view.notes[src.note_id]
        answered = {stem(w) for w in words(meta.title.lower())}
        if settings.hop_residual:
            name = meta.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
            answered |= {stem(w) for w in words(name.lower())}
        spans = matched(src) if settings.hop_local or settings.hop_residual else ()
        rest = {s: w for s, w in weights.items() if s not in answered}
        total = sum(rest.values())
        if total <= 0:
            continue
        for target, sentence, line in anchors(src.note_id):
            nid = view.note_by_path.get(target)
            if nid is None or nid == src.note_id:
                continue
            if settings.hop_local and not any(a <= line <= b for a, b, _ in spans):
                continue
            left = rest
            if settings.hop_residual:
                held = {
                    stem(w)
                    for _, _, text in spans
                    for w in words(text.replace(sentence, " ").lower())
                }
                left = {s: w for s, w in rest.items() if s not in held}
            found = {stem(w) for w in words(sentence.lower())}
            closeness = sum(w for s, w in left.items() if s in found) / total
            if closeness <= 0 or closeness < settings.hop_margin:
                continue
            gift = settings.hop_weight * max(src.explain.fused, 0.0) * closeness
            if settings.hop_below:
                linked = own.get(nid)
                mine = linked.explain if linked is not None else None
                room = (
                    src.score / mine.recency_multiplier - mine.fused - mine.name_added
                    if mine is not None
                    else src.score
                )
                gift = min(gift, room - BELOW)
            if gift > out.get(nid, (0.0, ""))[0]:
                out[nid] = (gift, meta.path)
    return out


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def link_sentence(line: str, keys: Iterable[str]) -> str:
    """The sentence of ``line`` that holds the link (its label or target), else the line:
    a paragraph is one line in Markdown, and its other sentences speak of other links."""
    wanted = [k.lower() for k in keys if k]
    for part in _SENTENCE_END.split(line):
        low = part.lower()
        if any(k in low for k in wanted):
            return part
    return line
