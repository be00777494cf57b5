"""A misspelt query word corrected before the query is embedded.

The keyword branch already widens a word the vault lacks to close index terms
(``store.fuzzy``); the model, given ``hibernaton``, embeds a word it has never seen and
the semantic branches lose the note (on a held-out vault one adjacent-letter swap cost
hybrid search 0.041 nDCG@10, semantic 0.071, keyword nothing). A word is corrected only
when no chunk holds it and a close term exists: a word the vault contains, however rare
or odd, is its user's word and is embedded as typed.

The keyword side compares stems, and a typo in a word's ending hides the ending from the
stemmer (``diffreence`` stems to ``diffreenc``, four edits from ``differ``; ``wirte``
stems to ``wirt``, nearer ``wire`` than ``write``), so a word no chunk holds is tried one
edit away as typed (``one_edit``), each variant stemmed as the index stems it, ranked by
its chunks times the chance of its kind of slip (a noisy channel with every kind of slip
equally likely).

Two kinds of word are never taken for typos. A word any chunk, title, alias or heading
holds is the user's own. A word the model's WordPiece vocabulary holds whole (``hiking``,
``mortgage``, ``marathon``) is a word, not a slip: its neighbours one edit away
(``liking``, ``mortal``, ``maratha``) mean something else, so "correcting" it only swaps
the question for another. And the word the model is given for a fix is one the vault or
the model knows: the first string one edit away that stems like the fix can be no word at
all (``minimises`` -> ``minimives``, which stems to ``minim`` as ``minimizes`` does).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from vaultsearch.embedding.locate import RUNTIME_MODEL_DIR
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


SURE = 1.0
"""A one-edit fix replaces the typed word in keyword search only when its odds are at
least this many times the next candidate's; otherwise every candidate is searched
(``SALAC``: ``salaf`` or ``slaac``), each weighed down. 5-fold cross-validation over both
judged vaults (``bench/typo_cv.py``) chose 1 on four folds and 10 on one: the likeliest
fix replaces the word."""


CHANNEL = True
"""Whether candidates are weighed by how likely their kind of slip is (``_edits``) as well
as by how many chunks hold them; chosen by the same cross-validation as ``SURE``."""


PROBED = 50
"""How many chunks holding a fix's stem are read for the vault's own spellings of it."""


@dataclass(frozen=True, slots=True)
class Fix:
    """A word one edit from the typed one, and the index term standing in for it."""

    word: str
    term: str
    chunks: int
    odds: float = 0.0
    """``chunks`` times the chance of this one slip (``_edits``): what ranks fixes."""


def one_edit(
    word: str,
    doc_freq: Callable[[str], int],
    stem: Callable[[str], str],
    begun: Callable[[str], tuple[str, int]] | None = None,
    least: int = 4,
) -> list[Fix]:
    """The words one edit from ``word`` (two neighbours swapped, a letter dropped, added
    or changed) whose stem the index holds, likeliest first; empty when ``word`` is
    shorter than ``least`` (a short word has too many neighbours to guess from).

    The edit is made on the word as typed, not on its stem: a typo hides a word's ending
    from the stemmer (``wirte`` stems to ``wirt``, one edit from ``wire`` but two from
    ``write``). When no variant's stem is held, a variant that begins index terms
    (``susbamp`` -> ``subsamp`` -> ``subsampl``) is a word cut short and mistyped."""
    if len(word) < least:
        return []
    variants = _edits(word.lower())
    found: dict[str, Fix] = {}
    for v, chance in variants:
        term = stem(v)
        if term not in found and (n := doc_freq(term)):
            found[term] = Fix(v, term, n, n * (chance if CHANNEL else 1.0))
    if not found and begun is not None:
        for v, chance in variants:
            if len(v) > least and v.isalpha():
                term, n = begun(v)
                if n and term not in found:
                    found[term] = Fix(v, term, n, n * (chance if CHANNEL else 1.0))
    return sorted(found.values(), key=lambda f: -f.odds)


def sure(fixes: Sequence[Fix], ratio: float | None = None) -> bool:
    """Whether the first fix stands out enough to replace the typed word (``SURE``)."""
    ratio = SURE if ratio is None else ratio
    return len(fixes) == 1 or (bool(fixes) and fixes[0].odds >= ratio * fixes[1].odds)


def spelled(typed: str, term: str, stem: Callable[[str], str], texts: Iterable[str] = ()) -> str:
    """The word one edit from ``typed`` that stems to ``term`` (``recriutment`` ->
    ``recruitment`` for ``recruit``), so the model is given the word the user meant
    rather than another word of that stem: the likeliest slip that ``texts`` or the
    model's vocabulary holds as a word; else the likeliest of the slips made of the typed
    letters alone (two swapped, one too many: ``calneder`` -> ``calender``, which the
    model reads as the user wrote it), when one is likelier than the others; empty
    otherwise. A letter changed or added is a guess among 25 (``minimises`` ->
    ``minimives``, ``asyncio`` -> ``asyncic``) that only a text can confirm."""
    seen = {w.lower() for text in texts for w in words(text)}
    slips: dict[str, float] = {}
    for v, chance in _edits(typed.lower()):
        if stem(v) == term:
            slips[v] = max(chance, slips.get(v, 0.0))
    known = [v for v in slips if v in seen or is_word(v)]
    if known:
        return max(known, key=slips.__getitem__)
    letters = Counter(typed.lower())
    own = sorted((v for v in slips if Counter(v) <= letters), key=lambda v: -slips[v])
    if len(own) == 1 or (own and slips[own[0]] > slips[own[1]]):
        return own[0]
    return ""


def is_word(word: str) -> bool:
    """Whether the bundled model's WordPiece vocabulary holds ``word`` whole: a word it
    learned as a unit, so a word in its own right rather than a slip of another."""
    return word.lower() in _model_words()


@cache
def _model_words() -> frozenset[str]:
    vocab = json.loads((RUNTIME_MODEL_DIR / "tokenizer.json").read_text(encoding="utf-8"))
    return frozenset(w for w in vocab["model"]["vocab"] if w.isalpha())


def _edits(w: str) -> list[tuple[str, float]]:
    """Every string one edit from ``w`` with the chance of that one slip, each kind of
    slip taken as equally likely and shared among the strings it can make: a swap is
    one of ``n - 1``, a letter too many one of ``n``, a letter changed one of ``25 n``,
    a letter missing one of ``26 (n + 1)``. So ``salac`` is ``slaac`` before ``salaf``
    unless ``salaf`` is far commoner."""
    n = max(len(w), 1)
    splits = [(w[:i], w[i:]) for i in range(len(w) + 1)]
    swaps = [a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1 and b[0] != b[1]]
    drops = [a + b[1:] for a, b in splits if b]
    changes = [a + c + b[1:] for a, b in splits if b for c in LETTERS if c != b[0]]
    adds = [a + c + b for a, b in splits for c in LETTERS]
    return (
        [(v, 1 / max(n - 1, 1)) for v in swaps]
        + [(v, 1 / n) for v in drops]
        + [(v, 1 / (25 * n)) for v in changes]
        + [(v, 1 / (26 * (n + 1))) for v in adds]
    )


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
    """``text`` with each whole word in ``fixes`` (any case) replaced by its fix; a word
    between underscores is whole (``nav_exclued_children``)."""
    if not fixes:
        return text
    pattern = re.compile(
        r"(?<![^\W_])("
        + "|".join(re.escape(w) for w in sorted(fixes, key=len, reverse=True))
        + r")(?![^\W_])",
        re.IGNORECASE,
    )
    return pattern.sub(lambda m: fixes[m.group(0).lower()], text)
