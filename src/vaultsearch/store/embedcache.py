"""The per-user embedding cache: vectors that outlive any one index.

Keyed by model and the hash of the embedded text, so a deleted index, a second
``--index-dir``, a rebuild after damage or a second vault holding the same notes
finds every vector again instead of paying the model. SQLite in WAL mode lets
several processes share it; a size cap evicts the least recently used vectors.
A cache that cannot be opened or written is skipped: it only ever saves work.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from vaultsearch.store.catalog import PAGE_SIZE

CACHE_ENV = "VAULTSEARCH_CACHE_DIR"
CACHE_FILE = "embeddings.sqlite"

log = logging.getLogger("vaultsearch.cache")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    used INTEGER NOT NULL,
    PRIMARY KEY (model, text_hash)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS vectors_by_use ON vectors(used);
CREATE TABLE IF NOT EXISTS uses (
    model TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    used INTEGER NOT NULL,
    PRIMARY KEY (model, text_hash)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""
_USED = "MAX(v.used, COALESCE(u.used, 0))"
"""A vector's last use: when it was added (``vectors.used``) or last read (``uses``),
kept apart from the vector so that marking a read rewrites a 100-byte row, not the
row of the vector (about a page per vector: 520 MB for the 49k vectors of 9,126
chunks when all were stale)."""
TOUCH_BATCH = 200_000
"""Stale hits held in memory before they are marked used (``_touch``)."""
LAST_PUT = "last_put"
"""When vectors were last added (``meta``): a vector used since is among the newest
already, and ``get`` leaves its ``used`` as it is."""


def default_cache_dir(configured: str = "") -> Path | None:
    """The env var, then the config key, then ``$XDG_CACHE_HOME/vaultsearch`` or
    ``~/.cache/vaultsearch``; ``off`` in either turns the cache off."""
    value = os.environ.get(CACHE_ENV) or configured
    if value.strip().lower() == "off":
        return None
    if value:
        return Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "vaultsearch"


class EmbeddingCache:
    def __init__(self, folder: Path | None, max_bytes: int) -> None:
        self.folder = folder
        self.max_bytes = max_bytes
        self._db: sqlite3.Connection | None = None
        self._tried = False
        self._lock = threading.Lock()
        self._used: set[tuple[str, str]] = set()
        """(model, hash) of the vectors ``get`` found not used since the last ``put``:
        marked used together (``_touch``)."""

    def _conn(self) -> sqlite3.Connection | None:
        if self._tried:
            return self._db
        self._tried = True
        if self.folder is None or self.max_bytes <= 0:
            return None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.folder / CACHE_FILE, check_same_thread=False, timeout=30)
            db.execute(f"PRAGMA page_size={PAGE_SIZE}")  # a new file only; see catalog.py
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            log.warning("embedding cache at %s is not usable: %s", self.folder, exc)
            return None
        self._db = db
        return db

    def get(self, model: str, hashes: Iterable[str]) -> dict[str, bytes]:
        with self._lock:
            db = self._conn()
            if db is None:
                return {}
            found: dict[str, bytes] = {}
            hs = list(dict.fromkeys(hashes))
            try:
                row = db.execute("SELECT value FROM meta WHERE key=?", (LAST_PUT,)).fetchone()
                last_put = -1 if row is None else int(row[0])
                for start in range(0, len(hs), 500):
                    part = hs[start : start + 500]
                    marks = ",".join("?" * len(part))
                    rows = db.execute(
                        f"SELECT v.text_hash, v.vector, {_USED} FROM vectors v LEFT JOIN uses u"
                        f" USING (model, text_hash) WHERE v.model=? AND v.text_hash IN ({marks})",
                        (model, *part),
                    )
                    for h, v, used in rows:
                        found[h] = bytes(v)
                        if used <= last_put:
                            self._used.add((model, h))
                if len(self._used) >= TOUCH_BATCH:
                    self._touch(db)
            except sqlite3.Error as exc:
                log.warning("embedding cache read failed: %s", exc)
            return found

    def flush(self) -> None:
        """Mark the vectors read since the last flush used (a writer's run ends here)."""
        with self._lock:
            if self._used and (db := self._conn()) is not None:
                try:
                    self._touch(db)
                except sqlite3.Error as exc:
                    log.warning("embedding cache write failed: %s", exc)

    def _touch(self, db: sqlite3.Connection) -> None:
        """Mark the vectors ``get`` found stale used now (``uses``), in key order and in
        one transaction, so each page is written once: touching each vector's own row as
        it was read, batch after batch, was 84% of a first build's 4.7 GB of writes at
        45,630 chunks over a warm cache. A vector used since the last ``put`` is not
        stale: evictions go in order of use only relative to what was added."""
        now = time.time_ns()
        with db:
            db.executemany(
                "INSERT OR REPLACE INTO uses(model, text_hash, used) VALUES (?,?,?)",
                [(model, h, now) for model, h in sorted(self._used)],
            )
        self._used.clear()

    def put(self, model: str, items: Mapping[str, np.ndarray]) -> None:
        with self._lock:
            db = self._conn()
            if db is None or not items:
                return
            rows = [(model, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items.items()]
            try:
                if self._used:
                    self._touch(db)  # used before these were added
                now = time.time_ns()
                with db:
                    db.executemany(
                        "INSERT OR REPLACE INTO vectors(model, text_hash, vector, used)"
                        " VALUES (?,?,?,?)",
                        [(*row, now) for row in rows],
                    )
                    db.execute(
                        "INSERT OR REPLACE INTO meta(key, value) VALUES (?,?)", (LAST_PUT, now)
                    )
                self._evict(db)
            except sqlite3.Error as exc:
                log.warning("embedding cache write failed: %s", exc)

    def _evict(self, db: sqlite3.Connection) -> None:
        """Drop the least recently used tenth until the file's live pages fit the cap
        (counted from the page totals: summing every vector would read the whole file).
        The rows are counted only past the cap: a count reads a whole index of the
        table, 25 MB of a 400 MB cache at every edit that embedded a text."""
        while True:
            pages = db.execute("PRAGMA page_count").fetchone()[0]
            free = db.execute("PRAGMA freelist_count").fetchone()[0]
            size = db.execute("PRAGMA page_size").fetchone()[0]
            if (pages - free) * size <= self.max_bytes:
                return
            rows = db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
            if rows == 0:
                return
            victims = db.execute(
                f"SELECT v.model, v.text_hash FROM vectors v LEFT JOIN uses u"
                f" USING (model, text_hash) ORDER BY {_USED} LIMIT ?",
                (max(1, rows // 10),),
            ).fetchall()
            with db:
                for table in ("vectors", "uses"):
                    db.executemany(f"DELETE FROM {table} WHERE model=? AND text_hash=?", victims)

    def count(self, model: str | None = None) -> int:
        with self._lock:
            db = self._conn()
            if db is None:
                return 0
            if model is None:
                return int(db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])
            row = db.execute("SELECT COUNT(*) FROM vectors WHERE model=?", (model,)).fetchone()
            return int(row[0])

    def close(self) -> None:
        self.flush()
        with self._lock:
            if self._db is not None:
                self._db.close()
            self._db, self._tried = None, False
