"""A reader following a writer: the next generation's note maps from the previous
snapshot's, at the cost of what the writer changed.

The writer lists in the state file the notes (by old and new path) a run changed
since the catalog commit it started from (``GenerationWriter._changes``). A snapshot
at that commit, on the same catalog file, copies its maps and reloads only those
notes; anything else (no list, another catalog, a skipped commit, a state whose
checksum fails) loads the maps whole, as a first open does. Both give the same maps,
in the same order (``tests/test_snapshot_follow.py``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from vaultsearch.search import chunklayer
from vaultsearch.search.chunkmap import ChunksByNote, NoteOfChunk
from vaultsearch.search.filters import NoteMeta
from vaultsearch.search.layered import Layered
from vaultsearch.store.catalog import Catalog
from vaultsearch.store.manifest import state_checksum


@dataclass(frozen=True)
class NoteMaps:
    """What a snapshot knows of every note without reading a chunk's text."""

    notes: Mapping[int, NoteMeta]
    note_by_path: Mapping[str, int]
    note_of_chunk: NoteOfChunk
    chunks_by_note: ChunksByNote


@dataclass(frozen=True)
class Followed:
    """What a snapshot needs of the one it may follow."""

    catalog: Path
    commit: int
    maps: NoteMaps


def _note_columns(catalog: Catalog) -> str:
    added = ", ".join(catalog.column(c) for c in ("source", "kind", "language"))
    return f"id, path, title, tags, frontmatter, date, {added}"


NO_FRONTMATTER: dict[str, Any] = {}
"""Every note without frontmatter shares this one (``NoteMeta.frontmatter`` is read-only)."""


def _meta(r: Sequence[Any]) -> NoteMeta:
    """Tags, source, kind and language repeat across notes: each text is held once, and
    an empty frontmatter is not a dict per note (130 of the 575 bytes a note took)."""
    tags = tuple(map(sys.intern, json.loads(r[3]))) if r[3] != "[]" else ()
    frontmatter = json.loads(r[4]) if r[4] != "{}" else NO_FRONTMATTER
    return NoteMeta(r[0], r[1], r[2], tags, frontmatter, r[5], *map(sys.intern, r[6:]))


def _pairs(rows: Iterable[Sequence[int]]) -> np.ndarray:
    """Streamed: a list of a million row tuples would be the load's peak of memory."""
    return np.fromiter(chain.from_iterable(rows), dtype=np.int64).reshape(-1, 2)


def load(catalog: Catalog) -> NoteMaps:
    """Every note's maps, read whole."""
    notes = {
        r[0]: _meta(r)
        for r in catalog.db.execute(f"SELECT {_note_columns(catalog)} FROM notes ORDER BY id")
    }
    pairs = _pairs(catalog.db.execute("SELECT id, note_id FROM chunks ORDER BY note_id, id"))
    by_note = ChunksByNote.of_pairs(pairs)
    return NoteMaps(
        notes=notes,
        note_by_path={n.path: i for i, n in notes.items()},
        note_of_chunk=by_note.note_of_chunk,
        chunks_by_note=by_note,
    )


def changed_paths(
    previous: Followed | None, catalog_path: Path, commit: int, state: dict[str, Any]
) -> list[str] | None:
    """The paths to reload to go from ``previous`` to the catalog's ``commit``; None
    when the maps must be loaded whole."""
    if previous is None or previous.catalog != catalog_path:
        return None
    if previous.commit == commit:
        return []
    changes = state.get("changes")
    if (
        not isinstance(changes, dict)
        or state.get("generation") != commit
        or changes.get("since") != previous.commit
        or state.get("checksum") != state_checksum(state)
    ):
        return None
    paths = changes.get("paths")
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        return None
    return paths


def follow(previous: NoteMaps, catalog: Catalog, paths: Sequence[str]) -> NoteMaps:
    """``previous`` with the notes at ``paths`` (before or after the change) read again.
    The maps are layers over the previous ones (``search/layered.py``: a search may
    still read those, and copying 298k entries per edit was most of a million-chunk
    reader's follow; the chunk map likewise, ``search/chunklayer.py``); a kept note
    keeps its place and a new one comes last, as note ids only grow (AUTOINCREMENT), so
    the order is the id order a full load reads."""
    if not paths:
        return previous
    notes = Layered.over(previous.notes)
    by_path = Layered.over(previous.note_by_path)
    rows = {
        r[0]: _meta(r)
        for r in catalog._select_in(
            f"SELECT {_note_columns(catalog)} FROM notes WHERE path IN ({{marks}}) ORDER BY id",
            list(dict.fromkeys(paths)),
        )
    }
    stale = {i for p in paths if (i := by_path.get(p)) is not None} | rows.keys()
    for nid in stale:
        if (old := notes.get(nid)) is not None and by_path.get(old.path) == nid:
            by_path.drop(old.path)
        if nid not in rows:
            notes.drop(nid)
    pairs = _pairs(
        catalog._select_in(
            "SELECT id, note_id FROM chunks WHERE note_id IN ({marks}) ORDER BY note_id, id",
            sorted(rows),
        )
    )
    for nid in sorted(rows):
        notes.put(nid, rows[nid])
        by_path.put(rows[nid].path, nid)
    by_note = chunklayer.replaced(previous.chunks_by_note, stale, pairs)
    return NoteMaps(notes.settled(), by_path.settled(), by_note.note_of_chunk, by_note)
