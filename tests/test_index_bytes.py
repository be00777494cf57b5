"""Bytes an index no longer spends, with nothing it answers changed: catalog rows written
with their checksums (no page split when a sum is added later), ``graph.json`` naming
each note once, Tantivy's ``chunk_id`` no longer stored beside its fast field. An index
written before any of them is read as it stands and checks clean; the graph and the
keyword index take the new form when their writer next writes them whole."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest
import tantivy

from tests.conftest import indexed_vault, write_files
from vaultsearch import Vault
from vaultsearch.store import rowsums
from vaultsearch.store.derived.graph import GraphPart
from vaultsearch.store.derived.keywords import KeywordPart
from vaultsearch.store.graph import FILE_FORMAT, graph_data, load_graph
from vaultsearch.store.graphdelta import read_listing, write_listing
from vaultsearch.store.keywords import KeywordDoc, KeywordIndex, _schema
from vaultsearch.store.layout import IndexLayout
from vaultsearch.store.manifest import file_crc32, read_state, write_state
from vaultsearch.store.verify import verify_store


def _notes(version: int, count: int = 8) -> dict[str, str | bytes]:
    return {
        f"n{i}.md": f"# Note {i}\n\n## Part\n\nRiver {i} in version {version}. "
        f"See [[n{(i + 1) % count}]] and [[n{(i + 3) % count}]].\n\n## Glacier {i}\n\nIce.\n"
        for i in range(count)
    }


def _indexed(tmp_path: Path) -> tuple[Path, Path]:
    return indexed_vault(tmp_path, _notes(0))


def _results(root: Path, index_dir: Path) -> dict[str, list[tuple[str, float]]]:
    with Vault.open(root, index_dir=index_dir) as vault:
        return {
            mode: [(h.path, round(h.score, 6)) for h in vault.search("river glacier", mode=mode)]
            for mode in ("keyword", "semantic", "hybrid")
        }


def _catalog(index_dir: Path) -> sqlite3.Connection:
    path = IndexLayout(index_dir).live.catalog
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)


def test_new_rows_carry_the_sums_a_seal_would_give_and_ids_as_autoincrement(
    tmp_path: Path, embedder: object
) -> None:
    """Chunks and notes are inserted with their sums, computed in Python over the values
    as SQLite stores them: every row's sum is the one ``check`` recomputes, and the ids
    are the ones AUTOINCREMENT gives (a deleted note's ids are never used again)."""
    root, index_dir = _indexed(tmp_path)
    db = _catalog(index_dir)
    try:
        top_chunk = db.execute("SELECT MAX(id) FROM chunks").fetchone()[0]
        top_note = db.execute("SELECT MAX(id) FROM notes").fetchone()[0]
    finally:
        db.close()
    (root / "n7.md").unlink()  # the newest note: its ids are the largest
    write_files(root, {"n3.md": "# Note 3\n\nA moraine now.\n", "new.md": "# New\n\nA fjord.\n"})
    with Vault.open(root, index_dir=index_dir) as vault:
        summary = vault.index()
        assert (summary.added, summary.updated, summary.removed) == (1, 1, 1)
        report = verify_store(IndexLayout(index_dir), vault.config)
    assert report.ok, report.problems
    db = _catalog(index_dir)
    try:
        assert rowsums.problems(db) == []
        for table in ("notes", "chunks"):
            rows = db.execute(f"SELECT row_sum, {rowsums.COLUMNS[table]} FROM {table}")
            assert all(s == rowsums.row_sum(*values) for s, *values in rows)
        new_chunks = db.execute(
            "SELECT c.id FROM chunks c JOIN notes n ON n.id=c.note_id"
            " WHERE n.path IN ('n3.md', 'new.md') ORDER BY c.id"
        ).fetchall()
        new_note = db.execute("SELECT id FROM notes WHERE path='new.md'").fetchone()[0]
    finally:
        db.close()
    assert [r[0] for r in new_chunks] == list(range(top_chunk + 1, top_chunk + 1 + len(new_chunks)))
    assert new_note == top_note + 1


def _as_older_graph(index_dir: Path) -> None:
    """The live generation's graph base rewritten as node-link JSON (the form before
    ``FILE_FORMAT``), its CRC-32s recorded as that older writer would have."""
    live = IndexLayout(index_dir).live
    path = GraphPart.location(live)
    data = graph_data(load_graph(path))
    older = path.with_name("graph.json.older")
    older.write_text(json.dumps(data, sort_keys=True, separators=(",", ":")), encoding="utf-8")
    os.replace(older, path)  # a new inode: older generations keep their own file
    listing = read_listing(path)
    crc = file_crc32(path)
    write_listing(path, {**listing.base, "crc32": crc}, listing.parts)
    state = read_state(live.root)
    assert state is not None
    state["graph_crc32"] = crc
    state["graph_delta_crc32"] = file_crc32(path.with_name("graph.delta.json"))
    write_state(live.root, state)


def test_an_older_graph_base_is_read_and_rewritten_by_the_next_full_run(
    tmp_path: Path, embedder: object
) -> None:
    root, index_dir = _indexed(tmp_path)
    path = lambda: GraphPart.location(IndexLayout(index_dir).live)  # noqa: E731
    assert json.loads(path().read_text(encoding="utf-8"))["format"] == FILE_FORMAT
    want = _results(root, index_dir)
    before = graph_data(load_graph(path()))
    _as_older_graph(index_dir)
    assert "format" not in json.loads(path().read_text(encoding="utf-8"))
    with Vault.open(root, index_dir=index_dir) as vault:
        report = verify_store(IndexLayout(index_dir), vault.config)
        assert report.ok, report.problems
    assert graph_data(load_graph(path())) == before
    assert _results(root, index_dir) == want
    write_files(root, {"n2.md": _notes(1)["n2.md"]})  # an edit: a delta over the older base
    with Vault.open(root, index_dir=index_dir) as vault:
        assert vault.index().updated == 1
        assert "format" not in json.loads(path().read_text(encoding="utf-8"))
        report = verify_store(IndexLayout(index_dir), vault.config)
        assert report.ok, report.problems
        summary = vault.index(full=True)
        assert (summary.chunks_embedded, summary.sentences_embedded) == (0, 0)
        report = verify_store(IndexLayout(index_dir), vault.config)
        assert report.ok, report.problems
    assert json.loads(path().read_text(encoding="utf-8"))["format"] == FILE_FORMAT
    assert not _chunk_id_stored(KeywordPart.location(IndexLayout(index_dir).live))


def _chunk_id_stored(folder: Path) -> bool:
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    field = next(f for f in meta["schema"] if f["name"] == "chunk_id")
    return bool(field["options"]["stored"])


def _doc(i: int) -> KeywordDoc:
    return KeywordDoc(i, f"n{i}.md", f"Note {i}", [], ["Part"], [], f"river {i} glacier")


def test_a_keyword_index_that_stores_chunk_ids_is_read_and_written_until_rebuilt(
    tmp_path: Path,
) -> None:
    """An index built when ``chunk_id`` was stored too opens with its own schema, takes
    new documents and answers as before; a rebuild (``recreate``) writes the current
    schema. An index of another tokenizer is still refused, as it was."""
    folder = tmp_path / "keywords"
    folder.mkdir()
    tantivy.Index(_schema(True, stored_id=True), path=str(folder), reuse=True)
    older = KeywordIndex(folder)
    older.add([_doc(i) for i in range(1, 4)])
    older.commit()
    older.add([_doc(4)])
    older.delete_paths(["n2.md"])
    older.commit()
    assert _chunk_id_stored(folder)
    assert sorted(cid for cid, _ in older.search(["glacier"])) == [1, 3, 4]
    assert [cid for cid, _ in older.search(["river"], allowed=np.array([3]))] == [3]
    assert sorted(KeywordIndex(folder).all_chunk_ids()) == [1, 3, 4]
    with pytest.raises(ValueError, match="schema does not match"):
        KeywordIndex(folder, stemming=False)
    rebuilt = KeywordIndex.recreate(folder)
    rebuilt.add([_doc(i) for i in range(1, 5)])
    rebuilt.commit()
    assert not _chunk_id_stored(folder)
    assert sorted(cid for cid, _ in rebuilt.search(["glacier"])) == [1, 2, 3, 4]
