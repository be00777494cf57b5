"""The compact note maps answer as the dicts they replace, for ids packed the way a
fresh build packs them and for ids spread out by years of edits (the bisected form)."""

from __future__ import annotations

import numpy as np
import pytest

from vaultsearch.search import chunklayer, chunkmap
from vaultsearch.search.chunkmap import ChunksByNote


def _pairs(rng: np.random.Generator, chunks: int, notes: int, spread: int) -> np.ndarray:
    """(chunk id, note id) rows ordered by note, then chunk, as ``refresh.load`` reads."""
    chunk_ids = rng.choice(chunks * spread, chunks, replace=False) + 1
    note_ids = rng.choice(notes * spread, notes, replace=False) + 1
    owners = rng.choice(note_ids, chunks)
    order = np.lexsort((chunk_ids, owners))
    return np.stack([chunk_ids[order], owners[order]], axis=1).astype(np.int64)


def _dicts(pairs: np.ndarray) -> tuple[dict[int, int], dict[int, list[int]]]:
    of_chunk: dict[int, int] = {}
    by_note: dict[int, list[int]] = {}
    for c, n in pairs.tolist():
        of_chunk[c] = n
        by_note.setdefault(n, []).append(c)
    return of_chunk, by_note


def _same(m: ChunksByNote, pairs: np.ndarray) -> None:
    of_chunk, by_note = _dicts(pairs)
    assert m.note_of_chunk == of_chunk and len(m.note_of_chunk) == len(of_chunk)
    assert {k: v.tolist() for k, v in m.items()} == by_note and len(m) == len(by_note)
    absent = [0, -3, max(of_chunk, default=0) + 1, 10**12]
    for c in [*of_chunk, *absent]:
        assert m.note_of_chunk.get(c) == of_chunk.get(c)
        assert (c in m.note_of_chunk) == (c in of_chunk)
    for n in [*by_note, *absent]:
        got = m.get(n)
        assert (None if got is None else got.tolist()) == by_note.get(n)
        assert (n in m) == (n in by_note)
    assert m.note_of_chunk.get("a path") is None and "a path" not in m
    with pytest.raises(KeyError):
        m.note_of_chunk[absent[2]]


