"""A search hit as an agent asked for it: snippet length, full text, more passages per note.

Pure functions over a ``Hit`` and the note's file lines, so the shaping is tested
without a server and the line numbers always match what ``read_note`` shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vaultsearch.models import Hit, Passage
from vaultsearch.server.resources import note_uri


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
    out["uri"] = note_uri(hit.path)
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
