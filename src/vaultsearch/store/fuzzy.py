"""Typo and prefix tolerance: which index terms a query word that finds nothing stands for.

Pure over two look-ups of the term dictionary (a term's document frequency, the terms
under a prefix), so the rules can be tested without an index. Expansions are real
index terms, scored by BM25 like typed words (but weighed down), not constant-score
fuzzy matches that would tie every guessed note.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

MAX_EXPANSIONS = 3
MIN_PREFIX = 3
RARE = 2
"""A word found in at most this many chunks is "too little" when a close variant is far
more common (a typo that happens to exist once)."""


@dataclass(frozen=True, slots=True)
class Expansion:
    word: str
    term: str
    kind: str
    """``prefix`` or ``typo``."""

    def __str__(self) -> str:
        return f"{self.word}{'*' if self.kind == 'prefix' else '~'}{self.term}"


def max_edits(word: str) -> int:
    """Edit distance allowed by length: short words have too many neighbours."""
    n = len(word)
    return 0 if n < 4 else 1 if n < 8 else 2


def expand_word(
    word: str,
    token: str,
    doc_freq: Callable[[str], int],
    terms_with_prefix: Callable[[str], Sequence[tuple[str, int]]],
) -> list[Expansion]:
    """``token`` is ``word`` as the index analyses it (lowercased, stemmed)."""
    df = doc_freq(token)
    if df > RARE or len(word) < MIN_PREFIX:
        return []
    if df == 0:
        prefixed = [(t, c) for t, c in terms_with_prefix(token) if t != token]
        if prefixed:
            return [Expansion(word, t, "prefix") for t, _ in prefixed[:MAX_EXPANSIONS]]
    edits = max_edits(word)
    if edits == 0:
        return []
    close = []
    letters = set(token)
    for term, count in terms_with_prefix(token[0]):
        if term == token or abs(len(term) - len(token)) > edits or count <= 10 * df:
            continue
        # An edit adds or drops at most one letter of each set: a cheap bound that
        # spares most of the distance computations (they held the GIL ~1 ms a query).
        if len(letters.symmetric_difference(term)) > 2 * edits:
            continue
        d = osa_distance(token, term, edits)
        if d <= edits:
            close.append((d, -count, term))
    close.sort()
    return [Expansion(word, t, "typo") for _, _, t in close[:MAX_EXPANSIONS]]


def osa_distance(a: str, b: str, bound: int) -> int:
    """Optimal string alignment distance (a swap of neighbours costs 1: ``dialy`` is one
    edit from ``daily``), giving up with ``bound + 1`` once every path exceeds ``bound``."""
    if abs(len(a) - len(b)) > bound:
        return bound + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            v = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                v = min(v, prev2[j - 2] + 1)
            cur[j] = v
        if min(cur) > bound:
            return bound + 1
        prev2, prev = prev, cur
    return prev[-1]
