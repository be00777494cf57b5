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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vaultsearch.search.filters import NoteMeta
from vaultsearch.store.catalog import Catalog
from vaultsearch.store.manifest import state_checksum


@dataclass(frozen=True)
class NoteMaps:
    """What a snapshot knows of every note without reading a chunk's text."""

    notes: dict[int, NoteMeta]
    note_by_path: dict[str, int]
    note_of_chunk: dict[int, int]
    chunks_by_note: dict[int, np.ndarray]


@dataclass(frozen=True)
class Followed:
    """What a snapshot needs of the one it may follow."""

    catalog: Path
    commit: int
    maps: NoteMaps


def _note_columns(catalog: Catalog) -> str:
    added = ", ".join(catalog.column(c) for c in ("source", "kind", "language"))
    return f"id, path, title, tags, frontmatter, date, {added}"


def _meta(r: Sequence[Any]) -> NoteMeta:
    return NoteMeta(r[0], r[1], r[2], tuple(json.loads(r[3])), json.loads(r[4]), r[5], *r[6:])


def _grouped(pairs: np.ndarray) -> dict[int, np.ndarray]:
    """(chunk id, note id) rows ordered by note, then chunk: each note's chunk ids."""
    out: dict[int, np.ndarray] = {}
    if len(pairs):
        splits = np.flatnonzero(np.diff(pairs[:, 1])) + 1
        for part in np.split(pairs, splits):
            out[int(part[0, 1])] = part[:, 0].copy()
    return out


def _pairs(rows: list[Any]) -> np.ndarray:
    return np.array(rows, dtype=np.int64).reshape(-1, 2)


def load(catalog: Catalog) -> NoteMaps:
    """Every note's maps, read whole."""
    notes = {
        r[0]: _meta(r)
        for r in catalog.db.execute(f"SELECT {_note_columns(catalog)} FROM notes ORDER BY id")
    }
    pairs = _pairs(
        catalog.db.execute("SELECT id, note_id FROM chunks ORDER BY note_id, id").fetchall()
    )
    return NoteMaps(
        notes=notes,
        note_by_path={n.path: i for i, n in notes.items()},
        note_of_chunk=dict(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist(), strict=True)),
        chunks_by_note=_grouped(pairs),
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
    The maps are copies (a search may still read the previous ones); a kept note keeps
    its place and a new one comes last, as note ids only grow (AUTOINCREMENT), so the
    order is the id order a full load reads."""
    if not paths:
        return previous
    notes = dict(previous.notes)
    by_path = dict(previous.note_by_path)
    of_chunk = dict(previous.note_of_chunk)
    by_note = dict(previous.chunks_by_note)
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
            del by_path[old.path]
        for cid in by_note.get(nid, ()):
            of_chunk.pop(int(cid), None)
        if nid not in rows:
            notes.pop(nid, None)
            by_note.pop(nid, None)
    pairs = _pairs(
        list(
            catalog._select_in(
                "SELECT id, note_id FROM chunks WHERE note_id IN ({marks}) ORDER BY note_id, id",
                sorted(rows),
            )
        )
    )
    fresh = _grouped(pairs)
    for nid in sorted(rows):
        notes[nid] = rows[nid]
        by_path[rows[nid].path] = nid
        if nid in fresh:
            by_note[nid] = fresh[nid]
        else:
            by_note.pop(nid, None)
    of_chunk.update(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist(), strict=True))
    return NoteMaps(notes, by_path, of_chunk, by_note)
