"""The catalog: the transactional source of truth beside the derived indexes.

SQLite in WAL mode gives one writer and many snapshot readers without a server.
FAISS, Tantivy and the graph can all be rebuilt from it, and the embedding cache
in it is what makes that rebuild free of model calls.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vaultsearch.embedding.locate import text_hash
from vaultsearch.models import Chunk, Link, ParsedNote
from vaultsearch.parsers.sentences import MAX_UNITS, unit_texts

SENTENCE_BITS = (MAX_UNITS - 1).bit_length()

PAGE_SIZE = 8192
"""An embedding row (fingerprint key, hash, 1,536 bytes of vector) is ~1.7 KB: past the
~1 KB a 4 KB page keeps in a WITHOUT ROWID row, so each one spilled into an overflow page
of its own and took ~4.7 KB on disk; in 8 KB pages it takes ~2.4 KB (24 against 47 MB
per 10,000 vectors). SQLite applies it to a new file only."""


def sentence_id(chunk_id: int, unit: int) -> int:
    """A sentence's id in the sentence index: its chunk's id in the high bits, so the
    sentences of a chunk are one contiguous id range."""
    return (chunk_id << SENTENCE_BITS) | unit


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS notes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    path TEXT NOT NULL UNIQUE,
    content_hash TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    title TEXT NOT NULL,
    aliases TEXT NOT NULL,
    tags TEXT NOT NULL,
    frontmatter TEXT NOT NULL,
    date REAL NOT NULL,
    headings TEXT NOT NULL,
    warnings TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL DEFAULT 'note',
    language TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    heading_path TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    start_char INTEGER NOT NULL,
    end_char INTEGER NOT NULL,
    text TEXT NOT NULL,
    embed_hash TEXT NOT NULL,
    qualified_name TEXT NOT NULL DEFAULT '',
    node_type TEXT NOT NULL DEFAULT '',
    page INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS chunks_by_note ON chunks(note_id);
CREATE TABLE IF NOT EXISTS links (
    source_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    target TEXT NOT NULL,
    target_path TEXT,
    embed INTEGER NOT NULL,
    heading TEXT,
    block TEXT,
    label TEXT,
    kind TEXT NOT NULL,
    line INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS links_by_source ON links(source_id);
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, text_hash)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS failures (
    path TEXT PRIMARY KEY,
    reason TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL
);
"""
_ADDED_COLUMNS = {
    "notes": (
        ("source", "TEXT NOT NULL DEFAULT ''"),
        ("kind", "TEXT NOT NULL DEFAULT 'note'"),
        ("language", "TEXT NOT NULL DEFAULT ''"),
    ),
    "chunks": (
        ("qualified_name", "TEXT NOT NULL DEFAULT ''"),
        ("node_type", "TEXT NOT NULL DEFAULT ''"),
        ("page", "INTEGER NOT NULL DEFAULT 0"),
    ),
}
"""Columns added after the first release: an older catalog gets them in place, with
defaults that are true of everything it holds (Markdown notes of the vault), so an
existing index keeps working without a rebuild or a single model call."""


@dataclass(frozen=True, slots=True)
class NoteRow:
    id: int
    path: str
    content_hash: str
    mtime_ns: int
    size: int
    title: str
    aliases: list[str]
    tags: list[str]
    frontmatter: dict[str, Any]
    date: float
    headings: list[list[Any]]
    warnings: list[str]
    source: str = ""
    kind: str = "note"
    language: str = ""


@dataclass(frozen=True, slots=True)
class ChunkRow:
    id: int
    note_id: int
    ordinal: int
    heading_path: tuple[str, ...]
    start_line: int
    end_line: int
    start_char: int
    end_char: int
    text: str
    embed_hash: str
    qualified_name: str = ""
    node_type: str = ""
    page: int = 0


@dataclass(frozen=True, slots=True)
class LinkRow:
    source_id: int
    target: str
    target_path: str | None
    embed: bool
    heading: str | None
    block: str | None
    label: str | None
    kind: str
    line: int


