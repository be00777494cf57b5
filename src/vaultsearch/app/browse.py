"""Read-only access to the notes of a vault: which paths may be read, and what they hold.

The MCP tools and a Python user get the same answers and the same refusals from here.
The functions take plain values (text, note metadata, a graph, a snapshot) so each can
be tested alone; only ``Browser`` touches the file system and the index, and nothing
here ever writes.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import networkx as nx

from vaultsearch.errors import (
    IndexMissingError,
    QueryError,
    VaultsearchError,
)
from vaultsearch.indexing.changes import read_regular
from vaultsearch.models import Heading, ParsedNote
from vaultsearch.parsers import ParserRegistry, is_binary
from vaultsearch.search.filters import NoteMeta, folder_matches, tag_matches
from vaultsearch.vaultpaths import confine

if TYPE_CHECKING:
    from vaultsearch.app.vault import Vault
    from vaultsearch.search.snapshot import Snapshot

MAX_LINES = 200
MAX_CHARS = 20_000
PARTIAL_READ_BYTES = 262_144
Sort = Literal["path", "date"]


class NoteNotFoundError(VaultsearchError):
    """The path is inside the vault but names no readable note."""


@dataclass(frozen=True, slots=True)
class LineSlice:
    start_line: int
    end_line: int
    total_lines: int
    text: str
    """The lines with their 1-based file line numbers, frontmatter counted, as in search hits."""
    next_start_line: int | None = None
    """Set when the slice was cut at the size bound: where the next read should start."""


@dataclass(frozen=True, slots=True)
class NoteRead:
    path: str
    title: str
    tags: tuple[str, ...]
    frontmatter: dict[str, Any]
    slice: LineSlice
    heading: str | None = None
    outlinks: tuple[str, ...] = ()
    backlinks: tuple[str, ...] = ()
    unresolved: tuple[str, ...] = ()
    indexed: bool = False
    partial: str | None = None
    """Set when only the start of a very large file was read: says how much."""


@dataclass(frozen=True, slots=True)
class NoteEntry:
    path: str
    title: str
    tags: tuple[str, ...]
    date: str


@dataclass(frozen=True, slots=True)
class NotePage:
    notes: tuple[NoteEntry, ...]
    total: int
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class TagCount:
    tag: str
    notes: int
    """Notes carrying the tag or any tag below it: what a ``tags`` search filter matches."""
    direct: int
    """Notes carrying exactly this tag."""


@dataclass(frozen=True, slots=True)
class Linked:
    path: str
    title: str
    score: float = 0.0
    distance: int = 1


@dataclass(frozen=True, slots=True)
class Related:
    path: str
    title: str
    outlinks: tuple[Linked, ...] = ()
    backlinks: tuple[Linked, ...] = ()
    embeds: tuple[Linked, ...] = ()
    unresolved: tuple[str, ...] = ()
    nearby: tuple[Linked, ...] = ()
    """Notes 2..depth link hops away in either direction (depth 1 leaves it empty)."""
    similar: tuple[Linked, ...] = ()


# --- lines --------------------------------------------------------------------------
def file_lines(text: str) -> list[str]:
    """Lines as the parser counts them: split on newlines only, no phantom last line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def slice_lines(
    lines: Sequence[str],
    start_line: int | None = None,
    end_line: int | None = None,
    context: int = 0,
    max_lines: int = MAX_LINES,
    max_chars: int = MAX_CHARS,
) -> LineSlice:
    """A numbered, bounded run of lines; a cut says where to go on rather than failing."""
    total = len(lines)
    start, end = start_line or 1, end_line or total
    if start_line is not None and start_line > max(total, 1):
        raise QueryError(f"start_line {start_line} is past the end: the note has {total} lines.")
    if end_line is not None and end_line < start:
        raise QueryError(f"end_line {end_line} is before start_line {start}.")
    first, last = max(1, start - context), min(total, end + context)
    width = len(str(max(last, 1)))
    out: list[str] = []
    used = 0
    n = first
    while n <= last and len(out) < max_lines:
        line = f"{n:>{width}}| {lines[n - 1]}"
        if out and used + len(line) + 1 > max_chars:
            break
        out.append(line[:max_chars])
        used += len(line) + 1
        n += 1
    shown_end = n - 1 if out else first - 1
    return LineSlice(first, shown_end, total, "\n".join(out), n if n <= last else None)


