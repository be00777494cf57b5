"""The Milvus store against a real Milvus (Milvus Lite, in-process on a .db file): index,
edit, rename, delete, rebuild, push without embedding, a reader with only the URI, a
killed build, a fingerprint mismatch, filters, and the engine's errors as sentences."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pymilvus", reason="pip install 'vaultsearch[milvus]'")
pytest.importorskip("milvus_lite", reason="pip install 'vaultsearch[milvus]'")

from tests.model_server import model_server
from tests.test_ranking_depth import DOCS_QUERIES, PAGES, ROOT, _same_prefixes
from vaultsearch.app.milvus_push import push
from vaultsearch.app.vault import Vault
from vaultsearch.config import load_config
from vaultsearch.embedding import Embedder
from vaultsearch.errors import (
    IndexIncompatibleError,
    IndexMissingError,
    QueryError,
    VaultsearchError,
)
from vaultsearch.search.filters import Scope, SearchFilters
from vaultsearch.search.milvus_reader import MilvusReader
from vaultsearch.search.orchestrator import MODES
from vaultsearch.store.embedcache import CACHE_ENV
from vaultsearch.store.milvus.client import MilvusStoreError, connect
from vaultsearch.store.milvus.target import MilvusTarget

SRC = str(Path(__file__).resolve().parents[1] / "src")
PREFIX = "team"

NOTES = {
    "Garden/Tomatoes.md": """
        ---
        tags: [garden/vegetables]
        status: Growing
        date: 2024-05-01
        ---
        # Tomatoes

        Tomatoes need full sun and deep watering. Aphids are the usual pests; see
        [[Companion planting]].
        """,
    "Garden/Companion planting.md": """
        # Companion planting

        Basil planted beside tomatoes keeps whiteflies away.
        """,
    "Work/Quarterly planning.md": """
        ---
        tags: [work]
        status: draft
        date: 2023-01-10
        ---
        # Quarterly planning

        The roadmap review happens in the first week of each quarter.
        """,
    "Inbox.md": "# Inbox\n\nRotate the API keys before the audit.\n",
}


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


@pytest.fixture
def vault_root(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    for rel, text in NOTES.items():
        _write(root, rel, text)
    return root


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store" / "team.db"


def _flags(store: Path) -> tuple[str, ...]:
    return ("store.backend=milvus", f"store.uri={store}", f"store.collection={PREFIX}")


def _reader(store: Path, **embedding: str) -> MilvusReader:
    flags = tuple(f"embedding.{k}={v}" for k, v in embedding.items())
    config = load_config(None, None, flags)
    return MilvusReader(
        MilvusTarget.build(str(store), prefix=PREFIX), config, Embedder.shared(config.embedding)
    )


def _paths(reader: MilvusReader, query: str, mode: str = "hybrid", **filters: object) -> list[str]:
    built = SearchFilters.build(**filters) if filters else None  # type: ignore[arg-type]
    return [h.path for h in reader.search(query, mode=mode, filters=built)]


def _collections(store: Path) -> list[str]:
    client = connect(MilvusTarget.build(str(store), prefix=PREFIX))
    try:
        return sorted(client.list_collections())
    finally:
        client.close()


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC, "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "vaultsearch.cli", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def test_index_edit_rename_delete_follow_in_milvus(
    vault_root: Path, store: Path, embedder: Embedder
) -> None:
    with Vault.open(vault_root, flags=_flags(store)) as vault:
        vault.index()
        first = vault.last_push
        assert first is not None and first.rebuilt and first.embedded == 0
        assert first.chunks == vault.status()["chunks"] and first.notes == 4

        reader = _reader(store)
        try:
            for mode in ("keyword", "semantic", "hybrid"):
                assert _paths(reader, "aphids pests on tomatoes", mode)[0] == "Garden/Tomatoes.md"
            hit = reader.search("rotate API keys", mode="keyword")[0]
            assert (hit.path, hit.start_line, hit.heading_path) == ("Inbox.md", 1, "Inbox")
            assert "Rotate the API keys" in hit.snippet and hit.highlights

            _write(vault_root, "Inbox.md", "# Inbox\n\nRenew the parking permit in March.\n")
            vault.index()
            edit = vault.last_push
            assert edit is not None and not edit.rebuilt and edit.generation == first.generation
            assert edit.upserted_chunks == 1 and edit.deleted_chunks == 1 and edit.embedded == 0
            assert _paths(reader, "parking permit", "keyword") == ["Inbox.md"]
            assert "Inbox.md" not in _paths(reader, "rotate API keys", "keyword")

            (vault_root / "Work").rename(vault_root / "Office")
            vault.index()
            moved = vault.last_push
            assert moved is not None and moved.upserted_chunks == 1 and moved.deleted_chunks == 0
            assert _paths(reader, "roadmap review", "keyword") == ["Office/Quarterly planning.md"]
            assert _paths(reader, "roadmap", "keyword", folders=["/Work"]) == []

            (vault_root / "Garden" / "Companion planting.md").unlink()
            vault.index()
            gone = vault.last_push
            assert gone is not None and gone.deleted_chunks == 1 and gone.deleted_notes == 1
            assert "Garden/Companion planting.md" not in _paths(
                reader, "basil whiteflies", "hybrid"
            )
            assert reader.status()["chunks"] == vault.status()["chunks"] == 3
        finally:
            reader.close()


def test_a_reader_during_a_push_sees_each_note_as_one_version(
    vault_root: Path, store: Path, embedder: Embedder
) -> None:
    """Between a push's first upsert and its end, an edited note is its old version
    whole (its new chunks are not listed yet), and after it its new version whole (its
    old chunks, deleted by the next push, are listed by no note): never both texts."""
    with Vault.open(vault_root, flags=_flags(store)) as vault:
        vault.index()
    _write(vault_root, "Inbox.md", "# Inbox\n\nRenew the parking permit in March.\n")
    reader = _reader(store)
    seen: list[tuple[list[str], list[str], list[str]]] = []

    def look() -> None:
        texts = [c["text"] for c in reader.get("Inbox.md")["chunks"]]
        old = _paths(reader, "rotate API keys", "keyword")
        new = _paths(reader, "parking permit", "keyword")
        seen.append((texts, old, new))

    try:
        with Vault.open(vault_root) as vault:  # no store configured: index without a push
            vault.index()
            target = MilvusTarget.build(str(store), prefix=PREFIX)
            pushed = push(vault, target, mid_sync=look)
            assert pushed.upserted_chunks == 1 and pushed.deleted_chunks == 1
            look()
            (during_texts, during_old, during_new), (after_texts, after_old, after_new) = seen
            assert len(during_texts) == 1 and "Rotate the API keys" in during_texts[0]
            assert "Inbox.md" in during_old and during_new == []
            assert len(after_texts) == 1 and "parking permit" in after_texts[0]
            assert "Inbox.md" not in after_old and after_new == ["Inbox.md"]

            again = push(vault, target)
            assert again.purged_chunks == 1 and again.upserted_chunks == 0
            assert again.deleted_chunks == 0
        client = connect(target)
        try:
            name = f"{reader.status()['generation']}_chunks"
            rows = client.query(name, filter="", output_fields=["count(*)"])
            assert rows[0]["count(*)"] == reader.status()["chunks"] == 4
        finally:
            client.close()
    finally:
        reader.close()


def test_rebuild_switches_the_alias_and_drops_superseded_generations(
    vault_root: Path, store: Path, embedder: Embedder
) -> None:
    with Vault.open(vault_root) as vault:
        vault.index()
        generations = [vault.push(str(store), full=True).generation for _ in range(3)]
    assert generations == ["vaultsearch_g000001", "vaultsearch_g000002", "vaultsearch_g000003"]
    names = _collections(store)
    assert not any(n.startswith("vaultsearch_g000001") for n in names)
    assert {n for n in names if n.startswith("vaultsearch_g000003")} == {
        f"vaultsearch_g000003_{p}" for p in ("chunks", "sentences", "notes", "manifest")
    }
    reader = MilvusReader.open(str(store))
    try:
        assert reader.status()["generation"] == "vaultsearch_g000003"
        assert _paths(reader, "aphids pests")[0] == "Garden/Tomatoes.md"
    finally:
        reader.close()


def test_push_embeds_nothing_and_a_reader_needs_only_the_uri(
    vault_root: Path, store: Path, tmp_path: Path, embedder: Embedder
) -> None:
    with Vault.open(vault_root) as vault:
        vault.index()
        chunks = vault.status()["chunks"]
    # the configured model is unreachable: a push that embedded anything would fail
    done = _cli(
        "push", str(vault_root), "--to", str(store), "--collection", PREFIX, "--json",
        "--set", "embedding.backend=openai", "--set", "embedding.url=http://127.0.0.1:9/v1",
        "--set", "embedding.model=absent-model",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["embedded"] == 0 and summary["chunks"] == chunks and summary["rebuilt"]

    shutil.rmtree(vault_root)  # no vault files, no local index
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    found = _cli(
        "search",
        "aphids on tomatoes",
        "--store-uri",
        str(store),
        "--collection",
        PREFIX,
        "--json",
        cwd=elsewhere,
    )
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert hits[0]["path"] == "Garden/Tomatoes.md" and hits[0]["start_line"] >= 1
    assert "Aphids" in hits[0]["snippet"]
    note = _cli("get", "Inbox.md", "--store-uri", str(store), "--collection", PREFIX, cwd=elsewhere)
    assert note.returncode == 0, note.stderr
    assert "Rotate the API keys" in json.loads(note.stdout)[0]["chunks"][0]["text"]
    status = _cli("status", "--store-uri", str(store), "--collection", PREFIX, cwd=elsewhere)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["chunks"] == chunks


KILLED_PUSH = """
import os, signal, sys
from vaultsearch import Vault
from vaultsearch.app.milvus_push import push
from vaultsearch.store.milvus.target import MilvusTarget

