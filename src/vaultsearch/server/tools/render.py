"""The text half of each tool answer: what a model reads when it ignores structured content.

Many clients show an agent only the text content, so it must carry everything needed
to act (paths, line ranges, how to get more) in as few tokens as possible; the
structured content holds the same facts for programs.
"""

from __future__ import annotations

import json

from vaultsearch.app.answer import listed
from vaultsearch.models import mark
from vaultsearch.server.tools.schemas import (
    NoteText,
    SearchResult,
)

_MAX_REFS = 25


def _lines(*parts: str | None) -> str:
    return "\n".join(p for p in parts if p)


def search(r: SearchResult) -> str:
    n = len(r.hits)
    head = f"{n} hit{'' if n == 1 else 's'} for {r.query!r} ({r.mode})"
    if r.session_id:
        head += f", session {r.session_id}"
    out = [head, r.message]
    for i, h in enumerate(r.hits, 1):
        where = f"{h.path}:{h.start_line}-{h.end_line}"
        heading = f"  [{h.heading_path}]" if h.heading_path else ""
        out.append(f"{i}. {where}  {h.title}{heading}  ({h.score:.4f}, conf {h.confidence:.2f})")
        if h.snippet:
            out.append("   " + mark(h.snippet, h.highlights or []).replace("\n", " "))
        if h.text:
            out.append("   " + h.text.replace("\n", "\n   "))
        for p in h.passages or ():
            body = p.get("text") or p.get("snippet") or ""
            out.append(f"   also {p['start_line']}-{p['end_line']}: " + body.replace("\n", " "))
        if h.explain:
            out.append("   explain: " + json.dumps(h.explain, separators=(",", ":")))
    return _lines(*out)


def read_note(r: NoteText) -> str:
    span = f"lines {r.start_line}-{r.end_line} of {r.total_lines}"
    head = f"{r.path} — {r.title} ({span}{', section ' + r.heading if r.heading else ''})"
    meta = None
    if r.frontmatter and r.start_line > 1:
        meta = "frontmatter: " + json.dumps(r.frontmatter, ensure_ascii=False, default=str)
    return _lines(
        head,
        meta,
        listed("links to", r.outlinks or []),
        listed("linked from", r.backlinks or []),
        listed("unresolved links", r.unresolved_links or []),
        r.message,
        "---",
        r.text,
        f"--- truncated: call read_note with start_line={r.next_start_line} for more"
        if r.truncated
        else None,
    )
