"""The resource addresses a hit carries, shared by every surface and the MCP templates.

``note://`` names a vault note, ``code://`` a file of a named source, and ``chunk://``
the exact passage a hit cites (its lines), so an agent can fetch just that passage
with ``resources/read`` instead of the whole file.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

CHUNK_TEMPLATE = "chunk://{lines}/{+path}"


def note_uri(path: str) -> str:
    return "note://" + quote(path, safe="/")


def code_uri(source: str, path: str) -> str:
    return f"code://{quote(source, safe='')}/{quote(path, safe='/')}"


def file_uri(path: str, source: str = "") -> str:
    """A hit's whole file: ``note://`` for the vault, ``code://`` for a named source."""
    if source and path.startswith(source + ":"):
        return code_uri(source, path[len(source) + 1 :])
    return note_uri(path)


def chunk_uri(path: str, start_line: int, end_line: int) -> str:
    return f"chunk://{start_line}-{end_line}/{quote(path, safe='/')}"


def parse_lines(lines: str) -> tuple[int, int] | None:
    """``12-20`` from a ``chunk://`` address as (12, 20); None when it is not a range."""
    start, _, end = unquote(lines).partition("-")
    if not (start.isdigit() and end.isdigit()) or not 1 <= int(start) <= int(end):
        return None
    return int(start), int(end)
