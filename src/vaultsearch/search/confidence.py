"""How likely a hit answers the query, from evidence that means the same in every vault.

Fused scores only order hits: a convex score of 1.0 is simply the best of whatever was
found, even for a query the vault knows nothing about. Two signals do not depend on the
rest of the list: how close the best passage is in meaning (the cosine of its chunk)
and how much of the query's informative words it holds (each content word weighted by
its inverse document frequency). A logistic model over them, fitted by
``bench/confidence.py`` on SciFact train plus queries with no answer, turns them into
a probability; when the best hit is below ``WEAK`` the CLI and MCP say that no note
matches well.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

WEAK = 0.1
"""Below this for the best hit, no note matches well. The probability is per hit and most
top-10 hits are not relevant, so the line sits low: on held-out SciFact folds 0.1 told
every no-answer query apart in hybrid mode and wrongly flagged 10% of right answers."""

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


def weak_answer(confidences: Sequence[float]) -> str | None:
    """What to tell a user or an agent when no hit is likely to answer (best first)."""
    if not confidences:
        return "No note matches: try other words, or fewer filters."
    if confidences[0] >= WEAK:
        return None
    return (
        f"No note matches well (best confidence {confidences[0]:.2f}): these are the "
        "closest notes, but probably not the answer; try other words."
    )