def section_end(headings: Sequence[Heading], i: int, total_lines: int) -> int:
    """Last line of heading ``i``'s section, its subsections included."""
    after = (x.line for x in headings[i + 1 :] if x.level <= headings[i].level)
    return next(after, total_lines + 1) - 1


def heading_lines(
    headings: Sequence[Heading], total_lines: int, wanted: str
) -> tuple[int, int, str]:
    """(first line, last line, heading path) of a heading's section with its subsections.

    ``wanted`` is a heading's text or a path ``Parent > Child``, any case, ``#`` optional.
    """
    key = " > ".join(p.strip().lstrip("#").strip() for p in wanted.split(">")).lower()
    paths = []
    for h in headings:
        parts, cur = [h.text], h.parent
        while cur is not None:
            parts.insert(0, headings[cur].text)
            cur = headings[cur].parent
        paths.append(" > ".join(parts))
    for i, (h, p) in enumerate(zip(headings, paths, strict=True)):
        if h.text.lower() == key or p.lower() == key or p.lower().endswith(" > " + key):
            return h.line, section_end(headings, i, total_lines), p
    known = ", ".join(repr(p) for p in paths[:30]) or "none"
    raise QueryError(f"The note has no heading {wanted!r}; its headings are: {known}.")


# --- listings -------------------------------------------------------------------------
def iso_date(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).date().isoformat()


def _encode_cursor(sort: Sort, key: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps([sort, *key]).encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, sort: Sort) -> list[Any]:
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        size = 2 if sort == "path" else 3
        ok = isinstance(data, list) and len(data) == size and data[0] == sort
    except (ValueError, binascii.Error, IndexError, UnicodeDecodeError):
        ok = False
    if not ok:
        raise QueryError(
            "The cursor is not one list_notes gave out for this sort order; "
            "start again without a cursor."
        )
    return list(data[1:])


def page_notes(
    notes: Iterable[NoteMeta],
    folder: str | None = None,
    tag: str | None = None,
    sort: Sort = "path",
    limit: int = 50,
    cursor: str | None = None,
) -> NotePage:
    """One page of notes. The cursor is the sort key of the last note shown, not an
    offset, so notes added or removed between pages never shift or repeat entries."""
    chosen = [
        n
        for n in notes
        if (not folder or folder_matches(folder, n.path)) and (not tag or tag_matches(tag, n.tags))
    ]

    def key(n: NoteMeta) -> list[Any]:
        return [n.path] if sort == "path" else [-round(n.date, 3), n.path]

    chosen.sort(key=key)
    if cursor:
        after = _decode_cursor(cursor, sort)
        rest = [n for n in chosen if key(n) > after]
    else:
        rest = chosen
    page = rest[:limit]
    more = len(rest) > limit
    entries = tuple(NoteEntry(n.path, n.title, n.tags, iso_date(n.date)) for n in page)
    return NotePage(entries, len(chosen), _encode_cursor(sort, key(page[-1])) if more else None)


def tag_counts(notes: Iterable[NoteMeta]) -> list[TagCount]:
    """Tags compared without case, most used first; ``a/b`` counts toward ``a`` too."""
    direct: dict[str, int] = {}
    rolled: dict[str, int] = {}
    for n in notes:
        own = {t.lower().lstrip("#").strip("/") for t in n.tags} - {""}
        for t in own:
            direct[t] = direct.get(t, 0) + 1
        ancestors = {"/".join(t.split("/")[:i]) for t in own for i in range(1, t.count("/") + 2)}
        for t in ancestors:
            rolled[t] = rolled.get(t, 0) + 1
    rows = [TagCount(t, c, direct.get(t, 0)) for t, c in rolled.items()]
    return sorted(rows, key=lambda r: (-r.notes, r.tag))


# --- links and neighbours -------------------------------------------------------------
def _ref(g: nx.DiGraph, path: str, **extra: Any) -> Linked:
    return Linked(path, str(g.nodes[path].get("title", path)), **extra)


