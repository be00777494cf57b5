"""One catalog shared by the generations (``store/generations.py``): an update changes it
in one transaction instead of copying it, a reader keeps the rows of the generation it
holds while a writer commits the next, and a writer killed between its catalog commit
and the pointer switch leaves the new generation served and finished by the next run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.conftest import indexed_vault, write_files
from vaultsearch import Vault
from vaultsearch.indexing.manager import IndexManager
from vaultsearch.store.generations import hold_published, newest_intact, sweep
from vaultsearch.store.layout import IndexLayout
from vaultsearch.store.manifest import expected_manifest
from vaultsearch.store.verify import verify_store
from vaultsearch.store.writer import GenerationWriter, clone_generation


def _notes(version: int) -> dict[str, str | bytes]:
    return {
        f"n{i}.md": f"# Note {i}\n\nRiver {i} in version {version}. See [[n{(i + 1) % 6}]].\n"
        for i in range(6)
    }


def _indexed(tmp_path: Path) -> tuple[Path, Path]:
    return indexed_vault(tmp_path, _notes(0))


def test_an_update_shares_the_catalog_instead_of_copying_it(
    tmp_path: Path, embedder: object
) -> None:
    root, index_dir = _indexed(tmp_path)
    layout = IndexLayout(index_dir)
    first = layout.live
    catalog = first.catalog
    assert first.shares_catalog
    write_files(root, {"n1.md": "# Note 1\n\nA glacier now.\n"})
    with Vault.open(root, index_dir=index_dir) as vault:
        assert vault.index().updated == 1
    second = layout.live
    assert second.name != first.name
    assert second.catalog == catalog
    assert [p.name for p in layout.all_catalogs()] == [catalog.name]
    assert not second.own_catalog.exists()


def test_a_reader_keeps_its_generations_rows_while_a_writer_commits(
    tmp_path: Path, embedder: object
) -> None:
    root, index_dir = _indexed(tmp_path)
    with Vault.open(root, index_dir=index_dir) as reader:
        assert reader.search("river", mode="keyword")
        snap = reader.orchestrator.snapshot()
        held = dict(snap.catalog.file_states())
        write_files(root, {"n2.md": "# Note 2\n\nNothing but a glacier.\n"})
        with Vault.open(root, index_dir=index_dir) as writer:
            assert writer.index().updated == 1
        assert snap.catalog.file_states() == held, "the held snapshot saw the next commit"
        assert snap.is_stale()
        fresh = reader.orchestrator.snapshot()
        assert fresh.generation.name != snap.generation.name
        assert fresh.catalog.file_states()["n2.md"][1] != held["n2.md"][1]


def test_a_publish_cut_after_the_catalog_commit_is_served_and_finished(
    tmp_path: Path, embedder: object
) -> None:
    """The writer's steps up to the catalog commit, then none: the state a kill between
    the commit and the pointer switch leaves."""
    root, index_dir = _indexed(tmp_path)
    layout = IndexLayout(index_dir)
    before = layout.live
    with Vault.open(root, index_dir=index_dir) as vault:
        manager: IndexManager = vault.manager()
        new = clone_generation(layout, before)
        writer = GenerationWriter(new, manager._settings(), fresh=False, shared=True)
        try:
            writer.commit(expected_manifest(vault.config, manager.embedder.dimension), {})
        finally:
            writer.close()
    assert layout.live.name == before.name, "the pointer was not switched"
    held = hold_published(layout)
    assert held is not None
    hold, catalog = held
    try:
        assert hold.generation.name == new.name, "a reader takes the generation the catalog names"
    finally:
        catalog.close()
        hold.release()
    with Vault.open(root, index_dir=index_dir) as vault:
        assert vault.search("river", mode="keyword")
        vault.index()
        assert vault.manager().verify().ok
    assert layout.live.number >= new.number
    assert not before.root.exists(), "the generation the catalog left behind was swept"


def test_a_generation_with_its_own_catalog_is_read_then_moved_to_a_shared_one(
    tmp_path: Path, embedder: object
) -> None:
    """An index of the previous format (a catalog inside each generation, no CATALOG
    file) is searched as it is, and its next update copies the catalog once."""
    root, index_dir = _indexed(tmp_path)
    layout = IndexLayout(index_dir)
    live = layout.live
    shared = live.catalog
    shared.rename(live.own_catalog)
    for suffix in ("-wal", "-shm"):
        shared.with_name(shared.name + suffix).unlink(missing_ok=True)
    live.catalog_ref.unlink()
    assert not live.shares_catalog
    with Vault.open(root, index_dir=index_dir) as vault:
        want = [h.path for h in vault.search("river", mode="keyword")]
        assert want
        write_files(root, {"n3.md": "# Note 3\n\nA glacier instead.\n"})
        assert vault.index().updated == 1
        assert vault.manager().verify().ok
        assert "n3.md" not in [h.path for h in vault.search("river", mode="keyword")]
    assert layout.live.shares_catalog
    assert [p.name for p in layout.all_catalogs()] == [layout.live.catalog.name]


def test_repairing_a_damaged_shared_catalog_builds_a_new_file_beside_the_held_one(
    tmp_path: Path, embedder: object
) -> None:
    """``check --repair`` never patches the shared catalog in place: a reader of the live
    generation still reads it. A row no longer UTF-8 (damage SQLite's page check lets
    through) makes the repair rebuild into a new catalog file; the reader keeps its
    rows, and the damaged file goes with the last generation that names it."""
    root, index_dir = _indexed(tmp_path)
    layout = IndexLayout(index_dir)
    damaged = layout.live.catalog
    with Vault.open(root, index_dir=index_dir) as reader:
        assert reader.search("river", mode="keyword")
        snap = reader.orchestrator.snapshot()
        held = dict(snap.catalog.file_states())
        db = sqlite3.connect(damaged)
        try:
            db.execute("UPDATE chunks SET text = CAST(x'ff00fe' AS TEXT) WHERE id = 1")
            db.commit()
        finally:
            db.close()
        with Vault.open(root, index_dir=index_dir) as writer:
            manager = writer.manager()
            assert any(p.startswith("catalog: ") for p in manager.verify().problems)
            summary = manager.repair()
            assert "catalog: rebuilt from the vault's files" in summary.repaired
            assert manager.verify().ok
        assert layout.live.catalog != damaged
        assert damaged.is_file(), "the catalog a reader holds was removed"
        assert snap.catalog.file_states() == held
    with Vault.open(root, index_dir=index_dir) as writer:
        writer.index()
    assert [p.name for p in layout.all_catalogs()] == [layout.live.catalog.name]


def test_a_lost_current_is_found_again_past_a_run_cut_before_its_catalog_commit(
    tmp_path: Path, embedder: object
) -> None:
    """A run killed before its catalog commit leaves a newer generation with a whole
    state file (cloned from the live one) whose rows were never committed: with
    ``CURRENT`` lost, the repair starts from the generation the catalog names."""
    root, index_dir = _indexed(tmp_path)
    layout = IndexLayout(index_dir)
    live = layout.live
    cut = clone_generation(layout, live)
    assert cut.state.is_file() and cut.number > live.number
    layout.pointer.unlink()
    assert newest_intact(layout) == live
    with Vault.open(root, index_dir=index_dir) as vault:
        summary = vault.manager().repair()
        assert f"started from generation {live.name}" in summary.repaired[0]
        assert vault.manager().verify().ok


def test_a_new_catalog_never_takes_the_name_of_a_lost_ones_wal(tmp_path: Path) -> None:
    """A catalog deleted with its ``-wal`` left behind: SQLite would read that WAL's
    pages into a new file of the same name, so the next catalog takes another number,
    and a sweep removes the leftover once no generation names it."""
    layout = IndexLayout(tmp_path / "index")
    assert layout.next_catalog().name == "c000001.sqlite"
    layout.catalogs.mkdir(parents=True)
    (layout.catalogs / "c000001.sqlite").write_bytes(b"")
    (layout.catalogs / "c000002.sqlite-wal").write_bytes(b"pages of a lost catalog")
    assert layout.next_catalog().name == "c000003.sqlite"
    sweep(layout)
    assert list(layout.catalogs.iterdir()) == []


def test_check_during_a_publish_cut_after_the_catalog_commit_reads_one_generation(
    tmp_path: Path, embedder: object
) -> None:
    """The catalog commit of a run with changes made, the pointer not yet switched:
    ``check`` reads the generation the catalog names with its rows, instead of the
    pointer's generation against the next commit's rows."""
    root, index_dir = _indexed(tmp_path)
    layout = IndexLayout(index_dir)
    before = layout.live
    with Vault.open(root, index_dir=index_dir) as vault:
        manager: IndexManager = vault.manager()
        new = clone_generation(layout, before)
        writer = GenerationWriter(new, manager._settings(), fresh=False, shared=True)
        try:
            with writer.catalog.transaction():
                writer.catalog.bump_generation()
            writer.commit(expected_manifest(vault.config, manager.embedder.dimension), {})
        finally:
            writer.close()
        assert layout.live.name == before.name
        report = verify_store(layout, vault.config)
    assert report.ok, report.problems
    assert report.generation == new.name
