"""Reading any indexed file back, by chunk id or by place: what ``read_source`` serves.

``read_note`` reads the vault's Markdown; a code file or a PDF of a named source is
found in the catalog instead, and a place in it can be named the way a hit names it:
lines, a heading, a qualified name (``Class.method``) or a page. A PDF's text is the
text the index extracted, so its lines are the lines its chunks cite.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vaultsearch.app.browse import (
    Browser,
    LineSlice,
    file_lines,
    heading_lines,
    slice_lines,
)
from vaultsearch.errors import QueryError
from vaultsearch.indexing.changes import read_regular
from vaultsearch.models import Heading
from vaultsearch.parsers import is_binary
from vaultsearch.store.catalog import ChunkRow

if TYPE_CHECKING:
    from vaultsearch.app.vault import Vault
    from vaultsearch.search.filters import NoteMeta
    from vaultsearch.search.snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class SourceRead:
    path: str
    source: str
    kind: str
    language: str
    title: str
    slice: LineSlice
    heading: str | None = None
    qualified_name: str | None = None
    page: int | None = None


def _note_id(snap: Snapshot, path: str) -> int:
    nid = snap.note_by_path.get(path.strip().lstrip("/"))
    if nid is not None:
        return nid
    close = difflib.get_close_matches(path, list(snap.note_by_path), n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else "."
    raise QueryError(
        f"No indexed file has the path {path!r}{hint}",
        fix="use a path as search returns it (name:path for a named source)",
    )


def _place(
    rows: list[ChunkRow], qualified_name: str | None, page: int | None
) -> tuple[int, int, str | None, int | None]:
    if qualified_name:
        q = qualified_name.strip()
        match = [r for r in rows if r.qualified_name == q] or [
            r for r in rows if r.qualified_name.endswith("." + q)
        ]
        if not match:
            known = sorted({r.qualified_name for r in rows if r.qualified_name})[:30]
            raise QueryError(f"The file has no {q!r}; its names are: {', '.join(known) or 'none'}.")
        return match[0].start_line, max(r.end_line for r in match), match[0].qualified_name, None
    assert page is not None
    on_page = [r for r in rows if r.page == page]
    if not on_page:
        pages = sorted({r.page for r in rows if r.page})
        raise QueryError(
            f"The file has no indexed text on page {page}; pages: "
            f"{', '.join(map(str, pages)) or 'none'}."
        )
    return min(r.start_line for r in on_page), max(r.end_line for r in on_page), None, page


def read_source(
    vault: Vault,
    chunk_id: int | None = None,
    path: str | None = None,
    start_line: int | None = None,
    end_line: int | None = None,
    heading: str | None = None,
    qualified_name: str | None = None,
    page: int | None = None,
    context: int = 0,
) -> SourceRead:
    given = [x for x in (start_line or end_line, heading, qualified_name, page) if x]
    if (chunk_id is None) == (path is None):
        raise QueryError("Pass either chunk_id or path (as search returns them), not both.")
    if len(given) > 1 or (chunk_id is not None and given):
        raise QueryError(
            "Name one place: lines, heading, qualified_name or page (with chunk_id, none)."
        )
    snap = vault.orchestrator.snapshot()
    if chunk_id is not None:
        row = snap.chunk_rows([chunk_id]).get(chunk_id)
        if row is None:
            raise QueryError(
                f"No chunk {chunk_id} in the index (ids change when a file is re-indexed).",
                fix="search again and use the chunk_id of a current hit",
            )
        note_id = row.note_id
        start_line, end_line = row.start_line, row.end_line
    else:
        assert path is not None
        note_id = _note_id(snap, path)
    note = snap.notes[note_id]
    catalog_note = snap.catalog.note_by_path(note.path)
    rows = snap.catalog.chunks_of(note_id)
    lines = file_lines(_text(vault, note.path, note.kind, rows))
    found_heading = found_name = found_page = None
    if heading:
        headings = [Heading(*h) for h in (catalog_note.headings if catalog_note else [])]
        start_line, end_line, found_heading = heading_lines(headings, len(lines), heading)
    elif qualified_name or page:
        start_line, end_line, found_name, found_page = _place(rows, qualified_name, page)
    return SourceRead(
        path=note.path,
        source=note.source,
        kind=note.kind,
        language=note.language,
        title=note.title,
        slice=slice_lines(lines, start_line, end_line, context),
        heading=found_heading,
        qualified_name=found_name,
        page=found_page,
    )


def read_as_indexed(vault: Vault, path: str) -> bool:
    """A named source's file or a PDF: read from the index, not as a vault note."""
    sources = vault.manager().sources
    parser = sources.parser_for(path)
    return bool(sources.split(path)[0]) or (parser is not None and is_binary(parser))


def passage_lines(vault: Vault, browser: Browser, path: str) -> tuple[str, list[str]]:
    """(path, lines) a hit cites: a vault note as its file is now (what read_note shows),
    a source's file or a PDF as indexed (what read_source shows)."""
    if read_as_indexed(vault, path):
        return path, file_lines(indexed_text(vault, path)[1])
    rel, text, _ = browser.read_text(path)
    return rel, file_lines(text)


def indexed_text(vault: Vault, path: str) -> tuple[NoteMeta, str]:
    """An indexed file's metadata and whole text, by its path as search returns it."""
    snap = vault.orchestrator.snapshot()
    note = snap.notes[_note_id(snap, path)]
    return note, _text(vault, note.path, note.kind, snap.catalog.chunks_of(note.id))


def places(vault: Vault, path: str) -> tuple[str, int, list[dict[str, int | str]]]:
    """An indexed file's outline: a code file's qualified names, a PDF's pages, else its
    chunks' headings, each with the lines it spans; and the file's path and line count."""
    snap = vault.orchestrator.snapshot()
    note = snap.notes[_note_id(snap, path)]
    rows = sorted(snap.catalog.chunks_of(note.id), key=lambda r: r.start_line)
    spans: dict[str, list[int]] = {}
    for r in rows:
        name = r.qualified_name or (f"page {r.page}" if r.page else " > ".join(r.heading_path))
        if name:
            span = spans.setdefault(name, [r.start_line, r.end_line])
            span[1] = max(span[1], r.end_line)
    items: list[dict[str, int | str]] = [
        {"level": 1 + (name.count(".") if rows and rows[0].qualified_name else 0),
         "text": name, "line": a, "end_line": b}
        for name, (a, b) in spans.items()
    ]  # fmt: skip
    total = max((r.end_line for r in rows), default=0)
    return note.path, total, items


def _text(vault: Vault, path: str, kind: str, rows: list[ChunkRow]) -> str:
    """The file as indexed. A PDF is rebuilt from its chunks: their lines number the
    extracted text, which is not in the file as bytes."""
    if kind == "pdf":
        return _from_chunks(rows)
    real = vault.manager().sources.file_path(path)
    limit = vault.manager().sources.read_limit
    data = read_regular(real, limit) if real is not None else "its source is not configured"
    if isinstance(data, str):
        raise QueryError(f"Cannot read {path!r}: {data}.", fix="vaultsearch index")
    return data.decode("utf-8", errors="replace")


def _from_chunks(rows: list[ChunkRow]) -> str:
    out: list[str] = []
    for r in sorted(rows, key=lambda r: r.start_line):
        body = r.text.split("\n")
        for i, line in enumerate(body):
            n = r.start_line + i
            while len(out) < n:
                out.append("")
            out[n - 1] = line
    return "\n".join(out)
