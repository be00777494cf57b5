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

A catalog of index format 4 holds no vectors: the generation's vector segments do, by
chunk and sentence id. Their files are checked against their digests apart from the
catalog, so the segments still whole give the vector of each chunk whose row the
damaged catalog still reads (its id, embedded text's hash, text and kind, each looked up
by itself), and of each of its sentences.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from vaultsearch.embedding.locate import text_hash
from vaultsearch.parsers.sentences import unit_texts
from vaultsearch.store.catalog import SENTENCE_BITS, sentence_id
from vaultsearch.store.segments import Segment, folder_of, read_list
from vaultsearch.store.vectors import SegmentedVectors

UNIT_TOLERANCE = 1e-6
"""A stored vector's norm is 1 to about 1.2e-7 (float32 rounding, whatever the
dimension); one damaged byte in its mantissa moves the norm by up to ~1e-3 while
changing a value by ~0.02, enough to change answers: 1e-3 and even 1e-5 kept vectors
the damage had changed."""


class SalvagedEmbeddings:
    def __init__(
        self,
        path: Path,
        dimension: int,
        segment_lists: Sequence[Path] = (),
        segment_model: str | None = None,
    ) -> None:
        """``segment_lists``: the generation's chunk and sentence vector lists, whose
        vectors are of ``segment_model`` (the key the generation was built with)."""
        self.path = path
        self.dimension = dimension
        self.segment_lists = segment_lists
        self.segment_model = segment_model
        self._from_segments: dict[str, bytes] | None = None
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
        if model == self.segment_model and (missing := [h for h in hashes if h not in found]):
            held = self._segments()
            found.update((h, held[h]) for h in missing if h in held)
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

    def _segments(self) -> dict[str, bytes]:
        if self._from_segments is None:
            self._from_segments = {}
            if len(self.segment_lists) != 2:
                return self._from_segments
            # its own connection: the empty embeddings table may be what the damage hit
            with contextlib.suppress(Exception):  # whatever is left unread stays out
                uri = f"{self.path.resolve().as_uri()}?mode=ro&immutable=1"
                with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
                    db.text_factory = bytes
                    self._from_segments = _segment_vectors(db, self.segment_lists, self.dimension)
        return self._from_segments

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


def _whole_segments(list_path: Path, dimension: int) -> SegmentedVectors:
    """The list's segments whose files are there and as written (their digests)."""
    whole: list[Segment] = []
    with contextlib.suppress(ValueError):
        folder = folder_of(list_path)
        for entry in read_list(list_path).segments:
            seg = Segment(entry, folder)
            try:
                seg.ids, seg.rows  # noqa: B018 - each read checks its file's digest
            except Exception:
                continue
            whole.append(seg)
    return SegmentedVectors(dimension, whole)


def _segment_vectors(
    db: sqlite3.Connection, lists: Sequence[Path], dimension: int
) -> dict[str, bytes]:
    """Text hash -> float32 vector of every chunk and sentence the whole segments hold
    and the damaged catalog still names."""
    chunks, sentences = (_whole_segments(p, dimension) for p in lists)
    ids = {int(i) for i in chunks.ids()} | {int(i) >> SENTENCE_BITS for i in sentences.ids()}
    chunk_of: dict[str, int] = {}
    sentence_of: dict[str, int] = {}
    for cid in sorted(ids):
        try:
            row = db.execute(
                "SELECT text, embed_hash, note_id FROM chunks WHERE id=?", (cid,)
            ).fetchone()
            if row is None:
                continue
            text, embed_hash = row[0].decode(), row[1].decode()
            kind_row = db.execute("SELECT kind FROM notes WHERE id=?", (row[2],)).fetchone()
            kind = kind_row[0].decode() if kind_row else "note"
        except (sqlite3.Error, ValueError, AttributeError):  # UnicodeDecodeError included
            continue
        chunk_of.setdefault(embed_hash, cid)
        units = [text_hash(u) for u in unit_texts(text, kind)] or [embed_hash]
        for k, unit in enumerate(units):
            sentence_of.setdefault(unit, sentence_id(cid, k))
    out: dict[str, bytes] = {}
    for wanted, reader in ((sentence_of, sentences), (chunk_of, chunks)):
        held, rows = reader.vectors_of(list(wanted.values()))
        by_id = {int(i): r for i, r in zip(held, rows, strict=True)}
        for h, rid in wanted.items():
            if (row := by_id.get(rid)) is not None and np.all(np.isfinite(row)):
                out[h] = np.ascontiguousarray(row, dtype=np.float32).tobytes()
    return out
