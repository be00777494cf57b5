"""The one answer of a search that every surface serialises, and the shaping of its hits.

``SearchAnswer.to_dict`` is the JSON of a search on every surface: the CLI's ``--json``
prints its hits, MCP's structured content and REST's body extend it with what only they
say (index state, session, an extractive answer). Hit shaping (snippet length, full
text, more passages per note) is pure functions over a ``Hit`` and the note's file
lines, so it is tested without a server and the line numbers always match what
``read_note`` shows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from vaultsearch.models import Hit, Passage, SearchHits
from vaultsearch.search.request import SearchRequest
from vaultsearch.uris import chunk_uri, file_uri


def trim(text: str, highlights: Sequence[Sequence[int]], limit: int) -> tuple[str, list[list[int]]]:
    """At most ``limit`` characters, cut at a word, with the highlights that still fit."""
    if len(text) <= limit:
        return text, [list(h) for h in highlights]
    cut = text.rfind(" ", 0, limit)
    cut = cut if cut > limit // 2 else limit
    return text[:cut].rstrip() + "…", [list(h) for h in highlights if h[1] <= cut]


def passage_text(lines: Sequence[str], start_line: int, end_line: int) -> str:
    return "\n".join(lines[max(start_line, 1) - 1 : end_line]).strip("\n")


def _opening(text: str, limit: int) -> str:
    return trim(" ".join(text.split()), (), limit)[0]


def shape_hit(
    hit: Hit,
    lines: Sequence[str] | None,
    chunks: int = 1,
    snippet_chars: int = 300,
    full_text: bool = False,
    explain: bool = False,
) -> dict[str, Any]:
    """The hit's wire form. ``lines`` (the note's file lines) are needed only for
    ``full_text`` or ``chunks`` above 1; without them the extra parts are left out."""
    out = hit.to_dict()
    out["chunk_id"] = hit.chunk_id
    out["uri"] = file_uri(hit.path, hit.source)
    out["chunk_uri"] = chunk_uri(hit.path, hit.start_line, hit.end_line)
    if not out["heading_path"]:
        del out["heading_path"]
    if full_text and lines is not None:
        out["text"] = passage_text(lines, hit.start_line, hit.end_line)
        del out["snippet"], out["highlights"]
    elif snippet_chars == 0:
        del out["snippet"], out["highlights"]
    else:
        out["snippet"], out["highlights"] = trim(hit.snippet, hit.highlights, snippet_chars)
    if not out.get("highlights", True):
        del out["highlights"]
    more: tuple[Passage, ...] = hit.explain.more if hit.explain is not None else ()
    if chunks > 1 and more and lines is not None:
        out["passages"] = [_passage(p, lines, snippet_chars, full_text) for p in more[: chunks - 1]]
    if not explain:
        out.pop("explain", None)
    return out


def _passage(
    p: Passage, lines: Sequence[str], snippet_chars: int, full_text: bool
) -> dict[str, Any]:
    out: dict[str, Any] = {"start_line": p.start_line, "end_line": p.end_line}
    if p.heading_path:
        out["heading_path"] = p.heading_path
    text = passage_text(lines, p.start_line, p.end_line)
    if full_text:
        out["text"] = text
    elif snippet_chars:
        out["snippet"] = _opening(text, snippet_chars)
    return out


Lines = Callable[[str], Sequence[str] | None]
"""A note's file lines by its path; None when it cannot be read now."""


@dataclass(frozen=True)
class SearchAnswer:
    """A request and its hits: what a search answers, before any surface adds to it."""

    request: SearchRequest
    hits: SearchHits

    @property
    def degraded(self) -> str | None:
        return self.hits.degraded

    def needs_lines(self) -> bool:
        return self.request.full_text or self.request.chunks > 1

    def to_dict(self, lines: Lines | None = None) -> dict[str, Any]:
        """The wire form; ``lines`` is read only when full text or more passages were asked."""
        r = self.request
        read = lines if lines is not None and self.needs_lines() else None
        out: dict[str, Any] = {
            "query": r.query,
            "mode": r.mode,
            "hits": [
                shape_hit(
                    h,
                    read(h.path) if read else None,
                    r.chunks,
                    r.snippet_chars,
                    r.full_text,
                    r.explain,
                )
                for h in self.hits
            ],
        }
        if self.degraded:
            out["degraded"] = self.degraded
        return out


def lines_reader(vault: Any, browser: Any = None) -> Lines:
    """The file lines a hit's passages cite, as ``read_note`` and ``read_source`` number them."""
    from vaultsearch.app.browse import Browser
    from vaultsearch.app.sourceread import passage_lines
    from vaultsearch.errors import VaultsearchError

    reader = browser if browser is not None else Browser(vault)

    def lines(path: str) -> Sequence[str] | None:
        try:
            return passage_lines(vault, reader, path)[1]
        except VaultsearchError:
            return None

    return lines
