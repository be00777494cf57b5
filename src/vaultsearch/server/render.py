"""The text half of each tool answer: what a model reads when it ignores structured content.

Many clients show an agent only the text content, so it must carry everything needed
to act (paths, line ranges, how to get more) in as few tokens as possible; the
structured content holds the same facts for programs.
"""

from __future__ import annotations

import json

from vaultsearch.models import mark
from vaultsearch.server.schemas import (
    NoteList,
    NoteRef,
    NoteText,
    RelatedResult,
    SearchResult,
    TagList,
)

_MAX_REFS = 25


def _refs(label: str, refs: list[NoteRef] | list[str]) -> str | None:
    if not refs:
        return None
    names = [r if isinstance(r, str) else r.path for r in refs]
    more = f" (+{len(names) - _MAX_REFS} more)" if len(names) > _MAX_REFS else ""
    return f"{label}: {', '.join(names[:_MAX_REFS])}{more}"


def _lines(*parts: str | None) -> str:
    return "\n".join(p for p in parts if p)


def search(r: SearchResult) -> str:
    n = len(r.hits)
    head = f"{n} hit{'' if n == 1 else 's'} for {r.query!r} ({r.mode})"
    out = [head, r.message]
    for i, h in enumerate(r.hits, 1):
        where = f"{h.path}:{h.start_line}-{h.end_line}"
        heading = f"  [{h.heading_path}]" if h.heading_path else ""
        out.append(f"{i}. {where}  {h.title}{heading}  ({h.score:.4f}, conf {h.confidence:.2f})")
        out.append("   " + mark(h.snippet, h.highlights).replace("\n", " "))
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
        _refs("links to", r.outlinks),
        _refs("linked from", r.backlinks),
        _refs("unresolved links", r.unresolved_links),
        r.message,
        "---",
        r.text,
        f"--- truncated: call read_note with start_line={r.next_start_line} for more"
        if r.truncated
        else None,
    )


def related(r: RelatedResult) -> str:
    similar = [f"{s.path} ({s.score:.3f})" for s in r.similar]
    nearby = [f"{n.path} ({n.distance} hops)" for n in r.nearby]
    return _lines(
        f"{r.path} — {r.title}",
        r.message,
        _refs("links to", r.outlinks),
        _refs("linked from", r.backlinks),
        _refs("embeds", r.embeds),
        _refs("unresolved links", r.unresolved_links),
        _refs("nearby", nearby),
        _refs("similar", similar),
    )


def list_notes(r: NoteList) -> str:
    out = [f"{len(r.notes)} of {r.total} notes", r.message]
    out += [
        f"{n.path}  {n.title}  {n.date}" + (f"  #{' #'.join(n.tags)}" if n.tags else "")
        for n in r.notes
    ]
    if r.next_cursor:
        out.append(f"next page: cursor={r.next_cursor}")
    return _lines(*out)


def list_tags(r: TagList) -> str:
    rows = [
        f"{t.tag} {t.notes}" + (f" ({t.direct} direct)" if t.direct != t.notes else "")
        for t in r.tags
    ]
    return _lines(
        f"{len(r.tags)} of {r.total} tags (notes with the tag or a tag below it)", r.message, *rows
    )
