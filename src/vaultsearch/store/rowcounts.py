"""The catalog's row counts, kept by triggers instead of counted per edit.

``SELECT COUNT(*)`` walks a whole b-tree: every edit's state file, ``status`` after it
and the link resolver's size test counted every note, chunk and link again, work that
grows with the vault while the edit does not. SQLite triggers keep one row per table
up to date inside the transaction that changes the table (a cascading delete of a
note's chunks and links fires them too), so a kept count is as transactional as the
rows it counts: a reader's snapshot sees the count of its own rows. ``check`` compares
each kept count with a real ``COUNT(*)`` (``problems``) and a repair recounts.

A catalog from before the table is given it by its first writer (one full count, once);
a reader of such a catalog counts rows as before.
"""

from __future__ import annotations

import sqlite3

TABLE = "row_counts"
COUNTED = ("notes", "chunks", "links")

_SCHEMA = [
    f"CREATE TABLE IF NOT EXISTS {TABLE} (name TEXT PRIMARY KEY, n INTEGER NOT NULL)",
    *(
        f"CREATE TRIGGER IF NOT EXISTS {TABLE}_{t}_{when} AFTER {event} ON {t} BEGIN"
        f" UPDATE {TABLE} SET n=n{step} WHERE name='{t}'; END"
        for t in COUNTED
        for when, event, step in (("in", "INSERT", "+1"), ("out", "DELETE", "-1"))
    ),
]


def install(db: sqlite3.Connection) -> None:
    """The table and its triggers, with every count taken once, in one transaction: a
    new catalog starts at zero, an older one is counted as it stands."""
    if _has_table(db):
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        if not _has_table(db):  # another writer's connection may have won the race
            for statement in _SCHEMA:
                db.execute(statement)
            for table in COUNTED:
                db.execute(
                    f"INSERT INTO {TABLE}(name, n) VALUES (?, (SELECT COUNT(*) FROM {table}))",
                    (table,),
                )
    except BaseException:
        db.rollback()
        raise
    db.commit()


def _has_table(db: sqlite3.Connection) -> bool:
    row = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (TABLE,)
    ).fetchone()
    return row is not None


def kept(db: sqlite3.Connection, table: str) -> int | None:
    """The kept count of ``table``; None for a table not counted or a catalog without
    counts (an older one, opened read-only)."""
    if table not in COUNTED:
        return None
    try:
        row = db.execute(f"SELECT n FROM {TABLE} WHERE name=?", (table,)).fetchone()
    except sqlite3.OperationalError:
        return None
    return None if row is None else int(row[0])


def counted(db: sqlite3.Connection, table: str) -> int:
    """A real count: every row read (``check``, a repair)."""
    return int(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


def problems(db: sqlite3.Connection) -> list[str]:
    """Each kept count that differs from a real count, in one line."""
    out = []
    for table in COUNTED:
        have = kept(db, table)
        if have is not None and have != (real := counted(db, table)):
            out.append(f"catalog: its kept count of {table} is {have}, its rows {real}")
    return out


def recount(db: sqlite3.Connection) -> bool:
    """Every kept count set to a real count (inside the caller's transaction); True when
    one was wrong."""
    wrong = False
    for table in COUNTED:
        have = kept(db, table)
        if have is not None and have != (real := counted(db, table)):
            db.execute(f"UPDATE {TABLE} SET n=? WHERE name=?", (real, table))
            wrong = True
    return wrong
