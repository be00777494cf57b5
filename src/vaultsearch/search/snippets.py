"""Snippets: about 300 characters around the densest run of query terms, matches as ranges.

Agents pay per token, so a hit carries a window that shows why it matched rather
than the whole chunk. Matches travel as (start, end) offsets into the snippet, never
as marks inside it: ``**`` collided with Markdown bold (``****rebuild****``). Text
output marks them with ``«»``, which Markdown gives no meaning, and a mark never lands
inside a wikilink, a code span or a URL: the whole construct is marked instead, and
the window never cuts one in half.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from vaultsearch.search.stopwords import STOPWORDS

_WORD = re.compile(r"\w+", re.UNICODE)
_PROTECTED = re.compile(
    r"!?\[\[[^\]\n]*\]\]"  # wikilink or embed
    r"|`[^`\n]+`"  # code span
    r"|\[[^\]\n]*\]\([^)\s]*\)"  # Markdown link
    r"|<?https?://[^\s<>)\]]+>?"  # bare URL
)
_SUFFIXES = ("ational", "ations", "ation", "ings", "ing", "ies", "ied", "ed", "es", "ly", "s")

Stemmer = Callable[[str], str]


@dataclass(frozen=True, slots=True)
class Snippet:
    text: str
    highlights: tuple[tuple[int, int], ...] = ()
    """Character ranges of ``text`` (start inclusive, end exclusive) that matched."""


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A crude English stem, only to match ``running`` with ``run`` when marking."""
    w = word.lower()
    for suffix in _SUFFIXES:
        if len(w) > len(suffix) + 2 and w.endswith(suffix):
            return w[: -len(suffix)]
    return w


def make_snippet(
    text: str,
    terms: tuple[str, ...],
    width: int = 300,
    stemmer: Stemmer = stem,
    also: frozenset[str] = frozenset(),
) -> Snippet:
    """``also``: index terms (stems) that match too, e.g. what a typo was widened to."""
    text = " ".join(text.split())
    stems = {stemmer(t) for t in terms if t and t.lower() not in STOPWORDS} | set(also)
    stem_of = {w: st for w in set(_WORD.findall(text)) if (st := stemmer(w)) in stems}
    matches = (
        [
            (m.start(), m.end(), stem_of[w])
            for m in _WORD.finditer(text)
            if (w := m.group()) in stem_of
        ]
        if stem_of
        else []
    )
    protected = [(m.start(), m.end()) for m in _PROTECTED.finditer(text)]
    start = _best_window(matches, len(text), width)
    end = min(len(text), start + width)
    if end < len(text):
        cut = text.rfind(" ", start, end)
        end = cut if cut > start + width // 2 else end
    if start > 0:
        nxt = text.find(" ", start, start + 30)
        start = nxt + 1 if nxt != -1 else start
    start, end = _outside(protected, start, end, width)
    spans = _whole_constructs([(s, e) for s, e, _ in matches if s >= start and e <= end], protected)
    lead = "…" if start > 0 else ""
    shift = len(lead) - start
    return Snippet(
        lead + text[start:end] + ("…" if end < len(text) else ""),
        tuple((s + shift, e + shift) for s, e in spans if s >= start and e <= end),
    )


def _outside(protected: list[tuple[int, int]], start: int, end: int, width: int) -> tuple[int, int]:
    """Move the window's edges out of any construct they fall inside: take it whole when it
    is short, leave it out when it is not."""
    for ps, pe in protected:
        if ps < start < pe:
            start = ps if pe - ps <= width // 3 else pe
        if ps < end < pe:
            end = pe if pe - ps <= width // 3 else ps
    return start, max(start, end)


def _whole_constructs(
    spans: list[tuple[int, int]], protected: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in spans:
        for ps, pe in protected:
            if ps <= s < pe:
                s, e = ps, max(e, pe)
                break
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _best_window(matches: list[tuple[int, int, str]], length: int, width: int) -> int:
    if not matches or length <= width:
        return 0
    best_start, best_score = 0, -1
    for i, (s, _, _) in enumerate(matches):
        inside = {m[2] for m in matches[i:] if m[1] <= s + width}
        if len(inside) > best_score:
            best_score, best_start = len(inside), s
    return max(0, min(best_start - width // 4, length - width))
