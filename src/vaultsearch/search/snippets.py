"""Snippets: about 300 characters around the densest run of query terms, terms marked.

Agents pay per token, so a hit carries a window that shows why it matched rather
than the whole chunk.
"""

from __future__ import annotations

import functools
import re

MARK_OPEN, MARK_CLOSE = "**", "**"
_WORD = re.compile(r"\w+", re.UNICODE)
# Marking "is", "a" and "the" in every line shows nothing about why a passage matched.
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)
_SUFFIXES = ("ational", "ations", "ation", "ings", "ing", "ies", "ied", "ed", "es", "ly", "s")


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A crude English stem, only to match ``running`` with ``run`` when marking."""
    w = word.lower()
    for suffix in _SUFFIXES:
        if len(w) > len(suffix) + 2 and w.endswith(suffix):
            return w[: -len(suffix)]
    return w


def make_snippet(text: str, terms: tuple[str, ...], width: int = 300) -> str:
    text = " ".join(text.split())
    stems = {stem(t) for t in terms if t and t.lower() not in _STOPWORDS}
    matches = [
        (m.start(), m.end(), stem(m.group()))
        for m in _WORD.finditer(text)
        if stem(m.group()) in stems
    ]
    start = _best_window(matches, len(text), width)
    end = min(len(text), start + width)
    if end < len(text):
        cut = text.rfind(" ", start, end)
        end = cut if cut > start + width // 2 else end
    if start > 0:
        nxt = text.find(" ", start, start + 30)
        start = nxt + 1 if nxt != -1 else start
    window = text[start:end]
    out = _mark(window, [(s - start, e - start) for s, e, _ in matches if s >= start and e <= end])
    return ("…" if start > 0 else "") + out + ("…" if end < len(text) else "")


def _best_window(matches: list[tuple[int, int, str]], length: int, width: int) -> int:
    if not matches or length <= width:
        return 0
    best_start, best_score = 0, -1
    for i, (s, _, _) in enumerate(matches):
        inside = {m[2] for m in matches[i:] if m[1] <= s + width}
        if len(inside) > best_score:
            best_score, best_start = len(inside), s
    return max(0, min(best_start - width // 4, length - width))


def _mark(window: str, spans: list[tuple[int, int]]) -> str:
    parts, pos = [], 0
    for s, e in spans:
        parts += [window[pos:s], MARK_OPEN, window[s:e], MARK_CLOSE]
        pos = e
    parts.append(window[pos:])
    return "".join(parts)
