"""A misspelt query word corrected before the query is embedded.

The keyword branch already widens a word the vault lacks to close index terms
(``store.fuzzy``); the model, given ``hibernaton``, embeds a word it has never seen and
the semantic branches lose the note (on a held-out vault one adjacent-letter swap cost
hybrid search 0.041 nDCG@10, semantic 0.071, keyword nothing). A word is corrected only
when no chunk holds it and a close term exists: a word the vault contains, however rare
or odd, is its user's word and is embedded as typed.

The keyword side compares stems, and a typo in a word's ending hides the ending from the
stemmer (``diffreence`` stems to ``diffreenc``, four edits from ``differ``), so a word
the keyword side found nothing close to is also tried one edit away as typed
(``one_edit``), each variant stemmed as the index stems it.
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


LETTERS = "abcdefghijklmnopqrstuvwxyz"


def one_edit(
    word: str, doc_freq: Callable[[str], int], stem: Callable[[str], str], least: int = 4
) -> str:
    """The word one edit from ``word`` (two neighbours swapped, a letter dropped, added
    or changed) whose stem the most chunks hold; empty when none does or ``word`` is
    shorter than ``least`` (a short word has too many neighbours to guess from)."""
    if len(word) < least:
        return ""
    counts: dict[str, tuple[int, str]] = {}
    for v in _edits(word.lower()):
        term = stem(v)
        if term not in counts:
            counts[term] = (doc_freq(term), v)
    best = max(counts.values(), default=(0, ""))
    return best[1] if best[0] > 0 else ""


def spelled(typed: str, term: str, stem: Callable[[str], str]) -> str:
    """The word one edit from ``typed`` that stems to ``term`` (``recriutment`` ->
    ``recruitment`` for ``recruit``), so the model is given the word the user meant
    rather than another word of that stem; empty when none does."""
    return next((v for v in _edits(typed.lower()) if stem(v) == term), "")


def _edits(w: str) -> list[str]:
    """Every string one edit from ``w``, neighbour swaps first (the commonest slip)."""
    splits = [(w[:i], w[i:]) for i in range(len(w) + 1)]
    out = [a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1 and b[0] != b[1]]
    out += [a + b[1:] for a, b in splits if b]
    out += [a + c + b[1:] for a, b in splits if b for c in LETTERS if c != b[0]]
    out += [a + c + b for a, b in splits for c in LETTERS]
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