_NOTE_COLS = (
    "id, path, content_hash, mtime_ns, size, title, aliases, tags, frontmatter, date, "
    "headings, warnings, source, kind, language"
)
_CHUNK_COLS = (
    "id, note_id, ordinal, heading_path, start_line, end_line, start_char, end_char, "
    "text, embed_hash, qualified_name, node_type, page"
)


def _note_row(r: Sequence[Any]) -> NoteRow:
    return NoteRow(
        r[0], r[1], r[2], r[3], r[4], r[5],
        json.loads(r[6]), json.loads(r[7]), json.loads(r[8]), r[9],
        json.loads(r[10]), json.loads(r[11]), *r[12:],
    )  # fmt: skip


def _chunk_row(r: Sequence[Any]) -> ChunkRow:
    return ChunkRow(r[0], r[1], r[2], tuple(json.loads(r[3])), *r[4:])


def _missing_columns(db: sqlite3.Connection) -> list[tuple[str, str, str]]:
    out = []
    for table, columns in _ADDED_COLUMNS.items():
        have = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
        if not have:
            continue  # an empty or damaged file: its own check reports it
        out += [(table, name, decl) for name, decl in columns if name not in have]
    return out


def _column_list(cols: str, missing: set[str]) -> str:
    """``cols`` with literal defaults for the added columns an older catalog lacks, so a
    reader of a published generation (never written again) needs no migration."""
    defaults = {"source": "''", "kind": "'note'", "language": "''"}
    defaults |= {"qualified_name": "''", "node_type": "''", "page": "0"}
    parts = [c.strip() for c in cols.split(",")]
    return ", ".join(f"{defaults[c]} AS {c}" if c in missing else c for c in parts)


def seal_catalog(path: Path) -> None:
    """Fold the WAL into the file and leave WAL mode: a published generation is never
    written again, and a single file is what read-only readers (another user, a
    read-only mount) can open, and what a copy or a damaged -wal cannot split."""
    db = sqlite3.connect(path)
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("PRAGMA journal_mode=DELETE")
    finally:
        db.close()


def open_catalog_for_reading(path: Path) -> Catalog:
    """Read-only; where SQLite cannot use the WAL files (another user, a read-only
    mount, no writer running), the file is read as immutable instead."""
    catalog = None
    try:
        catalog = Catalog(path, readonly=True)
        catalog.db.execute("SELECT COUNT(*) FROM meta").fetchone()
        return catalog
    except sqlite3.OperationalError:
        if catalog is not None:
            catalog.close()
    return Catalog(path, readonly=True, immutable=True)


