"""Every note as a ``note://`` resource, for clients that attach files rather than call tools.

The listing comes from the files on disk at request time, so a note is listed (and
readable) before the index has caught up with it; titles come from the index when it
has them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

from mcp.server.mcpserver import MCPServer, ResourceSecurity
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.types import Resource

from vaultsearch.app.browse import Browser
from vaultsearch.errors import VaultsearchError
from vaultsearch.uris import CHUNK_TEMPLATE, code_uri, note_uri, parse_lines

if TYPE_CHECKING:
    from vaultsearch.app.vault import Vault

TEMPLATE = "note://{+path}"
MIME = "text/markdown"
RESOURCE_PAGE = 200
"""Resources per ``resources/list`` answer: a 2,700-note vault in one answer is 300 KB
that a client holds in memory before it shows the first name."""


def resource_page(
    items: list[Resource], cursor: str | None, size: int = RESOURCE_PAGE
) -> tuple[list[Resource], str | None]:
    """One page of ``items`` in URI order and the cursor of the next page, if any.
    The cursor is the last URI served, so a note added or removed between two pages
    neither repeats nor skips the others."""
    ordered = sorted(items, key=lambda r: str(r.uri))
    start = 0
    if cursor is not None:
        if not cursor.startswith("after:"):
            raise ValueError(f"{cursor!r} is not a cursor this server gave; list from the start.")
        last = unquote(cursor.removeprefix("after:"))
        start = next((i for i, r in enumerate(ordered) if str(r.uri) > last), len(ordered))
    page = ordered[start : start + size]
    more = start + size < len(ordered)
    return page, ("after:" + quote(str(page[-1].uri), safe="") if more and page else None)


def register_note_template(server: MCPServer, browser: Browser) -> None:
    """``{+path}`` keeps the slashes of folders; the SDK's own traversal check is
    switched off for it because ``confine`` judges the real path (symlinks too) and
    says why a path was refused, where the SDK would only answer "unknown resource"."""

    @server.resource(
        TEMPLATE,
        name="note",
        title="Note",
        description="The full Markdown text of a note, by vault-relative path.",
        mime_type=MIME,
        security=ResourceSecurity(exempt_params=frozenset({"path"})),
    )
    def read_note_resource(path: str) -> str:
        try:
            _, text, partial = browser.read_text(path)
            return text if partial is None else f"{text}\n\n[{partial}]\n"
        except VaultsearchError as exc:
            raise ResourceNotFoundError(str(exc)) from exc


def note_resources(browser: Browser) -> list[Resource]:
    """The vault's notes as ``note://``, the indexed files of named sources as ``code://``."""
    sources = browser.vault.source_set
    files = browser.vault.files()
    snap = browser.snapshot()
    notes = {n.path: n for n in snap.notes.values()} if snap is not None else {}
    out = []
    for path, info in files.items():
        if info.skip:
            continue
        source, rel = sources.split(path)
        note = notes.get(path)
        if not source:
            uri, mime = note_uri(path), MIME
        elif note is None:
            continue  # readable once indexed
        else:
            uri = code_uri(source, rel)
            mime = f"text/x-{note.language}" if note.language else _plain(note.kind)
        title = note.title if note is not None else None
        out.append(Resource(uri=uri, name=path, title=title, mime_type=mime, size=info.size))
    return out


def _plain(kind: str) -> str:
    return MIME if kind == "note" else "text/plain"


CODE_TEMPLATE = "code://{source}/{+path}"


def register_code_template(server: MCPServer, vault: Vault) -> None:
    """Files of named sources; a read answers with ``text/x-{language}`` (the listing's
    template can name only one type, so ``VaultServer.read_resource`` sets it)."""

    @server.resource(
        CODE_TEMPLATE,
        name="source_file",
        title="Source file",
        description="An indexed file of a named source, by source name and path in it; "
        "its MIME type is text/x-{language}.",
        mime_type="text/plain",
        security=ResourceSecurity(exempt_params=frozenset({"path"})),
    )
    def read_code_resource(source: str, path: str) -> str:
        return read_code(vault, source, path)[0]


def read_code(vault: Vault, source: str, path: str) -> tuple[str, str]:
    """(text, MIME type) of an indexed file of a named source."""
    from vaultsearch.app.sourceread import indexed_text

    try:
        note, text = indexed_text(vault, f"{unquote(source)}:{unquote(path)}")
    except VaultsearchError as exc:
        raise ResourceNotFoundError(str(exc)) from exc
    return text, f"text/x-{note.language}" if note.language else _plain(note.kind)


def register_chunk_template(server: MCPServer, vault: Vault, browser: Browser) -> None:
    """The passage a search hit cites (its ``chunk_uri``): the lines as ``read_note`` or
    ``read_source`` shows them, so the address stays good until the file changes."""

    @server.resource(
        CHUNK_TEMPLATE,
        name="chunk",
        title="Passage",
        description="The lines of one search hit, by the chunk_uri search returns.",
        mime_type="text/plain",
        security=ResourceSecurity(exempt_params=frozenset({"path"})),
    )
    def read_chunk_resource(lines: str, path: str) -> str:
        from vaultsearch.app.sourceread import passage_lines

        span = parse_lines(lines)
        if span is None:
            raise ResourceNotFoundError(
                f"{lines!r} is not a line range such as 12-20; use a hit's chunk_uri as given."
            )
        try:
            _, file_lines = passage_lines(vault, browser, unquote(path))
        except VaultsearchError as exc:
            raise ResourceNotFoundError(str(exc)) from exc
        start, end = span
        if start > len(file_lines):
            raise ResourceNotFoundError(
                f"{unquote(path)} has {len(file_lines)} lines, not {start}; search again."
            )
        return "\n".join(file_lines[start - 1 : end])
