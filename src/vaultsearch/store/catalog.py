"""The catalog: the transactional source of truth beside the derived indexes.

SQLite in WAL mode gives one writer and many snapshot readers without a server.
Tantivy and the graph can be rebuilt from it alone; the vector segments hold the
only copy of each vector in the index (a writer's run keeps its vectors in a TEMP
table, ``_RUN_EMBEDDINGS``), so they are rebuilt from their whole segments and the
per-user embedding cache.

One catalog file serves every generation that names it. A run that changes a
catalog readers use holds one write transaction from its first change to its
publish (``begin_run``/``finish``): its batches are savepoints in it, and the last
statement records the generation it publishes (meta ``published``). A reader opens
one read transaction (a WAL snapshot) and so sees the catalog of exactly one
published generation, never part of a run; a kill rolls the whole run back.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vaultsearch.embedding.locate import text_hash
from vaultsearch.fault import FailureRow, of_reason
from vaultsearch.links import link_key, note_keys
from vaultsearch.models import Chunk, Link, ParsedNote
from vaultsearch.parsers.sentences import MAX_UNITS, unit_texts
from vaultsearch.store import rowcounts, rowsums

SENTENCE_BITS = (MAX_UNITS - 1).bit_length()

PAGE_SIZE = 8192
"""An embedding row (fingerprint key, hash, 1,536 bytes of vector) is ~1.7 KB: past the
~1 KB a 4 KB page keeps in a WITHOUT ROWID row, so each one spilled into an overflow page
of its own and took ~4.7 KB on disk; in 8 KB pages it takes ~2.4 KB (24 against 47 MB
per 10,000 vectors). SQLite applies it to a new file only."""
RUN_CACHE_KB = 65536
"""Page cache of a writer's temp database (``_RUN_EMBEDDINGS``), in KB. A first build
opens a new connection at every published step, so the table holds one step's float32
vectors: in SQLite's default 2 MB cache every one of them was written to a temp file
(348 MB over the 24 steps of a 45k-chunk build, twice the index it left). Pages are
allocated as rows arrive, so a small update holds little."""


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
    line INTEGER NOT NULL,
    target_key TEXT,
    label_key TEXT
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
_RUN_EMBEDDINGS = """
CREATE TEMP TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, text_hash)
) WITHOUT ROWID;
"""
"""A writer's embeddings live in a table of its connection's temp database, which
shadows the file's own: the vector segments hold each vector once (float16 or int8),
so the catalog file no longer keeps a float32 copy of every one (119 of its 121 MB at
45k chunks). What a run embeds or finds in the per-user cache reaches the segments
through it; a catalog of an older index keeps its rows, read through a read-only
connection (a rebuild reuses them)."""

_ADDED_COLUMNS = {
    "notes": (
        ("source", "TEXT NOT NULL DEFAULT ''"),
        ("kind", "TEXT NOT NULL DEFAULT 'note'"),
        ("language", "TEXT NOT NULL DEFAULT ''"),
        (rowsums.COLUMN, "INTEGER"),
    ),
    "chunks": (
        ("qualified_name", "TEXT NOT NULL DEFAULT ''"),
        ("node_type", "TEXT NOT NULL DEFAULT ''"),
        ("page", "INTEGER NOT NULL DEFAULT 0"),
        (rowsums.COLUMN, "INTEGER"),
    ),
    "links": (("target_key", "TEXT"), ("label_key", "TEXT"), (rowsums.COLUMN, "INTEGER")),
    "failures": (
        (rowsums.COLUMN, "INTEGER"),
        ("fault", "TEXT"),
        ("tries", "INTEGER NOT NULL DEFAULT 1"),
    ),
}
"""Columns added after the first release: an older catalog gets them in place, with
defaults that are true of everything it holds (Markdown notes of the vault), so an
existing index keeps working without a rebuild or a single model call (``row_sum``, a
row's checksum, ``store/rowsums.py``, is filled in by the first writer). A link's keys
(``links.py``) start NULL, which means "resolve it every time", until the
next run fills them in (``fill_link_keys``). A failure's ``fault`` (``fault.py``) starts
NULL: judged by its reason's wording, which keeps an older row the file's unless the
reason is one of ours; ``tries`` counts the runs that read the file as it is."""

_KEY_INDEXES = """
CREATE INDEX IF NOT EXISTS links_by_target_key ON links(target_key);
CREATE INDEX IF NOT EXISTS links_by_label_key ON links(label_key);
CREATE INDEX IF NOT EXISTS chunks_by_length ON chunks(length(text), note_id);
"""
"""``chunks_by_length``: the boilerplate search (``search/boilerplate.py``) counts notes
by chunk length from it without reading a text (12 ms instead of 155 ms at 45k chunks),
and a reader following an edit reads only the chunks of a few lengths."""


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


def _relative(path: str, source: str) -> str:
    """A note's path inside its source: links resolve within their own source."""
    return path[len(source) + 1 :] if source else path


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
    defaults |= {"fault": "NULL", "tries": "1"}
    parts = [c.strip() for c in cols.split(",")]
    return ", ".join(f"{defaults[c]} AS {c}" if c in missing else c for c in parts)


def open_catalog_for_reading(path: Path) -> Catalog:
    """Read-only; where SQLite cannot use the WAL files (another user, a read-only
    mount), the file is read as immutable instead: as the last checkpoint left it,
    which the writer makes after every publish when no reader holds an older one."""
    catalog = None
    try:
        catalog = Catalog(path, readonly=True)
        catalog.db.execute("SELECT COUNT(*) FROM meta").fetchone()
        return catalog
    except sqlite3.OperationalError:
        if catalog is not None:
            catalog.close()
    return Catalog(path, readonly=True, immutable=True)


def checkpoint(path: Path) -> None:
    """Fold the WAL back into the file when no reader holds an older snapshot (never
    waits for one): keeps the WAL small, and lets a reader that cannot use the WAL
    files (another user, a read-only mount) read the file as it stands."""
    db = sqlite3.connect(path)
    try:
        db.execute("PRAGMA busy_timeout=0")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except sqlite3.OperationalError:
        pass
    finally:
        db.close()


class Catalog:
    """One SQLite connection. Writers use ``transaction()``; readers just query."""

    def __init__(self, path: Path, readonly: bool = False, immutable: bool = False) -> None:
        self.path = path
        self.in_run = False
        self.link_sources: set[int] = set()
        """Notes whose links must be resolved again (their links or their path changed)."""
        self.link_keys: set[str] = set()
        self.name_paths: set[str] = set()
        """Paths (old and new) of the notes behind ``link_keys``: where a kept link
        resolver may now differ from the notes (``indexing/linking.py``)."""
        self.unsealed: dict[str, set[Any]] = {table: set() for table in rowsums.KEYS}
        """The rows this connection wrote, by table and ``rowsums.KEYS``: summed at commit."""
        self.graph_sources: set[int] = set()
        """Notes whose node or outgoing edges in the graph may have changed."""
        """Name keys of notes that appeared, went, moved or changed aliases: the links
        probing them may now resolve elsewhere."""
        if readonly:
            uri = f"{path.resolve().as_uri()}?mode=ro" + ("&immutable=1" if immutable else "")
            self.db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path, check_same_thread=False)
            rowsums.install(self.db)
            self.db.execute(f"PRAGMA page_size={PAGE_SIZE}")  # a new file only
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.executescript(_SCHEMA)
            self.db.executescript(_RUN_EMBEDDINGS)
            self.db.execute(f"PRAGMA temp.cache_size=-{RUN_CACHE_KB}")
        self.db.execute("PRAGMA foreign_keys=ON")
        # a writer's commit publishes a generation: it must survive a power cut
        self.db.execute(f"PRAGMA synchronous={'NORMAL' if readonly else 'FULL'}")
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
                rowsums.widen(self.db, {name for _, name, _ in missing})
        if not readonly:
            self.db.executescript(_KEY_INDEXES)
            rowcounts.install(self.db)
        elif missing:
            self.missing = {name for _, name, _ in missing}
            self.note_cols = _column_list(_NOTE_COLS, self.missing)
            self.chunk_cols = _column_list(_CHUNK_COLS, self.missing)

    def close(self) -> None:
        self.abandon()
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A transaction, or inside a run a savepoint of the run's one transaction."""
        if self.in_run:
            self.db.execute("SAVEPOINT step")
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK TO step")
                self.db.execute("RELEASE step")
                raise
            self.db.execute("RELEASE step")
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
            rowsums.seal(self.db, self.unsealed)
        except BaseException:
            self.db.rollback()
            raise
        self.db.commit()

    @contextmanager
    def run_embeddings(self) -> Iterator[sqlite3.Connection]:
        """Where a batch puts the vectors it embedded or found: inside a run, straight
        into the run's transaction, without a savepoint. A savepoint made SQLite copy
        each page of the temp table that an insert changed into a statement journal
        first (a temp file: inserts by hash touch pages all over the table), 330 to 400
        MB for the 45k chunks of a first build; the rows are a cache of vectors, so a
        batch rolled back leaves rows no chunk names, which harms nothing, and a run
        rolled back takes them with it."""
        if self.in_run:
            yield self.db
            return
        with self.transaction() as db:
            yield db

    def begin_run(self) -> None:
        """Everything until ``finish`` is one transaction: readers of this catalog see
        none of it until the generation it belongs to is published."""
        self.db.execute("BEGIN IMMEDIATE")
        self.in_run = True

    def finish(self, generation: str) -> None:
        """Record ``generation`` as the one this catalog's rows belong to, and commit:
        the derived files of that generation must be on disk before."""
        with self.transaction():
            self.set_meta("published", generation)
        if self.in_run:
            rowsums.seal(self.db, self.unsealed)
            self.db.commit()
            self.in_run = False

    def abandon(self) -> None:
        for rows in self.unsealed.values():
            rows.clear()
        if self.in_run:
            self.db.rollback()
            self.in_run = False

    @property
    def published(self) -> str | None:
        """The generation whose rows this catalog holds (None: an older, per-generation
        catalog, which holds its own generation's rows by construction)."""
        return self.get_meta("published")

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

    def file_states_under(
        self, paths: Iterable[str], prefixes: Iterable[str]
    ) -> dict[str, tuple[int, str, int, int]]:
        """``file_states`` of these paths and of the paths under these prefixes, found
        through the path index: an edit the watcher names reads its own rows, not a row
        per note of the vault."""
        cols = "SELECT path, id, content_hash, size, mtime_ns FROM notes"
        rows = list(self._select_in(f"{cols} WHERE path IN ({{marks}})", sorted(set(paths))))
        for prefix in set(prefixes):
            if prefix:
                upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
                sql = f"{cols} WHERE path >= ? AND path < ?"
                rows += self.db.execute(sql, (prefix, upper)).fetchall()
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}

    def names_token(self) -> str | None:
        """Changes whenever the set of note names does (``indexing/linking.py``): what a
        link resolver built from them may be kept by."""
        return self.get_meta("names")

    def note_names_of(self, ids: Iterable[int]) -> dict[int, tuple[str, str]]:
        """id -> (path, source) of these notes."""
        sql = f"SELECT id, path, {self.column('source')} FROM notes WHERE id IN ({{marks}})"
        return {r[0]: (r[1], r[2]) for r in self._select_in(sql, sorted(set(ids)))}

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
        row = self.db.execute(
            "SELECT id, aliases, source FROM notes WHERE path=?", (note.path,)
        ).fetchone()
        rel = _relative(note.path, source)
        if row is None:
            self.link_keys |= note_keys(rel, note.aliases)
            self.name_paths.add(note.path)
        elif json.loads(row[1]) != list(note.aliases) or row[2] != source:
            self.link_keys |= note_keys(rel, note.aliases)
            self.link_keys |= note_keys(_relative(note.path, row[2]), json.loads(row[1]))
            self.name_paths.add(note.path)
        if row:
            self.db.execute(
                "UPDATE notes SET content_hash=?, mtime_ns=?, size=?, title=?, aliases=?, tags=?,"
                " frontmatter=?, date=?, headings=?, warnings=?, source=?, kind=?, language=?,"
                " row_sum=NULL WHERE id=?",
                (*values, row[0]),
            )
            self.unsealed["notes"].add(int(row[0]))
            return int(row[0]), True
        note_id = self._next_id("notes")
        title, aliases, tags, frontmatter, _, headings_json, warnings = values[3:10]
        new = (
            note_id, note.path, content_hash, int(mtime_ns), int(size), str(title), aliases,
            tags, frontmatter, float(date), headings_json, warnings, *map(str, values[10:]),
        )  # fmt: skip
        self.db.execute(
            "INSERT INTO notes(id, path, content_hash, mtime_ns, size, title, aliases, tags,"
            " frontmatter, date, headings, warnings, source, kind, language, row_sum)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (*new, rowsums.row_sum(*new)),
        )
        return note_id, False

    def _note_moves(self, note_id: int, new_path: str | None = None) -> None:
        """Record what a note's move or removal changes for the links of the vault."""
        row = self.db.execute(
            f"SELECT path, aliases, {self.column('source')} FROM notes WHERE id=?", (note_id,)
        ).fetchone()
        if row is None:
            return
        aliases = json.loads(row[1])
        self.link_keys |= note_keys(_relative(row[0], row[2]), aliases)
        self.name_paths.add(row[0])
        if new_path is not None:
            self.link_keys |= note_keys(_relative(new_path, row[2]), aliases)
            self.link_sources.add(note_id)
            self.name_paths.add(new_path)

    def move_note(self, note_id: int, new_path: str, mtime_ns: int, title: str | None) -> None:
        self._note_moves(note_id, new_path)
        self.unsealed["notes"].add(note_id)
        if title is None:
            self.db.execute(
                "UPDATE notes SET path=?, mtime_ns=?, row_sum=NULL WHERE id=?",
                (new_path, mtime_ns, note_id),
            )
        else:
            self.db.execute(
                "UPDATE notes SET path=?, mtime_ns=?, title=?, row_sum=NULL WHERE id=?",
                (new_path, mtime_ns, title, note_id),
            )

    def touch_note(self, note_id: int, mtime_ns: int) -> None:
        self.db.execute("UPDATE notes SET mtime_ns=?, row_sum=NULL WHERE id=?", (mtime_ns, note_id))
        self.unsealed["notes"].add(note_id)

    def delete_note(self, note_id: int) -> list[int]:
        """Remove a note with its chunks and links; returns the chunk ids that went."""
        ids = self.chunk_ids_of(note_id)
        self._note_moves(note_id)
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
        first = self._next_id("chunks")
        rows = [
            (
                first + n, note_id, int(c.ordinal), json.dumps(list(c.heading_path)),
                int(c.start_line), int(c.end_line), int(c.start_char), int(c.end_char),
                str(c.text), str(h), str(c.qualified_name), str(c.node_type), int(c.page),
            )
            for n, (c, h) in enumerate(zip(chunks, embed_hashes, strict=True))
        ]  # fmt: skip
        self.db.executemany(
            "INSERT INTO chunks(id, note_id, ordinal, heading_path, start_line, end_line,"
            " start_char, end_char, text, embed_hash, qualified_name, node_type, page, row_sum)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(*row, rowsums.row_sum(*row)) for row in rows],
        )
        return removed, [row[0] for row in rows]

    def _next_id(self, table: str) -> int:
        """The id SQLite's AUTOINCREMENT gives the next row of ``table``: a new chunk or
        note is written with it and its sum (``store/rowsums.py``), so its row does not
        grow once written (no statement changes a chunk; one that changes a note clears
        the sum, summed again at commit). A sum added by an update grew each row of a
        full page by up to 6 bytes and split the page: 11% of the chunks' pages left
        empty, 648 against 613 bytes a chunk at 45,630 chunks."""
        seq = self.db.execute("SELECT seq FROM sqlite_sequence WHERE name=?", (table,)).fetchone()
        top = self.db.execute(f"SELECT MAX(id) FROM {table}").fetchone()[0]
        return max(int(seq[0]) if seq else 0, int(top or 0)) + 1

    def _select_in(self, sql: str, values: Sequence[Any], *before: Any) -> Iterator[tuple]:
        """``sql`` with its ``{marks}`` filled for batches of ``values`` (SQLite caps the
        parameters of one statement), ``before`` bound ahead of each batch."""
        for start in range(0, len(values), 500):
            part = list(values[start : start + 500])
            yield from self.db.execute(
                sql.format(marks=",".join("?" * len(part))), (*before, *part)
            )

    def chunk_ids(self) -> list[int]:
        return [r[0] for r in self.db.execute("SELECT id FROM chunks ORDER BY id")]

    def chunks(self, ids: Iterable[int] | None = None) -> list[ChunkRow]:
        if ids is None:
            rows = self.db.execute(f"SELECT {self.chunk_cols} FROM chunks ORDER BY id")
            return [_chunk_row(r) for r in rows]
        sql = f"SELECT {self.chunk_cols} FROM chunks WHERE id IN ({{marks}})"
        return [_chunk_row(r) for r in self._select_in(sql, list(ids))]

    def chunk_ids_of_kinds(self, kinds: Collection[str]) -> list[int]:
        """The chunks of notes of these kinds (``kind`` is read, not filtered on: an
        older catalog has a literal in its place)."""
        rows = self.db.execute(
            f"SELECT c.id, {self.column('kind')} FROM chunks c JOIN notes n ON n.id=c.note_id"
            " ORDER BY c.id"
        )
        return [cid for cid, kind in rows if kind in kinds]

    def chunks_by_note(self, chunk_ids: Iterable[int]) -> dict[int, list[int]]:
        """These chunks grouped by their note (chunks no longer there left out)."""
        out: dict[int, list[int]] = {}
        sql = "SELECT note_id, id FROM chunks WHERE id IN ({marks}) ORDER BY note_id, id"
        for note_id, chunk_id in self._select_in(sql, sorted(chunk_ids)):
            out.setdefault(note_id, []).append(chunk_id)
        return out

    def chunks_of(self, note_id: int) -> list[ChunkRow]:
        rows = self.db.execute(
            f"SELECT {self.chunk_cols} FROM chunks WHERE note_id=? ORDER BY ordinal", (note_id,)
        )
        return [_chunk_row(r) for r in rows]

    def definitions_of(self, note_ids: Sequence[int]) -> list[tuple[int, str]]:
        """(note id, qualified name) of the definitions among these notes' chunks (a code
        file's functions, classes and methods; its module lines are not one), without
        their text: the reference gift reads them for every code file a query ranks."""
        name, kind = self.column("qualified_name"), self.column("node_type")
        sql = (
            f"SELECT note_id, {name} FROM chunks WHERE note_id IN ({{marks}})"
            f" AND {name} != '' AND {kind} != 'module'"
        )
        return [(int(n), str(q)) for n, q in self._select_in(sql, list(note_ids))]

    def count(self, table: str) -> int:
        """The count the catalog keeps (``store/rowcounts.py``), else a real count."""
        assert table in {"notes", "chunks", "links", "embeddings", "failures"}
        kept = rowcounts.kept(self.db, table)
        return rowcounts.counted(self.db, table) if kept is None else kept

    def counted(self, table: str) -> int:
        """Every row counted: what ``check`` reports and compares the kept count with."""
        assert table in {"notes", "chunks", "links", "embeddings", "failures"}
        return rowcounts.counted(self.db, table)

    def count_problems(self) -> list[str]:
        return rowcounts.problems(self.db)

    def recount(self) -> bool:
        """The kept counts set to real counts; True when one was wrong (a repair)."""
        return rowcounts.recount(self.db)

    # --- links ----------------------------------------------------------------
    def replace_links(self, note_id: int, links: Sequence[Link]) -> None:
        self.db.execute("DELETE FROM links WHERE source_id=?", (note_id,))
        self.link_sources.add(note_id)
        self.unsealed["links"].add(note_id)
        self.db.executemany(
            "INSERT INTO links(source_id, target, target_path, embed, heading, block, label,"
            " kind, line, target_key, label_key) VALUES (?,?,NULL,?,?,?,?,?,?,?,?)",
            [
                (
                    note_id,
                    x.target,
                    int(x.embed),
                    x.heading,
                    x.block,
                    x.label,
                    x.kind,
                    x.line,
                    link_key(x.target),
                    None if x.label is None else link_key(x.label),
                )
                for x in links
            ],
        )

    def fill_link_keys(self) -> None:
        """Keys for the links of a catalog from before they were kept (once)."""
        rows = self.db.execute(
            "SELECT rowid, source_id, target, label FROM links WHERE target_key IS NULL"
        ).fetchall()
        self.unsealed["links"].update(r[1] for r in rows)
        self.db.executemany(
            "UPDATE links SET target_key=?, label_key=?, row_sum=NULL WHERE rowid=?",
            [(link_key(t), None if b is None else link_key(b), r) for r, _, t, b in rows],
        )

    def links_to_resolve(self, sources: Iterable[int], keys: Iterable[str]) -> list[LinkRow]:
        """The links of these notes and the links probing these name keys (and those
        that must always be resolved again), in ``links()``'s order."""
        from vaultsearch.links import ALWAYS

        self.db.execute("CREATE TEMP TABLE IF NOT EXISTS want_keys(k TEXT PRIMARY KEY)")
        self.db.execute("CREATE TEMP TABLE IF NOT EXISTS want_sources(s INTEGER PRIMARY KEY)")
        self.db.execute("DELETE FROM want_keys")
        self.db.execute("DELETE FROM want_sources")
        self.db.executemany("INSERT OR IGNORE INTO want_keys VALUES (?)", [(k,) for k in keys])
        self.db.executemany(
            "INSERT OR IGNORE INTO want_sources VALUES (?)", [(s,) for s in sources]
        )
        rows = self.db.execute(
            "SELECT source_id, target, target_path, embed, heading, block, label, kind, line"
            " FROM links WHERE rowid IN ("
            " SELECT rowid FROM links WHERE source_id IN (SELECT s FROM want_sources)"
            " UNION SELECT rowid FROM links WHERE target_key IN (SELECT k FROM want_keys)"
            " UNION SELECT rowid FROM links WHERE label_key IN (SELECT k FROM want_keys)"
            " UNION SELECT rowid FROM links WHERE target_key IS NULL"
            " UNION SELECT rowid FROM links WHERE target_key=? OR label_key=?)"
            " ORDER BY source_id, line, rowid",
            (ALWAYS, ALWAYS),
        )
        return [LinkRow(r[0], r[1], r[2], bool(r[3]), *r[4:]) for r in rows]

    def notes_by_ids(self, ids: Iterable[int]) -> list[NoteRow]:
        sql = f"SELECT {self.note_cols} FROM notes WHERE id IN ({{marks}})"
        return [_note_row(r) for r in self._select_in(sql, sorted(ids))]

    def links_of(self, note_ids: Iterable[int]) -> list[LinkRow]:
        sql = (
            "SELECT source_id, target, target_path, embed, heading, block, label, kind, line"
            " FROM links WHERE source_id IN ({marks}) ORDER BY source_id, line, rowid"
        )
        rows = self._select_in(sql, sorted(note_ids))
        return [LinkRow(r[0], r[1], r[2], bool(r[3]), *r[4:]) for r in rows]

    def paths_present(self, paths: Iterable[str]) -> set[str]:
        sql = "SELECT path FROM notes WHERE path IN ({marks})"
        return {r[0] for r in self._select_in(sql, sorted(set(paths)))}

    def graph_counts(self, note_ids: Iterable[int] | None = None) -> tuple[int, int]:
        """(edges, broken links) of the graph ``store/graph.py`` builds from these rows:
        distinct note-to-note links other than to itself, and written links to no note
        (``store/counts.py``'s definition, every surface's). ``note_ids``: of the links
        of these notes only (each note's count is its own, so counts add up)."""
        if note_ids is None:
            return self._graph_counts("")
        edges = unresolved = 0
        ids = sorted(set(note_ids))
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            e, u = self._graph_counts(f" AND l.source_id IN ({','.join('?' * len(part))})", part)
            edges, unresolved = edges + e, unresolved + u
        return edges, unresolved

    def _graph_counts(self, where: str, values: Sequence[int] = ()) -> tuple[int, int]:
        edges = self.db.execute(
            "SELECT COUNT(*) FROM (SELECT DISTINCT l.source_id, l.target_path FROM links l"
            " JOIN notes s ON s.id=l.source_id JOIN notes t ON t.path=l.target_path"
            f" WHERE l.target_path != s.path{where})",
            values,
        ).fetchone()[0]
        unresolved = self.db.execute(
            "SELECT COUNT(*) FROM links l JOIN notes s ON s.id=l.source_id"
            f" LEFT JOIN notes t ON t.path=l.target_path WHERE t.id IS NULL{where}",
            values,
        ).fetchone()[0]
        return int(edges), int(unresolved)

    def note_ids_of(self, paths: Iterable[str]) -> set[int]:
        sql = "SELECT id FROM notes WHERE path IN ({marks})"
        return {r[0] for r in self._select_in(sql, sorted(set(paths)))}

    def note_names(
        self, paths: Iterable[str] | None = None
    ) -> list[tuple[int, str, str, list[str]]]:
        """(id, path, source, aliases) of every note, or of the notes at these paths:
        what a link resolver is built from, or brought up to date with."""
        sql = f"SELECT id, path, {self.column('source')}, aliases FROM notes"
        if paths is None:
            rows: Iterable[Any] = self.db.execute(sql)
        else:
            rows = self._select_in(f"{sql} WHERE path IN ({{marks}})", sorted(set(paths)))
        return [(r[0], r[1], r[2], [] if r[3] == "[]" else json.loads(r[3])) for r in rows]

    def links(self) -> list[LinkRow]:
        rows = self.db.execute(
            "SELECT source_id, target, target_path, embed, heading, block, label, kind, line"
            " FROM links ORDER BY source_id, line, rowid"
        )
        return [LinkRow(r[0], r[1], r[2], bool(r[3]), *r[4:]) for r in rows]

    def set_link_targets(self, resolved: Iterable[tuple[str | None, int, str, str | None]]) -> None:
        """Store (target_path, source_id, target, label) resolutions made over the whole vault."""
        resolved = list(resolved)
        self.unsealed["links"].update(source_id for _, source_id, _, _ in resolved)
        self.db.executemany(
            "UPDATE links SET target_path=?, row_sum=NULL"
            " WHERE source_id=? AND target=? AND label IS ?",
            resolved,
        )

    # --- embeddings -------------------------------------------------------------
    def cached_hashes(self, model: str, hashes: Iterable[str]) -> set[str]:
        sql = "SELECT text_hash FROM embeddings WHERE model=? AND text_hash IN ({marks})"
        return {r[0] for r in self._select_in(sql, list(set(hashes)), model)}

    def embedding_blobs(self, model: str, hashes: Iterable[str]) -> dict[str, bytes]:
        sql = "SELECT text_hash, vector FROM embeddings WHERE model=? AND text_hash IN ({marks})"
        return {h: bytes(v) for h, v in self._select_in(sql, list(set(hashes)), model)}

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
        text that is no longer UTF-8 or a JSON column that no longer parses; one that
        still parses is found by the row's checksum (``store/rowsums.py``)."""
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
            if rowsums.COLUMN not in self.missing:
                return rowsums.problems(self.db, self.missing)
        except (sqlite3.Error, ValueError, TypeError) as exc:  # UnicodeDecodeError included
            return [f"catalog: unreadable row ({type(exc).__name__}: {str(exc)[:120]})"]
        return []

    def put_embeddings(self, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        self.db.executemany(
            "INSERT OR IGNORE INTO embeddings(model, text_hash, vector) VALUES (?,?,?)",
            [(model, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items],
        )

    def chunk_hashes(self, ids: Sequence[int]) -> tuple[np.ndarray, list[str]]:
        """(chunk ids, the hash of each one's embedded text), in id order."""
        sql = "SELECT id, embed_hash FROM chunks WHERE id IN ({marks})"
        rows = sorted(self._select_in(sql, list(ids)))
        return np.array([r[0] for r in rows], dtype=np.int64), [r[1] for r in rows]

    def sentence_units(self, chunk_ids: Sequence[int]) -> tuple[np.ndarray, list[str]]:
        """(sentence id, text hash) of every sentence unit of these chunks, derived again
        from their stored text; a chunk with none has its own text as its one unit."""
        ids: list[int] = []
        hashes: list[str] = []
        sql = (
            f"SELECT c.id, c.text, c.embed_hash, {self.column('kind')} FROM chunks c"
            " JOIN notes n ON n.id=c.note_id WHERE c.id IN ({marks}) ORDER BY c.id"
        )
        for cid, text, embed_hash, kind in self._select_in(sql, list(chunk_ids)):
            units = [text_hash(u) for u in unit_texts(text, kind)] or [embed_hash]
            ids.extend(sentence_id(cid, k) for k in range(len(units)))
            hashes.extend(units)
        return np.array(ids, dtype=np.int64), hashes

    def sentence_texts(self, chunk_ids: Sequence[int]) -> dict[str, str]:
        """The text of every sentence unit of these chunks by its hash: what a first
        build's second stage embeds (a chunk with no unit has its own vector already)."""
        sql = (
            f"SELECT c.text, {self.column('kind')} FROM chunks c"
            " JOIN notes n ON n.id=c.note_id WHERE c.id IN ({marks})"
        )
        return {
            text_hash(u): u
            for text, kind in self._select_in(sql, list(chunk_ids))
            for u in unit_texts(text, kind)
        }

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
        sql = (
            "SELECT c.id, e.vector FROM chunks c JOIN embeddings e"
            " ON e.model=? AND e.text_hash=c.embed_hash WHERE c.id IN ({marks})"
        )
        for cid, blob in self._select_in(sql, list(ids), model):
            out[pos[cid]] = np.frombuffer(blob, dtype=np.float32)
        return out

    def sentence_vectors(
        self, model: str, dim: int, chunk_ids: Sequence[int]
    ) -> tuple[np.ndarray, np.ndarray]:
        """(sentence id, vector) of every sentence unit of these chunks from the stored
        embeddings (an older catalog's, or a writer's run)."""
        ids, hashes = self.sentence_units(chunk_ids)
        blobs = self.embedding_blobs(model, hashes)
        out = np.zeros((len(ids), dim), dtype=np.float32)
        for i, h in enumerate(hashes):
            if (blob := blobs.get(h)) is not None:
                out[i] = np.frombuffer(blob, dtype=np.float32)
        return ids, out

    # --- failures -------------------------------------------------------------
    def failures(self) -> dict[str, FailureRow]:
        """Every recorded failure; a row from before ``fault`` was recorded is judged
        by its reason (``fault.of_reason``)."""
        cols = _column_list("path, reason, mtime_ns, size, fault, tries", self.missing)
        rows = self.db.execute(f"SELECT {cols} FROM failures ORDER BY path")
        return {r[0]: FailureRow(r[1], r[2], r[3], r[4] or of_reason(r[1]), r[5]) for r in rows}

    def set_failure(self, path: str, failure: FailureRow) -> None:
        """Recorded, or recorded again: ``tries`` counts the runs that failed on the file
        with the same time and size, and starts again at 1 when it changed."""
        self.db.execute(
            "INSERT INTO failures(path, reason, mtime_ns, size, fault, tries)"
            " VALUES (?,?,?,?,?,1) ON CONFLICT(path) DO UPDATE SET"
            " reason=excluded.reason, fault=excluded.fault, row_sum=NULL,"
            " tries=CASE WHEN mtime_ns=excluded.mtime_ns AND size=excluded.size"
            " THEN tries+1 ELSE 1 END,"
            " mtime_ns=excluded.mtime_ns, size=excluded.size",
            (path, failure.reason, failure.mtime_ns, failure.size, failure.fault),
        )
        self.unsealed["failures"].add(path)

    def clear_failure(self, path: str) -> None:
        self.db.execute("DELETE FROM failures WHERE path=?", (path,))