class Catalog:
    """One SQLite connection. Writers use ``transaction()``; readers just query."""

    def __init__(self, path: Path, readonly: bool = False, immutable: bool = False) -> None:
        self.path = path
        if readonly:
            uri = f"{path.resolve().as_uri()}?mode=ro" + ("&immutable=1" if immutable else "")
            self.db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path, check_same_thread=False)
            self.db.execute(f"PRAGMA page_size={PAGE_SIZE}")  # a new file only
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.executescript(_SCHEMA)
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA busy_timeout=10000")
        self.note_cols, self.chunk_cols = _NOTE_COLS, _CHUNK_COLS
        self.missing: set[str] = set()
        try:
            missing = _missing_columns(self.db)
        except sqlite3.DatabaseError:
            missing = []  # a damaged file: integrity_problems() says what is wrong
        if missing and not readonly:
            with self.transaction():
                for table, name, decl in missing:
                    self.db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {decl}")
        elif missing:
            self.missing = {name for _, name, _ in missing}
            self.note_cols = _column_list(_NOTE_COLS, self.missing)
            self.chunk_cols = _column_list(_CHUNK_COLS, self.missing)

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.rollback()
            raise
        self.db.commit()

    # --- meta -----------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    @property
    def generation(self) -> int:
        return int(self.get_meta("generation", "0") or 0)

    def bump_generation(self) -> int:
        gen = self.generation + 1
        self.set_meta("generation", str(gen))
        return gen

    # --- notes ----------------------------------------------------------------
    def notes(self) -> list[NoteRow]:
        return [_note_row(r) for r in self.db.execute(f"SELECT {self.note_cols} FROM notes")]

    def note_by_path(self, path: str) -> NoteRow | None:
        row = self.db.execute(
            f"SELECT {self.note_cols} FROM notes WHERE path=?", (path,)
        ).fetchone()
        return _note_row(row) if row else None

    def file_states(self) -> dict[str, tuple[int, str, int, int]]:
        """path -> (id, content_hash, size, mtime_ns): what the change detection needs."""
        rows = self.db.execute("SELECT path, id, content_hash, size, mtime_ns FROM notes")
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}

    def note_sources(self) -> dict[str, str]:
        """path -> source name ('' for the vault's own notes)."""
        rows = self.db.execute(f"SELECT path, {self.column('source')} FROM notes")
        return dict(rows.fetchall())

    def column(self, name: str) -> str:
        """An added column by name, or its default where this catalog predates it."""
        return _column_list(name, self.missing)

    def upsert_note(
        self,
        note: ParsedNote,
        content_hash: str,
        mtime_ns: int,
        size: int,
        date: float,
        source: str = "",
    ) -> tuple[int, bool]:
        """(note id, whether the note was already there)."""
        headings = [[h.level, h.text, h.line, h.parent] for h in note.headings]
        values = (
            content_hash, mtime_ns, size, note.title,
            json.dumps(list(note.aliases)), json.dumps(list(note.tags)),
            json.dumps(note.frontmatter, default=str), date,
            json.dumps(headings), json.dumps(list(note.warnings)),
            source, note.kind, note.language,
        )  # fmt: skip
        row = self.db.execute("SELECT id FROM notes WHERE path=?", (note.path,)).fetchone()
        if row:
            self.db.execute(
                "UPDATE notes SET content_hash=?, mtime_ns=?, size=?, title=?, aliases=?, tags=?,"
                " frontmatter=?, date=?, headings=?, warnings=?, source=?, kind=?, language=?"
                " WHERE id=?",
                (*values, row[0]),
            )
            return int(row[0]), True
        cur = self.db.execute(
            "INSERT INTO notes(path, content_hash, mtime_ns, size, title, aliases, tags,"
            " frontmatter, date, headings, warnings, source, kind, language)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (note.path, *values),
        )
        return int(cur.lastrowid or 0), False

    def move_note(self, note_id: int, new_path: str, mtime_ns: int, title: str | None) -> None:
        if title is None:
            self.db.execute(
                "UPDATE notes SET path=?, mtime_ns=? WHERE id=?", (new_path, mtime_ns, note_id)
            )
        else:
            self.db.execute(
                "UPDATE notes SET path=?, mtime_ns=?, title=? WHERE id=?",
                (new_path, mtime_ns, title, note_id),
            )

    def touch_note(self, note_id: int, mtime_ns: int) -> None:
        self.db.execute("UPDATE notes SET mtime_ns=? WHERE id=?", (mtime_ns, note_id))

    def delete_note(self, note_id: int) -> list[int]:
        """Remove a note with its chunks and links; returns the chunk ids that went."""
        ids = self.chunk_ids_of(note_id)
        self.db.execute("DELETE FROM notes WHERE id=?", (note_id,))
        return ids

    # --- chunks ---------------------------------------------------------------
    def chunk_ids_of(self, note_id: int) -> list[int]:
        rows = self.db.execute("SELECT id FROM chunks WHERE note_id=? ORDER BY id", (note_id,))
        return [r[0] for r in rows]

    def replace_chunks(
        self, note_id: int, chunks: Sequence[Chunk], embed_hashes: Sequence[str]
    ) -> tuple[list[int], list[int]]:
        """Swap a note's chunks; returns (removed ids, added ids)."""
        removed = self.chunk_ids_of(note_id)
        self.db.execute("DELETE FROM chunks WHERE note_id=?", (note_id,))
        added = []
        for chunk, h in zip(chunks, embed_hashes, strict=True):
            cur = self.db.execute(
                "INSERT INTO chunks(note_id, ordinal, heading_path, start_line, end_line,"
                " start_char, end_char, text, embed_hash, qualified_name, node_type, page)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    note_id, chunk.ordinal, json.dumps(list(chunk.heading_path)),
                    chunk.start_line, chunk.end_line, chunk.start_char, chunk.end_char,
                    chunk.text, h, chunk.qualified_name, chunk.node_type, chunk.page,
                ),
            )  # fmt: skip
            added.append(int(cur.lastrowid or 0))
        return removed, added

    def chunk_ids(self) -> list[int]:
        return [r[0] for r in self.db.execute("SELECT id FROM chunks ORDER BY id")]

    def chunks(self, ids: Iterable[int] | None = None) -> list[ChunkRow]:
        if ids is None:
            rows = self.db.execute(f"SELECT {self.chunk_cols} FROM chunks ORDER BY id")
            return [_chunk_row(r) for r in rows]
        out: list[ChunkRow] = []
        id_list = list(ids)
        for start in range(0, len(id_list), 500):
            part = id_list[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                f"SELECT {self.chunk_cols} FROM chunks WHERE id IN ({marks})", part
            )
            out.extend(_chunk_row(r) for r in rows)
        return out

    def chunks_of(self, note_id: int) -> list[ChunkRow]:
        rows = self.db.execute(
            f"SELECT {self.chunk_cols} FROM chunks WHERE note_id=? ORDER BY ordinal", (note_id,)
        )
        return [_chunk_row(r) for r in rows]

    def count(self, table: str) -> int:
        assert table in {"notes", "chunks", "links", "embeddings", "failures"}
        return int(self.db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])

    # --- links ----------------------------------------------------------------
    def replace_links(self, note_id: int, links: Sequence[Link]) -> None:
        self.db.execute("DELETE FROM links WHERE source_id=?", (note_id,))
        self.db.executemany(
            "INSERT INTO links(source_id, target, target_path, embed, heading, block, label,"
            " kind, line) VALUES (?,?,NULL,?,?,?,?,?,?)",
            [
                (note_id, x.target, int(x.embed), x.heading, x.block, x.label, x.kind, x.line)
                for x in links
            ],
        )

    def links(self) -> list[LinkRow]:
        rows = self.db.execute(
            "SELECT source_id, target, target_path, embed, heading, block, label, kind, line"
            " FROM links ORDER BY source_id, line, rowid"
        )
        return [LinkRow(r[0], r[1], r[2], bool(r[3]), *r[4:]) for r in rows]

    def set_link_targets(self, resolved: Iterable[tuple[str | None, int, str, str | None]]) -> None:
        """Store (target_path, source_id, target, label) resolutions made over the whole vault."""
        self.db.executemany(
            "UPDATE links SET target_path=? WHERE source_id=? AND target=? AND label IS ?",
            list(resolved),
        )

    # --- embeddings -------------------------------------------------------------
    def cached_hashes(self, model: str, hashes: Iterable[str]) -> set[str]:
        found: set[str] = set()
        hs = list(set(hashes))
        for start in range(0, len(hs), 500):
            part = hs[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                f"SELECT text_hash FROM embeddings WHERE model=? AND text_hash IN ({marks})",
                (model, *part),
            )
            found.update(r[0] for r in rows)
        return found

    def embedding_blobs(self, model: str, hashes: Iterable[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        hs = list(set(hashes))
        for start in range(0, len(hs), 500):
            part = hs[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                "SELECT text_hash, vector FROM embeddings"
                f" WHERE model=? AND text_hash IN ({marks})",
                (model, *part),
            )
            found.update((h, bytes(v)) for h, v in rows)
        return found

    def put_embedding_blobs(self, model: str, items: dict[str, bytes]) -> None:
        self.db.executemany(
            "INSERT OR IGNORE INTO embeddings(model, text_hash, vector) VALUES (?,?,?)",
            [(model, h, v) for h, v in items.items()],
        )

    def integrity_problems(self) -> list[str]:
        """SQLite's own page-level check: what a damaged catalog file shows."""
        rows = [r[0] for r in self.db.execute("PRAGMA quick_check").fetchall()]
        return [] if rows == ["ok"] else [f"catalog: {r}" for r in rows[:5]]

    def content_problems(self) -> list[str]:
        """Every row read as the index reads it: ``quick_check`` checks pages, not the
        bytes inside a row, and a flipped byte there made every later run crash on a
        text that is no longer UTF-8 or a JSON column that no longer parses."""
        try:
            for note in self.db.execute(f"SELECT {self.note_cols} FROM notes"):
                _note_row(note)
            for chunk in self.db.execute(f"SELECT {self.chunk_cols} FROM chunks"):
                _chunk_row(chunk)
            for table in ("links", "failures", "meta"):
                for _ in self.db.execute(f"SELECT * FROM {table}"):
                    pass
            sizes = self.db.execute(
                "SELECT model, COUNT(DISTINCT length(vector)) FROM embeddings GROUP BY model"
            )
            if any(n != 1 for _, n in sizes):
                return ["catalog: stored embeddings of one model differ in length"]
        except (sqlite3.Error, ValueError, TypeError) as exc:  # UnicodeDecodeError included
            return [f"catalog: unreadable row ({type(exc).__name__}: {str(exc)[:120]})"]
        return []

    def put_embeddings(self, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        self.db.executemany(
            "INSERT OR IGNORE INTO embeddings(model, text_hash, vector) VALUES (?,?,?)",
            [(model, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items],
        )

    def vectors_for_chunks(self, model: str, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """(ids, vectors) of every chunk, from the cache: a FAISS rebuild without the model."""
        rows = self.db.execute(
            "SELECT c.id, e.vector FROM chunks c JOIN embeddings e"
            " ON e.model=? AND e.text_hash=c.embed_hash ORDER BY c.id",
            (model,),
        ).fetchall()
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        vecs = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        return ids, vecs.reshape(len(rows), dim) if rows else np.zeros((0, dim), np.float32)

    def vectors_by_ids(self, model: str, dim: int, ids: Sequence[int]) -> np.ndarray:
        out = np.zeros((len(ids), dim), dtype=np.float32)
        pos = {cid: i for i, cid in enumerate(ids)}
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                "SELECT c.id, e.vector FROM chunks c JOIN embeddings e"
                f" ON e.model=? AND e.text_hash=c.embed_hash WHERE c.id IN ({marks})",
                (model, *part),
            )
            for cid, blob in rows:
                out[pos[cid]] = np.frombuffer(blob, dtype=np.float32)
        return out

    def sentence_vectors(
        self, model: str, dim: int, chunk_ids: Sequence[int]
    ) -> tuple[np.ndarray, np.ndarray]:
        """(sentence id, vector) of every sentence unit of these chunks, derived again from
        their stored text; a chunk with none gives its own vector as its one unit."""
        ids: list[int] = []
        hashes: list[str] = []
        for start in range(0, len(chunk_ids), 500):
            part = list(chunk_ids[start : start + 500])
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                f"SELECT c.id, c.text, c.embed_hash, {self.column('kind')} FROM chunks c"
                f" JOIN notes n ON n.id=c.note_id WHERE c.id IN ({marks}) ORDER BY c.id",
                part,
            )
            for cid, text, embed_hash, kind in rows:
                units = [text_hash(u) for u in unit_texts(text, kind)] or [embed_hash]
                ids.extend(sentence_id(cid, k) for k in range(len(units)))
                hashes.extend(units)
        blobs = self.embedding_blobs(model, hashes)
        out = np.zeros((len(ids), dim), dtype=np.float32)
        for i, h in enumerate(hashes):
            if (blob := blobs.get(h)) is not None:
                out[i] = np.frombuffer(blob, dtype=np.float32)
        return np.array(ids, dtype=np.int64), out

    # --- failures -------------------------------------------------------------
    def failures(self) -> dict[str, tuple[str, int, int]]:
        rows = self.db.execute("SELECT path, reason, mtime_ns, size FROM failures ORDER BY path")
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def set_failure(self, path: str, reason: str, mtime_ns: int, size: int) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO failures(path, reason, mtime_ns, size) VALUES (?,?,?,?)",
            (path, reason, mtime_ns, size),
        )

    def clear_failure(self, path: str) -> None:
        self.db.execute("DELETE FROM failures WHERE path=?", (path,))