vault = Vault.open(sys.argv[1])
push(vault, MilvusTarget.build(sys.argv[2], prefix=sys.argv[3]), full=True,
     before_switch=lambda: os.kill(os.getpid(), signal.SIGKILL))
"""


def test_a_killed_build_leaves_the_alias_on_the_previous_generation(
    vault_root: Path, store: Path, tmp_path: Path, embedder: Embedder
) -> None:
    with Vault.open(vault_root) as vault:
        vault.index()
    # Milvus Lite serves one process per file and keeps serving the process that opened
    # it, so every writer here is a process of its own
    pushed = _cli("push", str(vault_root), "--to", str(store), "--json", cwd=tmp_path)
    assert pushed.returncode == 0, pushed.stderr
    before = json.loads(pushed.stdout)["generation"]
    env = {**os.environ, "PYTHONPATH": SRC, "HF_HUB_OFFLINE": "1"}
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_PUSH, str(vault_root), str(store), "vaultsearch"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert any(n.startswith("vaultsearch_g000002") for n in _collections(store))  # half-built

    config = load_config(None, None)
    reader = MilvusReader(MilvusTarget.build(str(store)), config, Embedder.shared(config.embedding))
    try:
        assert reader.status()["generation"] == before == "vaultsearch_g000001"
        assert _paths(reader, "roadmap review", "keyword") == ["Work/Quarterly planning.md"]
        with Vault.open(vault_root) as vault:
            after = vault.push(str(store), full=True)
    finally:
        reader.close()
    assert after.generation == "vaultsearch_g000003"
    assert "vaultsearch_g000002_chunks" in after.dropped  # the killed build's leftovers
    assert not any(n.startswith("vaultsearch_g000002") for n in _collections(store))
    busy = _cli("push", str(vault_root), "--to", str(store), cwd=tmp_path)
    assert busy.returncode == 2 and "Traceback" not in busy.stderr
    assert "it is open in another process" in busy.stderr


def test_a_client_with_another_model_is_refused_with_the_model_the_index_needs(
    vault_root: Path, store: Path, embedder: Embedder
) -> None:
    with Vault.open(vault_root, flags=_flags(store)) as vault:
        vault.index()
    with model_server(embedder=embedder) as server:
        reader = _reader(store, backend="openai", url=server.url, model="served-model")
        try:
            with pytest.raises(IndexIncompatibleError) as caught:
                reader.search("tomatoes", mode="hybrid")
            assert "sentence-transformers/all-MiniLM-L6-v2" in caught.value.message
            assert "embedding.model = 'sentence-transformers/all-MiniLM-L6-v2'" in str(
                caught.value.fix
            )
            assert _paths(reader, "tomatoes", "keyword")[0] == "Garden/Tomatoes.md"
        finally:
            reader.close()


def test_filters_select_the_same_notes_as_the_local_store(
    vault_root: Path, store: Path, embedder: Embedder
) -> None:
    cases = [
        {"tags": ["garden"]},
        {"tags": ["garden/vegetables"]},
        {"tags": ["gard"]},
        {"folders": ["Garden"]},
        {"folders": ["/Work"]},
        {"where": {"status": "DRAFT"}},
        {"where": {"status": ["growing", "draft"]}},
        {"after": "2024-01-01"},
        {"before": "2024-01-01"},
        {"scope": Scope.build(prefixes=["Garden/"])},
        {"scope": Scope.build(files=["Inbox.md"])},
        {"scope": Scope.build(kinds=["note"], sources=["vault"])},
    ]
    with Vault.open(vault_root, flags=_flags(store)) as vault:
        vault.index()
        reader = _reader(store)
        try:
            for case in cases:
                local = {
                    h.path
                    for h in vault.orchestrator.search(
                        "the", 10, "semantic", SearchFilters.build(**case)
                    )
                }  # type: ignore[arg-type]
                remote = set(_paths(reader, "the", "semantic", **case))
                assert remote == local, case
            with pytest.raises(QueryError, match="glob"):
                reader.search("tomatoes", filters=SearchFilters.build(folders=["Gar*"]))
            assert _paths(reader, "tomatoes -aphids", "hybrid")[:1] != ["Garden/Tomatoes.md"]
        finally:
            reader.close()


def test_first_hits_do_not_depend_on_top_k_and_match_the_local_depth(
    tmp_path: Path, store: Path, embedder: Embedder
) -> None:
    """Each branch is as deep as the local store's (``search.candidates``, deepened only
    for a page that ranking cannot fill), not a depth that grows with ``top_k``: on the
    project's docs (hundreds of chunks, more than one level deep) a longer page begins
    with a shorter one, in every mode, as it does locally (test_ranking_depth)."""
    root = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", root, ignore=shutil.ignore_patterns("benchmarks.md"))
    with Vault.open(root, index_dir=tmp_path / "index") as vault:
        vault.index()
        assert vault.status()["chunks"] > vault.config.search.candidates
        vault.push(str(store), full=True)
    reader = MilvusReader(MilvusTarget.build(str(store)), load_config(None), embedder)
    try:
        differ = {}
        for mode in MODES:
            for q in DOCS_QUERIES[:4]:
                pages = {
                    k: [(h.path, h.score) for h in reader.search(q, top_k=k, mode=mode)]
                    for k in PAGES
                }
                assert len(pages[10]) == 10, (mode, q)
                if found := _same_prefixes(pages):
                    differ[(mode, q)] = found
        assert differ == {}
    finally:
        reader.close()


def test_engine_errors_are_one_sentence(store: Path, tmp_path: Path, embedder: Embedder) -> None:
    unreachable = _cli("search", "x", "--store-uri", "http://127.0.0.1:9", cwd=tmp_path)
    assert unreachable.returncode == 2 and "Traceback" not in unreachable.stderr
    assert unreachable.stderr.startswith("error: Milvus at http://127.0.0.1:9 cannot be reached")

    with pytest.raises(IndexMissingError, match="There is no Milvus Lite store"):
        _reader(store).search("x")
    with pytest.raises(VaultsearchError, match="not a valid collection name"):
        MilvusTarget.build(str(store), prefix="9-bad")
    with pytest.raises(MilvusStoreError, match="cannot be reached"):
        connect(MilvusTarget.build("http://127.0.0.1:9"))


def test_a_store_of_another_schema_version_is_refused(
    vault_root: Path, store: Path, embedder: Embedder
) -> None:
    with Vault.open(vault_root, flags=_flags(store)) as vault:
        vault.index()
    client = connect(MilvusTarget.build(str(store), prefix=PREFIX))
    try:
        rows = client.query(PREFIX, filter="id == 1", output_fields=["manifest"])
        manifest = {**rows[0]["manifest"], "schema_version": 99}
        client.upsert(PREFIX, [{"id": 1, "manifest": manifest, "pad": [1.0, 0.0]}])
    finally:
        client.close()
    with pytest.raises(IndexIncompatibleError, match="has schema version 99") as caught:
        _reader(store).search("tomatoes", mode="keyword")
    assert "--full" in str(caught.value.fix)


def test_the_token_is_never_printed(tmp_path: Path) -> None:
    shown = _cli(
        "config", str(tmp_path), "--json", "--set", "store.token=s3cret-token", cwd=tmp_path
    )
    assert shown.returncode == 0, shown.stderr
    rows = {r["key"]: r["value"] for r in json.loads(shown.stdout)}
    assert rows["store.token"] == "(set)" and "s3cret-token" not in shown.stdout


def test_names_outside_ascii_and_with_quotes_reach_milvus_expressions(
    tmp_path: Path, store: Path, embedder: Embedder
) -> None:
    root = tmp_path / "names"
    _write(
        root,
        "Café ☕/Crème brûlée.md",
        '# Crème brûlée\n\nCaramelised sugar over custard; see [[Say "hi" 日本]].\n',
    )
    _write(
        root,
        'Café ☕/Say "hi" 日本.md',
        "# Greetings\n\nA back\\slash and a greeting in Japanese.\n",
    )
    with Vault.open(root, flags=_flags(store)) as vault:
        vault.index()
    reader = _reader(store)
    try:
        assert _paths(reader, "caramelised custard", "hybrid")[0] == "Café ☕/Crème brûlée.md"
        quoted = 'Café ☕/Say "hi" 日本.md'
        assert _paths(reader, "greeting japanese", "keyword", folders=["Café ☕"]) == [quoted]
        assert (
            _paths(reader, "greeting", "semantic", scope=Scope.build(files=[quoted]))[0] == quoted
        )
        assert "back\\slash" in reader.get(quoted)["chunks"][0]["text"]
        assert _paths(reader, "caramelised -greeting", "hybrid")[:1] == ["Café ☕/Crème brûlée.md"]
    finally:
        reader.close()


def test_pull_indexes_a_checkout_with_the_stores_vectors_and_embeds_nothing(
    vault_root: Path,
    store: Path,
    tmp_path: Path,
    embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    queries = ("aphids on tomatoes", "when is the roadmap review", "rotate keys")
    with Vault.open(vault_root) as vault:
        vault.index()
        before = {(q, m): [h.path for h in vault.search(q, mode=m)] for q in queries for m in MODES}
    pushed = _cli("push", str(vault_root), "--to", str(store), "--collection", PREFIX, cwd=tmp_path)
    assert pushed.returncode == 0, pushed.stderr
    checkout = tmp_path / "checkout"  # a member's copy of the files, with no index
    shutil.copytree(vault_root, checkout, ignore=shutil.ignore_patterns(".vaultsearch"))
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "member-cache"))  # nothing embedded yet
    done = _cli(
        "pull", str(checkout), "--from", str(store), "--collection", PREFIX, "--json", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["index"]["added"] == len(NOTES)
    assert summary["index"]["chunks_embedded"] == 0 and summary["index"]["sentences_embedded"] == 0
    assert summary["cached"] == summary["vectors"] > summary["index"]["chunks_written"] > 0

    reader = _reader(store)
    with Vault.open(checkout) as pulled:
        for q in queries:
            for m in MODES:
                assert [h.path for h in pulled.search(q, mode=m)] == before[(q, m)], (q, m)
            assert [h.path for h in pulled.search(q, mode="semantic")] == _paths(
                reader, q, "semantic"
            )
    reader.close()
