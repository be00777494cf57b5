"""``vaultsearch check``: silent and 0 on a good index, loud and non-zero on damage,
and ``--repair`` mends the derived indexes from the catalog without the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import embeddings, indexed_vault, live_catalog, run_check
from vaultsearch import Vault
from vaultsearch.cli.main import main
from vaultsearch.store.derived.graph import GraphPart
from vaultsearch.store.derived.keywords import KeywordPart
from vaultsearch.store.derived.vectors import VectorPart
from vaultsearch.store.keywords import KeywordIndex
from vaultsearch.store.layout import IndexLayout

NOTES = {
    "one.md": "# One\n\nThe first note, about owls. See [[two]].\n",
    "two.md": "# Two\n\nThe second note, about otters.\n",
    "sub/three.md": "# Three\n\nThe third note, about ospreys. See [[one]].\n",
}


@pytest.fixture
def indexed(tmp_path: Path, embedder: object) -> tuple[Path, Path]:
    return indexed_vault(tmp_path, dict(NOTES))


def check(
    root: Path, index_dir: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str]:
    code = main(["check", str(root), "--index-dir", str(index_dir), *extra])
    return code, capsys.readouterr().out


def repair(root: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    before = embeddings(index_dir)
    code, out = check(root, index_dir, capsys, "--repair", "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"], report
    assert report["repaired"]["update"]["chunks_embedded"] == 0
    assert embeddings(index_dir) == before
    assert check(root, index_dir, capsys)[0] == 0
    return dict(report["repaired"])


def test_a_consistent_index_passes(indexed: tuple[Path, Path]) -> None:
    root, index_dir = indexed
    run = run_check(root, index_dir)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines() == ["consistent (notes 3, chunks 3, vectors 3, keyword_docs 3)"]


def test_deleted_vectors_are_reported_and_repaired(
    indexed: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root, index_dir = indexed
    (VectorPart.location(IndexLayout(index_dir).live)).unlink()
    run = run_check(root, index_dir)
    assert run.returncode == 1
    assert run.stdout.startswith("inconsistent")
    assert "vectors: unreadable" in run.stdout
    repaired = repair(root, index_dir, capsys)
    assert repaired["derived"] == ["derived indexes: rebuilt from the catalog"]


def test_a_missing_keyword_document_is_reported_and_repaired(
    indexed: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root, index_dir = indexed
    keywords = KeywordIndex(KeywordPart.location(IndexLayout(index_dir).live))
    keywords.delete_paths(["two.md"])
    keywords.commit()
    code, out = check(root, index_dir, capsys)
    assert code == 1
    assert "  - keywords: 1 catalog chunks missing" in out.splitlines()
    repair(root, index_dir, capsys)
    with Vault.open(root, index_dir=index_dir) as vault:
        assert vault.search("otters", mode="keyword")[0].path == "two.md"


def test_a_lost_graph_is_repaired(
    indexed: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root, index_dir = indexed
    (GraphPart.location(IndexLayout(index_dir).live)).unlink()
    code, out = check(root, index_dir, capsys)
    assert code == 1
    assert "graph: graph.json is missing" in out
    repair(root, index_dir, capsys)


def test_a_catalog_changed_behind_the_writer_is_found_and_repaired(
    indexed: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The catalog is shared by generations and written by every update, so no checksum
    of its bytes can hold; a sound SQLite change behind the writer's back (a tool, a
    writer of an older version) still shows as a commit number the state file does not
    name, and the repair brings the derived indexes level with the catalog."""
    root, index_dir = indexed
    catalog = live_catalog(index_dir, readonly=False)
    with catalog.transaction():
        catalog.bump_generation()
    catalog.close()
    code, out = check(root, index_dir, capsys)
    assert code == 1
    assert "  - state: commit 1 != catalog 2" in out.splitlines()
    repaired = repair(root, index_dir, capsys)
    assert "derived indexes: rebuilt from the catalog" in repaired["derived"]  # type: ignore[operator]


def test_a_note_deleted_behind_the_index_is_reported_and_removed(
    indexed: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root, index_dir = indexed
    (root / "sub" / "three.md").unlink()
    code, out = check(root, index_dir, capsys)
    assert code == 1
    assert "  - files: 1 file deleted since the last index run" in out.splitlines()
    repaired = repair(root, index_dir, capsys)
    assert repaired["update"]["removed"] == 1  # type: ignore[index]
    code, out = check(root, index_dir, capsys)
    assert out.startswith("consistent (notes 2, chunks 2")
