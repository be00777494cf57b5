"""The IndexManager on real FAISS, Tantivy, NetworkX and the real model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import WriteVault, bump_mtime
from vaultsearch import Vault
from vaultsearch.store.derived.graph import GraphPart
from vaultsearch.store.derived.keywords import KeywordPart
from vaultsearch.store.derived.vectors import VectorPart
from vaultsearch.store.graph import load_graph
from vaultsearch.store.keywords import KeywordIndex
from vaultsearch.store.segments import read_list

NOTES: dict[str, str | bytes] = {
    "Alpha.md": """
        ---
        title: Alpha Project
        aliases: [alpha]
        tags: [project/alpha]
        ---
        # Alpha

        Alpha links to [[Beta]] and embeds ![[Gamma Ray]].

        ## Setup

        Install the toolchain on Linux with apt.

        ## Usage

        Run the alpha command every morning.
        """,
    "Beta.md": "# Beta\n\nBeta talks about cats and dogs. Back to [[alpha]] and [[Missing Note]].\n",
    "sub/Gamma Ray.md": "# Gamma Ray\n\nGamma rays are energetic photons from #physics sources.\n",
    "one/README.md": "# One\n\nThe first readme about oranges.\n",
    "two/README.md": "# Two\n\nThe second readme about lemons.\n",
    "ünï 'quoted' \"name\".md": "# Unicode\n\nA note whose name has quotes, spaces and ünïcödé.\n",
}


@pytest.fixture
def vault(write_vault: WriteVault, embedder: object) -> Vault:
    root = write_vault(NOTES)
    return Vault.open(root)


def _vector_count(v: Vault) -> int:
    return len(read_list(VectorPart.location(v.layout.live)))


def _keyword_ids(v: Vault) -> list[int]:
    return KeywordIndex(KeywordPart.location(v.layout.live)).all_chunk_ids()


def test_first_index_then_nothing_to_do(vault: Vault) -> None:
    first = vault.index()
    assert first.added == len(NOTES) and not first.failed
    assert first.chunks_embedded == first.chunks_written > len(NOTES)
    status = vault.status()
    assert status["notes"] == len(NOTES)
    assert status["chunks"] == status["vectors"] == status["keyword_docs"] == first.chunks_written
    assert status["broken_links"] == 1
    assert vault.manager().verify().ok

    second = vault.index()
    assert second.chunks_embedded == 0 and second.unchanged == len(NOTES)
    assert second.added == second.updated == second.removed == 0


def test_same_file_name_in_two_folders_is_two_notes(vault: Vault) -> None:
    vault.index()
    graph = load_graph(GraphPart.location(vault.layout.live))
    assert {"one/README.md", "two/README.md"} <= set(graph.nodes)


def test_graph_edges_from_real_links_only(vault: Vault) -> None:
    vault.index()
    g = load_graph(GraphPart.location(vault.layout.live))
    assert g.has_edge("Alpha.md", "Beta.md")
    assert g.has_edge("Beta.md", "Alpha.md")  # through the alias [[alpha]]
    assert g.edges["Alpha.md", "sub/Gamma Ray.md"]["embeds"] == 1
    assert not g.has_edge("one/README.md", "two/README.md")
    assert g.nodes["Beta.md"]["unresolved"] == {"Missing Note": 1}
    assert g.number_of_edges() == 3


def test_edit_reembeds_only_changed_chunks(vault: Vault) -> None:
    vault.index()
    path = vault.root / "Alpha.md"
    text = path.read_text()
    path.write_text(text.replace("every morning", "every evening"))
    bump_mtime(path)
    summary = vault.index()
    assert summary.updated == 1 and summary.added == 0
    assert summary.chunks_embedded == 1  # only the Usage section changed
    hits = vault.search("evening", mode="keyword")
    assert hits and hits[0].path == "Alpha.md" and hits[0].heading_path.endswith("Usage")
    assert not vault.search("morning", mode="keyword")


def test_delete_removes_everywhere(vault: Vault) -> None:
    vault.index()
    before_vectors = _vector_count(vault)
    (vault.root / "Beta.md").unlink()
    summary = vault.index()
    assert summary.removed == 1
    assert _vector_count(vault) < before_vectors
    assert len(_keyword_ids(vault)) == _vector_count(vault)
    assert "Beta.md" not in load_graph(GraphPart.location(vault.layout.live))
    assert not vault.search("cats dogs", mode="keyword")
    assert vault.manager().verify().ok


def test_rename_moves_without_reembedding(vault: Vault) -> None:
    vault.index()
    src = vault.root / "sub" / "Gamma Ray.md"
    dst = vault.root / "physics" / "Gamma Rays Renamed.md"
    dst.parent.mkdir()
    src.rename(dst)
    summary = vault.index()
    assert summary.moved == 1 and summary.chunks_embedded == 0
    assert summary.added == summary.removed == 0
    hits = vault.search("photons", mode="keyword")
    assert [h.path for h in hits] == ["physics/Gamma Rays Renamed.md"]
    g = load_graph(GraphPart.location(vault.layout.live))
    assert "sub/Gamma Ray.md" not in g and "physics/Gamma Rays Renamed.md" in g
    assert vault.manager().verify().ok


def test_broken_files_are_recorded_not_fatal(write_vault: WriteVault, embedder: object) -> None:
    root = write_vault(
        {
            "good.md": "# Good\n\nFine text.\n",
            "bad yaml.md": "---\ntitle: [unclosed\n---\n# Still Indexed\n\nBody survives.\n",
            "binary.md": b"\x00\x01\x02binary",
            "padded.md": b"# Padded\n\nText then NUL padding from a sync tool.\n" + b"\x00" * 500,
            "latin1.md": "# Caf\xe9\n\nna\xefve text\n".encode("latin-1"),
            "huge.md": "x" * 3000,
        }
    )
    (root / ".vaultsearch").mkdir()
    (root / ".vaultsearch" / "config.toml").write_text("[vault]\nmax_file_size = 2000\n")
    v = Vault.open(root)
    summary = v.index()
    assert set(summary.failed) == {"binary.md", "huge.md"}
    assert "binary" in summary.failed["binary.md"] and "max_file_size" in summary.failed["huge.md"]
    assert v.status()["notes"] == 4
    assert v.search("padding sync tool", mode="keyword")[0].path == "padded.md"
    assert v.search("Body survives", mode="keyword")[0].path == "bad yaml.md"
    assert v.search("naive", mode="keyword")[0].path == "latin1.md"
    assert set(v.status()["failed"]) == {"binary.md", "huge.md"}
    assert v.index().failed == {}  # unchanged failures are not retried


def test_damaged_derived_indexes_are_rebuilt_without_the_model(vault: Vault) -> None:
    vault.index()
    chunks = vault.status()["chunks"]
    VectorPart.location(vault.layout.live).unlink()
    GraphPart.location(vault.layout.live).unlink()
    summary = vault.index()
    assert summary.chunks_embedded == 0
    assert any("vectors" in r for r in summary.repaired)
    assert _vector_count(vault) == chunks
    assert vault.manager().verify().ok


def test_manifest_is_deterministic_and_check_reports(vault: Vault) -> None:
    vault.index()
    manifest = vault.layout.manifest.read_text()
    data = json.loads(manifest)
    assert data["embedding"] == {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "dimension": 384,
        "fingerprint": {
            "weights": vault.embedder.fingerprint.weights,
            "runtime": "onnxruntime",
            "precision": "int8-dynamic-ffn-fp32",
        },
    }
    assert data["chunking"] == {"size": 1000, "overlap": 100, "max_chunks_per_note": 2000}
    assert "generation" not in manifest and "last_indexed" not in manifest
    assert vault.check().status == "current"
    vault.index(full=True)
    assert vault.layout.manifest.read_text() == manifest

    (vault.root / "New.md").write_text("# New\n")
    check = vault.check()
    assert check.status == "update" and check.reasons == ["1 file new"]


def test_full_rebuild_reuses_embedding_cache(vault: Vault) -> None:
    first = vault.index()
    full = vault.index(full=True)
    assert full.chunks_embedded == 0 and full.chunks_written == first.chunks_written
    assert vault.manager().verify().ok


def test_ignored_files_are_not_indexed(write_vault: WriteVault, embedder: object) -> None:
    root = write_vault(
        {
            "keep.md": "# Keep\n",
            ".obsidian/workspace.md": "# no\n",
            ".trash/old.md": "# no\n",
            "node_modules/x/readme.md": "# no\n",
            "lib/__pycache__/mod.py": "x = 1\n",
            "env/lib/python3.11/site-packages/pkg/mod.py": "x = 1\n",
            ".venv/lib/mod.py": "x = 1\n",
            "tools/build.py": "def build():\n    pass\n",
            "drafts/secret.md": "# no\n",
            "notes.md.swp": "no",
            "a.tmp": "no",
            "plain.txt": "plain text note",
            ".gitignore": "drafts/\n",
        }
    )
    v = Vault.open(root)
    assert set(v.manager().scan()) == {"keep.md", "plain.txt", "tools/build.py"}


def test_index_dir_inside_vault_is_not_scanned(write_vault: WriteVault, embedder: object) -> None:
    root = write_vault({"a.md": "# A\n", "idx/fake.md": "# fake\n"})
    v = Vault.open(root, index_dir=root / "idx")
    assert set(v.manager().scan()) == {"a.md"}


def test_vault_missing_is_a_clear_error(tmp_path: Path) -> None:
    from vaultsearch import VaultNotFoundError

    with pytest.raises(VaultNotFoundError, match="does not exist"):
        Vault.open(tmp_path / "nope")


def test_dendron_label_first_links_become_edges(write_vault: WriteVault, embedder: object) -> None:
    root = write_vault(
        {
            "dendron.topic.md": "# Topic\n\nSee [[Publishing|dendron.topic.publish]] and [[Other|dendron.topic.other]].\n",
            "dendron.topic.publish.md": "# Publish\n\nHow to publish.\n",
            "dendron.topic.other.md": "# Other\n\nSomething else.\n",
        }
    )
    v = Vault.open(root)
    v.index()
    g = load_graph(GraphPart.location(v.layout.live))
    assert set(g.successors("dendron.topic.md")) == {
        "dendron.topic.publish.md",
        "dendron.topic.other.md",
    }
    assert v.status()["broken_links"] == 0


class _Recorder:
    """Keeps every progress event, to see the bar move while chunks are embedded."""

    def __init__(self) -> None:
        self.total = 0
        self.events: list[tuple[float, int]] = []

    def start(self, files: int) -> None:
        self.total = files

    def advance(self, files: float = 0, chunks: int = 0) -> None:
        self.events.append((files, chunks))

    def finish(self) -> None:
        pass


def test_progress_moves_per_embedded_chunk(write_vault: WriteVault, embedder: object) -> None:
    long = "\n\n".join(f"## Part {i}\n\n" + "Words about rivers and owls. " * 30 for i in range(12))
    root = write_vault({f"n{i}.md": f"# Note {i}\n\n{long}" for i in range(4)})
    recorder = _Recorder()
    with Vault.open(root) as vault:
        summary = vault.index(progress=recorder)
    per_call = [e for e in recorder.events if e[1] > 0]
    batch = vault.config.embedding.batch_size
    texts = summary.chunks_embedded + summary.sentences_embedded  # what the model ran on
    assert len(per_call) == -(-texts // batch) > 1
    assert all(0 < files < recorder.total for files, _ in per_call)
    assert sum(c for _, c in recorder.events) == texts
    assert sum(f for f, _ in recorder.events) == pytest.approx(recorder.total)


def test_a_file_gone_between_scan_and_read_is_removed_not_failed(tmp_path: Path) -> None:
    """An editor's save-by-rename or a sync tool moves files while a run reads them:
    the old path is gone (its note deleted), not recorded as an unreadable file."""
    from vaultsearch.fault import FailureRow
    from vaultsearch.indexing.changes import plan_changes
    from vaultsearch.indexing.scan import IgnoreRules, scan_vault
    from vaultsearch.parsers import ParserRegistry

    (tmp_path / "kept.md").write_text("# Kept\n", encoding="utf-8")
    (tmp_path / "moving.md").write_text("# Moving\n", encoding="utf-8")
    (tmp_path / "broken.md").write_text("# Broken\n", encoding="utf-8")
    scanned = scan_vault(tmp_path, IgnoreRules(tmp_path), ParserRegistry())
    (tmp_path / "moving.md").rename(tmp_path / "moved.md")
    (tmp_path / "broken.md").unlink()
    (tmp_path / "broken.md").mkdir()  # there, but cannot be read as a file

    known = {"moving.md": (7, "old-hash", 9, 1), "kept.md": (8, "older-hash", 7, 1)}
    failures = {"moving.md": FailureRow("cannot read: earlier", 1, 1)}
    plan = plan_changes(scanned, known, failures, max_size=1 << 20)
    assert set(plan.failed) == {"broken.md"}
    assert [ft.info.path for ft in plan.changed] == ["kept.md"]
    assert plan.deleted == [(7, "moving.md")] and plan.gone_failures == ["moving.md"]
