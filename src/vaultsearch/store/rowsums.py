"""A checksum in every catalog row, over the row's stored columns.

SQLite checksums nothing inside a row: a flipped bit in a chunk's text or a note's
title that still decodes passes ``quick_check`` and every read, and once the vectors
left the catalog nothing else compared those bytes with anything. Each row of
``notes``, ``chunks``, ``links`` and ``failures`` therefore keeps ``row_sum``, the
CRC32 of its other columns, which ``check`` recomputes (``problems``).

No statement computes it: a new chunk or note is inserted with its sum (``row_sum``
in Python, over the values as SQLite stores them: ``Catalog._next_id``), every
``UPDATE`` of the catalog clears it (``row_sum=NULL``), and the writer notes which rows
it changed (``Catalog.unsealed``) and sums those just before it commits (``seal``), so
the cost is the rows a run wrote. No trigger or index is added: a larger schema is more of
page 1 that a flipped byte can make unreadable, and the salvage of a damaged
catalog reads through it. A catalog once sealed records it in ``meta``; from then on a row
without a sum is damage too (a flipped bit can turn the sum's type into NULL).
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Collection
from typing import Any

COLUMN = "row_sum"
SEALED_KEY = "row_sums"
FUNCTION = "vs_row_sum"

COLUMNS = {
    "notes": "id, path, content_hash, mtime_ns, size, title, aliases, tags, frontmatter, "
    "date, headings, warnings, source, kind, language",
    "chunks": "id, note_id, ordinal, heading_path, start_line, end_line, start_char, "
    "end_char, text, embed_hash, qualified_name, node_type, page",
    "links": "source_id, target, target_path, embed, heading, block, label, kind, line, "
    "target_key, label_key",
    "failures": "path, reason, mtime_ns, size, fault, tries",
}
"""What each sum covers: every column but the sum (a link's rowid is left out: it is
not a value anything reads, and SQLite may renumber it)."""

ADDED = {"failures": ("fault", "tries")}
"""Columns added to a table after its rows were first summed: a catalog sealed before
them has sums over the other columns (``widen``, and ``problems`` of a reader)."""


def row_sum(*values: Any) -> int:
    """The same for a row's values whether SQLite hands them to the function or a
    SELECT returns them (both give int, float, str, bytes or None)."""
    return zlib.crc32(repr(values).encode("utf-8", "surrogatepass"))


KEYS = {"notes": "id", "chunks": "id", "links": "source_id", "failures": "path"}
"""How a writer names the rows it wrote (``Catalog.unsealed``), each column indexed."""


def install(db: sqlite3.Connection) -> None:
    """The function ``seal`` calls, on a writer's connection."""
    db.create_function(FUNCTION, -1, row_sum, deterministic=True)


def seal(db: sqlite3.Connection, written: dict[str, set[Any]]) -> None:
    """Sum the rows named in ``written`` (by ``KEYS``) that have no sum, inside the
    caller's transaction; every row without one in a catalog never sealed before (an
    older index's, once)."""
    first = db.execute("SELECT 1 FROM meta WHERE key=?", (SEALED_KEY,)).fetchone() is None
    for table, cols in COLUMNS.items():
        update = f"UPDATE {table} SET {COLUMN}={FUNCTION}({cols}) WHERE {COLUMN} IS NULL"
        if first:
            db.execute(update)
            continue
        keys = sorted(written.get(table, ()))
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            marks = ",".join("?" * len(part))
            db.execute(f"{update} AND {KEYS[table]} IN ({marks})", part)
    if first:
        db.execute("INSERT INTO meta(key, value) VALUES (?, '1')", (SEALED_KEY,))
    for rows in written.values():
        rows.clear()


def widen(db: sqlite3.Connection, added: Collection[str]) -> None:
    """``added`` columns (of ``ADDED``) were just added to an older sealed catalog, in the
    caller's transaction: each row whose sum its older columns give is summed again
    over all of them; a row whose sum was already wrong stays wrong, for ``check``."""
    if db.execute("SELECT 1 FROM meta WHERE key=?", (SEALED_KEY,)).fetchone() is None:
        return
    for table, cols in COLUMNS.items():
        if not set(ADDED.get(table, ())) & set(added):
            continue
        older = _without(cols, added)
        db.execute(
            f"UPDATE {table} SET {COLUMN}={FUNCTION}({cols}) WHERE {COLUMN}={FUNCTION}({older})"
        )


def _without(cols: str, missing: Collection[str]) -> str:
    return ", ".join(c for c in (x.strip() for x in cols.split(",")) if c not in missing)


def problems(db: sqlite3.Connection, missing: Collection[str] = ()) -> list[str]:
    """Rows whose sum is not the one their columns give (``check``); a catalog of an
    older index, whose rows were never summed, has none to compare; one read before
    columns were added to it (``missing``, a reader's) has sums over the others."""
    sealed = db.execute("SELECT value FROM meta WHERE key=?", (SEALED_KEY,)).fetchone()
    if sealed is None:
        return []
    out = []
    for table, cols in COLUMNS.items():
        cols = _without(cols, missing)
        bad = unsealed = 0
        for stored, *values in db.execute(f"SELECT {COLUMN}, {cols} FROM {table}"):
            if stored is None:
                unsealed += 1
            elif stored != row_sum(*values):
                bad += 1
        if bad:
            out.append(f"catalog: {bad} {table} rows differ from the checksum written with them")
        if unsealed:
            out.append(f"catalog: {unsealed} {table} rows lack their checksum")
    return out
