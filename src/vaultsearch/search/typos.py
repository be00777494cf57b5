"""A misspelt query word corrected before the query is embedded.

The keyword branch already widens a word the vault lacks to close index terms
(``store.fuzzy``); the model, given ``hibernaton``, embeds a word it has never seen and
the semantic branches lose the note (on a held-out vault one adjacent-letter swap cost
hybrid search 0.041 nDCG@10, semantic 0.071, keyword nothing). A word is corrected only
when no chunk holds it and the keyword side found a close term: a word the vault
contains, however rare or odd, is its user's word and is embedded as typed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from vaultsearch.search.query import words
from vaultsearch.store.fuzzy import Expansion, osa_distance


def unknown_typos(
    expansions: Sequence[Expansion], doc_freq: Callable[[str], int], stem: Callable[[str], str]
) -> dict[str, str]:
    """Typed word -> the index term (a stem) standing in for it, for each word the
    index does not hold at all that a typo expansion widened (closest first)."""
    out: dict[str, str] = {}
    for e in expansions:
        if e.kind == "typo" and e.word not in out and doc_freq(stem(e.word)) == 0:
            out[e.word] = e.term
    return out


def surface(typed: str, term: str, texts: Iterable[str], stem: Callable[[str], str]) -> str:
    """The word of ``texts`` the index stems to ``term`` that is nearest ``typed`` (the
    index keeps stems, the model wants words: ``hibern`` -> ``hibernation``); empty
    when none is."""
    seen: dict[str, int] = {}
    for text in texts:
        for w in words(text):
            w = w.lower()
            if w not in seen and stem(w) == term:
                seen[w] = osa_distance(typed, w, len(typed) + len(w))
    return min(seen, key=lambda w: (seen[w], w)) if seen else ""


def corrected(text: str, fixes: Mapping[str, str]) -> str:
    """``text`` with each whole word in ``fixes`` (any case) replaced by its fix."""
    if not fixes:
        return text
    pattern = re.compile(
        r"(?<!\w)("
        + "|".join(re.escape(w) for w in sorted(fixes, key=len, reverse=True))
        + r")(?!\w)",
        re.IGNORECASE,
    )
    return pattern.sub(lambda m: fixes[m.group(0).lower()], text)
