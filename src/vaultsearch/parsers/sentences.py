"""A chunk's text as the sentences the sentence vectors are made of.

A chunk vector averages a thousand characters, so a query matching one sentence of it
scores like one matching the chunk's gist loosely; the best sentence's cosine beside
the chunk's lifts SciFact train nDCG@10 by +0.012 under 5-fold cross-validation
(docs/benchmarks.md, "Sentence vectors"). Markdown structure decides the units first
(a list item, a table row or a quote line is one unit; a code block none), then
prose is cut at sentence ends. Pure and deterministic: the index derives the same
units from a stored chunk's text when it rebuilds, and ``SPLIT_VERSION`` goes into the
manifest, so a change here is seen by every index; ``SPLIT_KINDS`` says which notes'
units it changed, so an index derives those again instead of rebuilding.
"""

from __future__ import annotations

import re

from vaultsearch.parsers.codeprose import code_prose

SPLIT_VERSION = 2
SPLIT_KINDS: dict[int, tuple[str, ...]] = {2: ("code",)}
"""The note kinds whose units each version changed (2: a code chunk's units are its
docstring and comment sentences, ``codeprose``). A version that changes every note's
units lists every kind."""
MIN_WORDS = 3
"""Shorter units (a bare link, a tag line, "See also:") match too loosely to count."""
MAX_UNITS = 64
"""Per chunk; a chunk is ~1,000 characters, so only a list of fragments comes near."""

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_LINE_UNIT = re.compile(r"^\s*(?:[-*+]\s+(?:\[.\]\s+)?|\d+[.)]\s+|>\s*|\|)")
_MARKER = re.compile(r"^\s*(?:#{1,6}\s+|[-*+]\s+(?:\[.\]\s+)?|\d+[.)]\s+|(?:>\s*)+)")
_FENCE = re.compile(r"^\s*(```|~~~)")


def changed_kinds(old: object) -> frozenset[str] | None:
    """The note kinds whose units differ between split version ``old`` and this one;
    None when that is not known (no such version, or a newer one): then rebuild."""
    if not isinstance(old, int) or old > SPLIT_VERSION:
        return None
    versions = range(old + 1, SPLIT_VERSION + 1)
    if any(v not in SPLIT_KINDS for v in versions):
        return None
    return frozenset(kind for v in versions for kind in SPLIT_KINDS[v])


def sentence_units(text: str) -> list[str]:
    """The chunk's units in order, each at least ``MIN_WORDS`` words; empty for a chunk
    with none (its own vector then stands in for its sentences)."""
    units: list[str] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            units.extend(_SENTENCE_END.split(" ".join(paragraph)))
            paragraph.clear()

    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            flush()
            fenced = not fenced
            continue
        if fenced:
            continue
        stripped = line.strip()
        if not stripped:
            flush()
        elif stripped.startswith("#") or _LINE_UNIT.match(line):
            flush()
            units.append(_MARKER.sub("", line).strip(" |"))
        else:
            paragraph.append(stripped)
    flush()
    kept = [u.strip() for u in units if len(u.split()) >= MIN_WORDS]
    return list(dict.fromkeys(kept))[:MAX_UNITS]


def unit_texts(text: str, kind: str) -> list[str]:
    """What is embedded for a chunk of a note of this kind beside its own vector: of
    code only its docstrings' and comments' sentences (a line of code alone says little);
    a chunk without them is scored by its chunk vector."""
    return sentence_units(code_prose(text) if kind == "code" else text)