def link_neighbourhood(g: nx.DiGraph, path: str, depth: int = 1) -> Related:
    """Direct links of a note, and the notes 2..depth hops away, nearest first."""
    if path not in g:
        return Related(path, path)
    outs = sorted(g.successors(path))
    embeds = [p for p in outs if g.edges[path, p].get("embeds", 0)]
    dist = nx.single_source_shortest_path_length(g.to_undirected(as_view=True), path, depth)
    nearby = sorted((d, p) for p, d in dist.items() if d >= 2)
    return Related(
        path,
        str(g.nodes[path].get("title", path)),
        outlinks=tuple(_ref(g, p) for p in outs),
        backlinks=tuple(_ref(g, p) for p in sorted(g.predecessors(path))),
        embeds=tuple(_ref(g, p) for p in embeds),
        unresolved=tuple(g.nodes[path].get("unresolved", {})),
        nearby=tuple(_ref(g, p, distance=d) for d, p in nearby),
    )


def similar_notes(snap: Snapshot, note_id: int, limit: int = 10) -> list[tuple[int, float]]:
    """(note id, cosine) of the notes nearest to the mean of this note's chunk vectors.

    The vectors come back out of the index itself, so this costs no model call."""
    ids = snap.chunks_by_note.get(note_id)
    chunk_vectors = snap.reader("vectors")
    if ids is None or not len(ids) or not len(chunk_vectors):
        return []
    held, vectors = chunk_vectors.vectors_of(ids)
    if len(held) != len(ids):  # a chunk without a vector: the index is mid-repair
        return []
    k = min(len(chunk_vectors), len(ids) + limit * 8)
    best: dict[int, float] = {}
    for cid, score in chunk_vectors.nearest(vectors.mean(axis=0), k):
        nid = snap.note_of_chunk.get(cid)
        if nid is not None and nid != note_id:
            best.setdefault(nid, score)
    return sorted(best.items(), key=lambda kv: -kv[1])[:limit]


