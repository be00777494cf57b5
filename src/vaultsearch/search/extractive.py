"""An extractive answer: the sentences of the best passages that say most about the
query, each with a numbered citation to the passage's path and lines.

Nothing is generated, so every word of the answer is in the vault where the citation
says; it is a reading aid over the hits, not a replacement for them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vaultsearch.models import Hit
from vaultsearch.search.snippets import stem
from vaultsearch.search.stopwords import content_words

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_MARKUP = re.compile(r"^\s*(?:#{1,6}\s+|[-*+]\s+|\d+[.)]\s+|>\s*)+")
_NOT_PROSE = re.compile(r"^\s*(?:#{1,6}\s|\||---\s*$)")
_FENCE = re.compile(r"^\s*(?:```|~~~)")
MAX_SENTENCE = 300


@dataclass(frozen=True, slots=True)
class Citation:
    n: int
    path: str
    start_line: int
    end_line: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
        }


@dataclass(frozen=True, slots=True)
class Answer:
    text: str
    citations: tuple[Citation, ...] = ()


@dataclass(frozen=True, slots=True)
class _Sentence:
    hit: int
    position: int
    text: str
    score: float


def sentences(text: str, lines_kept: bool = False) -> list[str]:
    """Sentences and lines of a passage, without heading and list markers, and without
    the ellipses a snippet was cut with. Where the passage keeps its lines
    (``lines_kept``), headings, fences, table rows and rules are not prose and are left
    out; a snippet has its lines joined, so there only their markers go."""
    if lines_kept:
        text = "\n".join(_prose_lines(text))
    out = []
    for part in _SENTENCE_END.split(text.replace("…", " ")):
        s = _MARKUP.sub("", part).strip()
        if len(_WORD.findall(s)) >= 3:
            out.append(s if len(s) <= MAX_SENTENCE else s[: MAX_SENTENCE - 1].rstrip() + "…")
    return out


def _prose_lines(text: str) -> list[str]:
    """Paragraphs of prose, each on one line: hard-wrapped Markdown lines joined, so a
    sentence is not cut where the editor wrapped it."""
    paragraphs: list[list[str]] = [[]]
    fenced = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
            paragraphs.append([])
        elif fenced or _NOT_PROSE.match(line) or not line.strip():
            paragraphs.append([])
        else:
            if _MARKUP.match(line) and paragraphs[-1]:
                paragraphs.append([])  # a list item or quote starts its own
            paragraphs[-1].append(line.strip())
    return [" ".join(p) for p in paragraphs if p]


def _terms(text: str) -> set[str]:
    return {stem(w) for w in content_words(_WORD.findall(text.lower()))}


def extractive_answer(
    query: str,
    hits: Sequence[Hit],
    max_sentences: int = 3,
    max_passages: int = 3,
    texts: Sequence[str | None] = (),
) -> Answer:
    """The ``max_sentences`` sentences of the first ``max_passages`` hits sharing most
    query words (earlier hits win ties), in the order of the hits and of the text;
    citations are numbered in the order they first appear. ``texts`` are the hits'
    passages with their lines (None where unreadable: the snippet is used)."""
    if not hits:
        return Answer("No passage in the vault matches this query.")
    wanted = _terms(query)
    found: list[_Sentence] = []
    for i, hit in enumerate(hits[:max_passages]):
        passage = texts[i] if i < len(texts) else None
        split = sentences(passage, lines_kept=True) if passage else sentences(hit.snippet)
        for j, text in enumerate(split):
            overlap = len(wanted & _terms(text)) / max(1, len(wanted))
            found.append(_Sentence(i, j, text, overlap - 0.01 * i))
    best = sorted(found, key=lambda s: (-s.score, s.hit, s.position))[:max_sentences]
    if best and best[0].score <= 0:
        best = best[:1]  # nothing shares a word: the best passage's first sentence only
    if not best:
        first = hits[0]
        return Answer(
            f"{first.title} [1]", (Citation(1, first.path, first.start_line, first.end_line),)
        )
    best.sort(key=lambda s: (s.hit, s.position))
    numbers: dict[int, int] = {}
    parts = []
    for s in best:
        n = numbers.setdefault(s.hit, len(numbers) + 1)
        parts.append(f"{s.text} [{n}]")
    citations = tuple(
        Citation(n, hits[i].path, hits[i].start_line, hits[i].end_line) for i, n in numbers.items()
    )
    return Answer(" ".join(parts), citations)
