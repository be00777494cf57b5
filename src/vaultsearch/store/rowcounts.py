"""The catalog's row counts, kept by triggers instead of counted per edit.

``SELECT COUNT(*)`` walks a whole b-tree: every edit's state file, ``status`` after it
and the link resolver's size test counted every note, chunk and link again, work that
grows with the vault while the edit does not. SQLite triggers keep one meta row per
table up to date inside the transaction that changes the table (a cascading delete of a
note's chunks and links fires them too), so a kept count is as transactional as the
rows it counts: a reader's snapshot sees the count of its own rows. ``check`` compares
each kept count with a real ``COUNT(*)`` (``problems``) and a repair recounts.

A catalog from before the kept counts is given them by its first writer (one full count,
once); a reader of such a catalog counts rows as before.
"""

from __future__ import annotations

import sqlite3

PREFIX = "rows."
"""Meta keys ``rows.notes``, ``rows.chunks``, ``rows.links``: rows of the meta table,
whose page every run writes anyway (the generation it publishes), so keeping the counts
there adds no page to an edit's WAL (a table of their own added one, 16 KB with its
checkpoint, at every edit)."""
COUNTED = ("notes", "chunks", "links")

_EVENTS = (("in", "INSERT", "+1"), ("out", "DELETE", "-1"))
_NAMES = [f"count_{t}_{when}" for t in COUNTED for when, _, _ in _EVENTS]
_TRIGGERS = [
    f"CREATE TRIGGER IF NOT EXISTS count_{t}_{when} AFTER {event} ON {t} BEGIN"
    f" UPDATE meta SET value=CAST(value AS INTEGER){step} WHERE key='{PREFIX}{t}'; END"
    for t in COUNTED
    for when, event, step in _EVENTS
]


def install(db: sqlite3.Connection) -> None:
    """The triggers, with every count taken once, in one transaction: a new catalog
    starts at zero, an older one is counted as it stands."""
    if _installed(db):
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        if not _installed(db):  # another writer's connection may have won the race
            for statement in _TRIGGERS:
                db.execute(statement)
            for table in COUNTED:
                db.execute(
                    "INSERT OR REPLACE INTO meta(key, value)"
                    f" VALUES (?, (SELECT COUNT(*) FROM {table}))",
                    (PREFIX + table,),
                )
    except BaseException:
        db.rollback()
        raise
    db.commit()


def _installed(db: sqlite3.Connection) -> bool:
    marks = ",".join("?" * len(_NAMES))
    triggers = db.execute(
        f"SELECT COUNT(*) FROM sqlite_master WHERE type='trigger' AND name IN ({marks})",
        _NAMES,
    ).fetchone()[0]
    return triggers == len(_TRIGGERS) and all(kept(db, t) is not None for t in COUNTED)


def kept(db: sqlite3.Connection, table: str) -> int | None:
    """The kept count of ``table``; None for a table not counted or a catalog without
    counts (an older one, opened read-only)."""
    if table not in COUNTED:
        return None
    try:
        row = db.execute("SELECT value FROM meta WHERE key=?", (PREFIX + table,)).fetchone()
    except sqlite3.OperationalError:
        return None
    try:
        return None if row is None else int(row[0])
    except (TypeError, ValueError):
        return None


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
            db.execute("UPDATE meta SET value=? WHERE key=?", (str(real), PREFIX + table))
            wrong = True
    return wrong