# --- the vault ------------------------------------------------------------------------
class Browser:
    """Reads a vault's files and its committed index for one ``Vault``; safe to share
    between threads (each thread parses with its own parser)."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self._local = threading.local()

    def snapshot(self) -> Snapshot | None:
        """The current index generation, or None while no index has been built."""
        try:
            return self.vault.orchestrator.snapshot()
        except IndexMissingError:
            return None

    def notes(self) -> tuple[list[NoteMeta], bool]:
        """Indexed note metadata; before the first index, the note files themselves
        (no tags, title from the file name), so browsing works while it builds."""
        snap = self.snapshot()
        if snap is not None:
            return list(snap.notes.values()), True
        files = self.vault.manager().scan().values()
        return [
            NoteMeta(0, f.path, Path(f.path).stem, (), {}, f.mtime_ns / 1e9)
            for f in files
            if not f.skip
        ], False

    def find(self, path: str) -> tuple[str, Path]:
        """A readable note for ``path``: as given, with ``.md`` added, or by its unique
        file name; otherwise an error naming the closest paths."""
        source, _ = self.vault.manager().sources.split(path)
        if source:
            raise NoteNotFoundError(
                f"{path!r} is a file of the source '{source}', not a note of the vault.",
                fix=f"read it with read_source(path={path!r})",
            )
        rel, real = confine(self.vault.root, path)
        try:
            is_file = real.is_file()
        except OSError as exc:  # e.g. a folder above it that may not be entered
            raise QueryError(f"Cannot read {rel!r}: {exc.strerror or exc}.") from None
        if is_file:
            parser = self._parsers().parser_for(rel)
            if parser is not None and is_binary(parser):
                raise NoteNotFoundError(
                    f"{rel!r} is a PDF: its text is read by page, not as a note.",
                    fix=f"read it with read_source(path={rel!r}, page=N)",
                )
            if not self._is_note(rel):
                raise NoteNotFoundError(
                    f"{rel!r} is not a note: only files the index reads can be read "
                    "(those the [parsers] table maps, outside ignored folders)."
                )
            return rel, real
        if not Path(rel).suffix and (self.vault.root / (rel + ".md")).is_file():
            return self.find(rel + ".md")
        known = [n.path for n in self.notes()[0]]
        stem = Path(rel).stem.lower()
        same = [p for p in known if Path(p).stem.lower() == stem]
        if len(same) == 1 and (self.vault.root / same[0]).is_file():
            return self.find(same[0])
        close = same or difflib.get_close_matches(rel, known, n=3, cutoff=0.4)
        hint = f"; did you mean {', '.join(repr(c) for c in close[:3])}?" if close else "."
        raise NoteNotFoundError(
            f"There is no note {path!r} in the vault{hint}",
            fix="use a path exactly as search or list_notes returns it",
        )

    def _is_note(self, rel: str) -> bool:
        """Reports are kept out of the index but stay readable: an agent reads back
        what it wrote."""
        if self._parsers().parser_for(rel) is None:
            return False
        reports = self.vault.config.reports.folder.strip("/") + "/"
        return rel.startswith(reports) or not self.vault.manager().rules.ignored(rel)

    def _parsers(self) -> ParserRegistry:
        if not hasattr(self._local, "parsers"):
            self._local.parsers = ParserRegistry(self.vault.config.parsers)
        registry: ParserRegistry = self._local.parsers
        return registry

    def read_text(self, path: str) -> tuple[str, str, str | None]:
        """(vault-relative path, text, why it is partial) of a note; slices are cut from
        the text so that line numbers match the file and the search hits. A file over
        ``vault.max_file_size`` is not in the index; only its first ``PARTIAL_READ_BYTES``
        are read (and parsed), so one huge file cannot make every call slow."""
        rel, real = self.find(path)
        limit = self.vault.config.vault.max_file_size
        data = read_regular(real, limit + 1)
        if isinstance(data, str):
            raise QueryError(f"Cannot read {rel!r}: {data}.")
        partial = None
        if len(data) > limit:
            keep = min(limit, PARTIAL_READ_BYTES)
            cut = data.rfind(b"\n", 0, keep) + 1
            data = data[: cut if cut > keep // 2 else keep]  # one huge line: cut in it
            partial = (
                f"Only the first {len(data):,} bytes of this {real.stat().st_size:,}-byte file "
                f"were read: it is over vault.max_file_size, so it is not in the index."
            )
        return rel, data.decode("utf-8", errors="replace"), partial

    def parse(self, path: str) -> tuple[str, ParsedNote, list[str], str | None]:
        """(vault-relative path, the parsed note, its file lines, why it is partial)."""
        rel, text, partial = self.read_text(path)
        parser = self._parsers().parser_for(rel)
        assert parser is not None  # find() admits notes only
        return rel, parser.parse(rel, text), file_lines(text), partial

    def read_note(
        self,
        path: str,
        heading: str | None = None,
        start_line: int | None = None,
        end_line: int | None = None,
        context: int = 0,
    ) -> NoteRead:
        rel, note, lines, partial = self.parse(path)
        found = None
        if heading:
            if start_line is not None or end_line is not None:
                raise QueryError("Pass either heading or start_line/end_line, not both.")
            start_line, end_line, found = heading_lines(note.headings, len(lines), heading)
        part = slice_lines(lines, start_line, end_line, context)
        snap = self.snapshot()
        links = (
            link_neighbourhood(snap.reader("graph").graph, rel)
            if snap is not None
            else Related(rel, rel)
        )
        return NoteRead(
            rel,
            note.title,
            note.tags,
            note.frontmatter,
            part,
            found,
            tuple(x.path for x in links.outlinks),
            tuple(x.path for x in links.backlinks),
            links.unresolved,
            snap is not None and rel in snap.note_by_path,
            partial,
        )

    def related(self, path: str, depth: int = 1, limit: int = 10) -> Related | None:
        """Links and similar notes; None while no index exists to hold them."""
        rel, _ = self.find(path)
        snap = self.snapshot()
        if snap is None:
            return None
        links = link_neighbourhood(snap.reader("graph").graph, rel, depth)
        nid = snap.note_by_path.get(rel)
        similar = similar_notes(snap, nid, limit) if nid is not None else []
        found = tuple(
            Linked(snap.notes[i].path, snap.notes[i].title, round(s, 4)) for i, s in similar
        )
        title = snap.notes[nid].title if nid is not None else links.title
        return replace(links, path=rel, title=title, similar=found)

    def frontmatter_fields(self) -> set[str] | None:
        """Every frontmatter key used in the index, or None before the first index."""
        snap = self.snapshot()
        if snap is None:
            return None
        return {k for n in snap.notes.values() for k in n.frontmatter}
