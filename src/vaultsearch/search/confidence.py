"""How likely a hit answers the query, from evidence that means the same in every vault.

Fused scores only order hits: a convex score of 1.0 is simply the best of whatever was
found, even for a query the vault knows nothing about. Two signals do not depend on the
rest of the list: how close the best passage is in meaning (the cosine of its chunk)
and how much of the query's informative words it holds (each content word weighted by
its inverse document frequency). A logistic model over them, fitted by
``bench/confidence.py`` on SciFact train plus queries with no answer, turns them into
a probability per hit; the first hit's is mapped once more (``first_hit_answers``,
fitted on judged vault queries) to the probability that the first hit answers, and
when that is below ``FIRST_LINE`` the CLI and MCP say that no note matches well.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

WEAK = 0.1
"""A hit's own confidence under which it is unlikely to answer (tests and the per-hit
probability; what is said to a user is decided by ``FIRST_LINE``)."""

FIRST_MAP = (0.826, 0.515)
"""``P(first hit answers) = sigmoid(a + b logit(its confidence))``: Platt scaling fitted by
``bench/tune_confidence.py`` on the judged queries of both vaults (146: 91 whose first hit
is judged 2, 38 answerable whose first hit is not, 17 with no answer). The per-hit model
was fitted on SciFact hits, most of them not relevant; the first hit of a vault search
is right far more often than that model says."""
FIRST_LINE = 0.29
"""Below this probability no note matches well. The line flags at most 5% of the
answerable queries (the message is false for any of them, right first hit or not): on
held-out folds, lines chosen so flagged 6 of 129 answerable queries (1 of 91 right first
hits) and 12 of 17 no-answer ones. This is the line of the fit on all of them (0.294)
rounded down, where a hit's own confidence is about 0.034. Adding the gap to the second
hit, branch agreement or the branch ranks as features changed no held-out flag count
for the better (``bench/tune_confidence.py``)."""

# Fitted by bench/confidence.py (logistic regression on the top 10 hits of 300 SciFact train
# queries and 60 no-answer queries); see docs/benchmarks.md, "Confidence calibration".
WITH_COSINE = (-8.46, 6.57, 5.51)
"""Intercept, cosine weight, coverage weight (semantic or hybrid search)."""
WORDS_ONLY = (-6.13, 0.0, 7.55)
"""The same without a cosine (keyword search embeds nothing)."""


@dataclass(frozen=True, slots=True)
class Evidence:
    cosine: float | None
    """Cosine of the note's best chunk; ``None`` in keyword mode."""
    coverage: float
    """IDF-weighted share of the query's content words found in the passage, 0..1."""


def coverage(idf: Mapping[str, float], found: set[str]) -> float:
    total = sum(idf.values())
    if total <= 0:
        return 0.0
    return sum(w for t, w in idf.items() if t in found) / total


def idf(doc_freq: int, docs: int) -> float:
    """BM25's idf, floored at 0 (a word in most chunks says nothing)."""
    return max(0.0, math.log(1 + (docs - doc_freq + 0.5) / (doc_freq + 0.5)))


def confidence(e: Evidence, with_cosine: tuple[float, float, float] = WITH_COSINE,
               words_only: tuple[float, float, float] = WORDS_ONLY) -> float:  # fmt: skip
    a, b, c = with_cosine if e.cosine is not None else words_only
    z = a + b * (e.cosine or 0.0) + c * e.coverage
    return 1.0 / (1.0 + math.exp(-z))


def first_hit_answers(first: float) -> float:
    """The calibrated probability that a search's first hit answers, from its confidence."""
    c = min(max(first, 1e-6), 1 - 1e-6)
    a, b = FIRST_MAP
    return 1.0 / (1.0 + math.exp(-(a + b * math.log(c / (1 - c)))))


def weak_answer(confidences: Sequence[float]) -> str | None:
    """What to tell a user or an agent when the first hit is unlikely to answer (best first)."""
    if not confidences:
        return "No note matches: try other words, or fewer filters."
    p = first_hit_answers(confidences[0])
    if p >= FIRST_LINE:
        return None
    return (
        f"No note matches well: the first hit answers with probability {p:.2f} (judged "
        "queries); check it before relying on it, or try other words."
    )
