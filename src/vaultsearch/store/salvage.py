"""Embeddings still readable in a damaged catalog, one row at a time.

A catalog ``check`` found damaged is rebuilt from the vault's files; its vectors are
what spares that rebuild the model. Read as a whole it fails at the first bad page or
undecodable row, so each vector is looked up by itself (the b-tree is walked from its
root for every row, past a bad page elsewhere). When even that fails (a damaged schema
page hides every table), the file's bytes are scanned for the rows themselves, as
SQLite's ``.recover`` does: a row is the model key, the 32 hex digits of the text hash
and the vector, stored together in one cell; a shared catalog's ``-wal`` file is
scanned too, since rows committed since the last checkpoint live only there. A vector
is kept only when it is what a writer stores: ``dimension`` float32 values, finite, of
unit length. It is consulted after the per-user cache, whose rows are sound, so it only
supplies what the cache lost.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Iterable
from pathlib import Path

import numpy as np

UNIT_TOLERANCE = 1e-6
"""A stored vector's norm is 1 to about 1.2e-7 (float32 rounding, whatever the
dimension); one damaged byte in its mantissa moves the norm by up to ~1e-3 while
changing a value by ~0.02, enough to change answers: 1e-3 and even 1e-5 kept vectors
the damage had changed."""


class SalvagedEmbeddings:
    def __init__(self, path: Path, dimension: int) -> None:
        self.path = path
        self.dimension = dimension
        self.found = 0
        self._scanned: dict[str, dict[str, bytes]] = {}
        self.db: sqlite3.Connection | None = None
        try:
            db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
            db.text_factory = bytes  # a damaged text must not end the row's lookup
            db.execute("SELECT 1 FROM embeddings LIMIT 1").fetchall()
            self.db = db
        except (sqlite3.Error, ValueError):  # ValueError: a message quoting bad bytes
            pass

    def embedding_blobs(self, model: str, hashes: Iterable[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        hashes = list(hashes)
        for h in hashes if self.db is not None else ():
            try:
                row = self.db.execute(  # type: ignore[union-attr]
                    "SELECT vector FROM embeddings WHERE model=? AND text_hash=?", (model, h)
                ).fetchone()
            except (sqlite3.Error, ValueError):
                continue
            if row is not None and self._sound(row[0]):
                found[h] = bytes(row[0])
        if missing := [h for h in hashes if h not in found]:
            scanned = self._scan(model)
            found.update((h, scanned[h]) for h in missing if h in scanned)
        self.found += len(found)
        return found

    def _scan(self, model: str) -> dict[str, bytes]:
        if model not in self._scanned:
            data = b""
            for path in (self.path, self.path.with_name(self.path.name + "-wal")):
                with contextlib.suppress(OSError):
                    data += path.read_bytes()
            size = 4 * self.dimension
            rows: dict[str, bytes] = {}
            for m in re.finditer(re.escape(model.encode()) + rb"([0-9a-f]{32})", data):
                blob = data[m.end() : m.end() + size]
                if self._sound(blob):
                    rows.setdefault(m.group(1).decode(), blob)
            self._scanned[model] = rows
        return self._scanned[model]

    def _sound(self, blob: object) -> bool:
        if not isinstance(blob, bytes) or len(blob) != 4 * self.dimension:
            return False
        vector = np.frombuffer(blob, dtype=np.float32)
        if not np.all(np.isfinite(vector)):
            return False
        return abs(float(np.linalg.norm(vector)) - 1.0) < UNIT_TOLERANCE

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None