@pytest.fixture(params=["packed", "spread"])
def spread(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    if request.param == "packed":
        return 1
    monkeypatch.setattr(chunkmap, "SPAN", 0)  # every table bisected, however small
    return 50


def test_the_maps_answer_as_dicts(spread: int) -> None:
    rng = np.random.default_rng(7)
    for chunks, notes in ((0, 0), (1, 1), (400, 60), (3000, 900)):
        pairs = _pairs(rng, chunks, notes, spread) if chunks else np.zeros((0, 2), np.int64)
        m = ChunksByNote.of_pairs(pairs)
        if chunks > 1000:  # the form the fixture asked for
            assert (m._chunk._sorted is not None) == (spread > 1)
        _same(m, pairs)


def test_the_chunks_of_notes_are_gathered_in_note_order(spread: int) -> None:
    rng = np.random.default_rng(8)
    pairs = _pairs(rng, 2000, 300, spread)
    m = ChunksByNote.of_pairs(pairs)
    _, by_note = _dicts(pairs)
    notes = sorted(by_note)
    for wanted in (set(notes[::7]), set(notes), {notes[3], 10**12}, set()):
        expected = [c for n in sorted(wanted) for c in by_note.get(n, [])]
        got = m.of_notes(wanted)
        assert got.dtype == np.int64 and got.tolist() == expected


def test_a_replaced_map_equals_one_loaded_whole_and_leaves_the_old_one(spread: int) -> None:
    """What ``refresh.follow`` does: notes dropped, notes read again, new notes (higher
    ids) added; the previous map, which a search may still be reading, stays as it was."""
    rng = np.random.default_rng(9)
    pairs = _pairs(rng, 1500, 200, spread)
    old = ChunksByNote.of_pairs(pairs)
    _, by_note = _dicts(pairs)
    notes = sorted(by_note)
    gone, edited = set(notes[::5]), notes[1::5]
    top_chunk, top_note = int(pairs[:, 0].max()), int(pairs[:, 1].max())
    fresh = [(top_chunk + 1 + i, n) for i, n in enumerate(edited)]
    fresh += [(top_chunk + 100, top_note + 1), (top_chunk + 101, top_note + 1)]
    fresh += [(int(by_note[edited[0]][0]), edited[0])]  # a chunk kept across the edit
    fresh.sort(key=lambda p: (p[1], p[0]))
    rows = np.array(fresh, dtype=np.int64)
    new = old.replaced(gone | set(edited), rows)
    kept = pairs[~np.isin(pairs[:, 1], list(gone | set(edited)))]
    whole = np.concatenate([kept, rows])
    whole = whole[np.lexsort((whole[:, 0], whole[:, 1]))]
    _same(new, whole)
    _same(old, pairs)


def test_the_shared_arrays_cannot_be_written() -> None:
    m = ChunksByNote.of_pairs(np.array([[5, 1], [6, 1], [9, 2]], dtype=np.int64))
    with pytest.raises(ValueError):
        m[1][0] = 7


@pytest.mark.parametrize("fold_at", [10**9, 0, 300])
def test_a_layered_map_over_edits_equals_one_loaded_whole(
    spread: int, monkeypatch: pytest.MonkeyPatch, fold_at: int
) -> None:
    """What a reader following many edits holds (``chunklayer.replaced`` over its own
    result): notes edited, edited again, deleted, deleted and back, new ones; never
    folded, folded every edit, and folded now and then. Each map, and each earlier one
    a search may still hold, answers as the map of its rows loaded whole."""
    monkeypatch.setattr(chunklayer, "FOLD_AT_LEAST", fold_at)
    monkeypatch.setattr(chunklayer, "FOLD", 10**9)
    rng = np.random.default_rng(10)
    rows = _pairs(rng, 1200, 150, spread)
    m: ChunksByNote = ChunksByNote.of_pairs(rows)
    held = [(m, rows)]
    forms = set()
    top_chunk, top_note = int(rows[:, 0].max()), int(rows[:, 1].max())
    for step in range(12):
        notes = sorted(set(rows[:, 1].tolist()))
        changed = set(rng.choice(notes, 6, replace=False).tolist())
        if step % 3 == 0:
            changed.add(top_note + 1)  # a new note
            top_note += 1
        if step == 5:
            changed.add(int(held[1][1][0, 1]))  # one edited at the first step comes back
        kept = rows[~np.isin(rows[:, 1], list(changed))]
        fresh = []
        for n in sorted(changed)[step % 2 :: 2]:  # the others deleted
            for _ in range(int(rng.integers(1, 4))):
                top_chunk += 1
                fresh.append((top_chunk, n))
        new_rows = np.array(fresh, dtype=np.int64).reshape(-1, 2)
        new_rows = new_rows[np.lexsort((new_rows[:, 0], new_rows[:, 1]))]
        m = chunklayer.replaced(m, changed, new_rows)
        forms.add(type(m).__name__)
        rows = np.concatenate([kept, new_rows])
        rows = rows[np.lexsort((rows[:, 0], rows[:, 1]))]
        held.append((m, rows))
        _same(m, rows)
        notes = sorted(set(rows[:, 1].tolist()))
        _, by_note = _dicts(rows)
        for wanted in (set(notes[::3]) | {top_note, 10**12}, set(notes), set()):
            expected = [c for n in sorted(wanted) for c in by_note.get(n, [])]
            assert m.of_notes(wanted).tolist() == expected
        of_chunk, _ = _dicts(rows)
        ever = np.unique(np.concatenate([r[:, 0] for _, r in held]))  # gone ones too
        probe = np.array([*ever.tolist(), 0, top_chunk + 5], dtype=np.int64)
        assert [m.note_of_chunk.get(c) for c in probe.tolist()] == [
            of_chunk.get(c) for c in probe.tolist()
        ]
        assert m.note_of_chunk.many(probe).tolist() == [of_chunk.get(c, -1) for c in probe.tolist()]
    for old, old_rows in held:
        _same(old, old_rows)
    assert (
        forms
        == {10**9: {"LayeredChunks"}, 0: {"ChunksByNote"}, 300: {"LayeredChunks", "ChunksByNote"}}[
            fold_at
        ]
    )
