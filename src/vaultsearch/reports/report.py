"""Turning an agent's variables into a report file: checked citations, a safe name,
an atomic write into the reports folder.

Citations are checked against the files before anything is written, so a report never
cites a note or a line range that does not exist; each source gets its number, its
``note://`` URI and (unless given) the text of its lines.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from vaultsearch.errors import QueryError
from vaultsearch.writes.confined import ConfinedVault
from vaultsearch.writes.guard import folder_path, writable

ReadLines = Callable[[str], tuple[str, list[str]]]
"""A note path -> (its vault-relative path, its lines); raises for a missing note."""

_MAX_SOURCE_CHARS = 4000
_NAMING = threading.Lock()
"""Two reports in the same second must not pick the same free name."""


def cite(sources: Any, read_lines: ReadLines) -> list[dict[str, Any]]:
    """Numbered, checked sources (1..n in the order given)."""
    if not isinstance(sources, list):
        raise QueryError("sources must be a list of {path, start_line, end_line} objects.")
    out = []
    for n, raw in enumerate(sources, 1):
        if not isinstance(raw, dict) or not isinstance(raw.get("path"), str):
            raise QueryError(f"Source {n} needs a path, e.g. {{'path': 'a.md', 'start_line': 3}}.")
        rel, lines = read_lines(raw["path"])
        start = _line(raw.get("start_line", 1), n, "start_line")
        end = _line(raw.get("end_line", start), n, "end_line")
        if not start <= end <= max(1, len(lines)):
            raise QueryError(
                f"Source {n} ({rel}) cites lines {start}-{end}, but the note has "
                f"{len(lines)} lines; cite lines as search or get_search_results give them."
            )
        text = raw.get("text")
        if not isinstance(text, str):
            text = "\n".join(lines[start - 1 : end])[:_MAX_SOURCE_CHARS]
        out.append(
            {
                **{k: v for k, v in raw.items() if isinstance(k, str)},
                "number": n,
                "path": rel,
                "start_line": start,
                "end_line": end,
                "uri": "note://" + rel,
                "text": text,
            }
        )
    return out


def _line(value: Any, n: int, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise QueryError(f"Source {n}: {key} must be a line number of 1 or more, not {value!r}.")
    return value


def slug(text: str, limit: int = 60) -> str:
    """ASCII words joined by '-': safe in a file name on every system."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    words = re.findall(r"[A-Za-z0-9]+", ascii_text.lower())
    out = "-".join(words)[:limit].strip("-")
    return out or "report"


def file_name_for(now: datetime, title: str, file_name: str | None) -> str:
    if file_name:
        name = file_name.strip()
        if "/" in name or "\\" in name:
            raise QueryError(
                f"file_name {file_name!r} must be a bare file name; pass the folder as output_dir."
            )
        return name if name.lower().endswith(".md") else name + ".md"
    return f"{now:%Y%m%d_%H%M%S}_{slug(title)}.md"


def write_report(
    root: Path, folder: str, name: str, text: str, index_dir: Path | None = None
) -> str:
    """The vault-relative path written; never overwrites (a second report in the same
    second gets ``_2``, a named file that exists is refused)."""
    with _NAMING:
        return _write_new(root, folder, name, text, index_dir)


def _write_new(root: Path, folder: str, name: str, text: str, index_dir: Path | None) -> str:
    rel_folder, _ = folder_path(root, folder)
    target = f"{rel_folder}/{name}" if rel_folder else name
    rel, _ = writable(root, target, index_dir)
    files, data = ConfinedVault(root, index_dir), text.encode("utf-8")
    stem, n = rel.removesuffix(".md"), 2
    while True:
        try:
            files.write(rel, data, replace=False)
            return rel
        except FileExistsError:
            if not re.match(r"^\d{8}_\d{6}_", name):
                raise QueryError(f"{rel!r} exists already; pass another file_name.") from None
        rel, _ = writable(root, f"{stem}_{n}.md", index_dir)
        n += 1
