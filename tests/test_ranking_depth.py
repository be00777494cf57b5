"""The first hits of a search are the same whatever ``top_k`` asks for: on the project's
own docs (always) and on the judged queries of a shared vault (when it is here)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from vaultsearch import Vault
from vaultsearch.embedding import Embedder

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from judged_set import load_judged  # noqa: E402

PAGES = (10, 20, 50, 100)
SHARED_VAULTS = ROOT.parent / "shared" / "data" / "vaults"
CACHED_CATALOG = ROOT / "bench" / ".cache" / "judged-{}" / "catalog.sqlite"
MODEL_BUDGET = 64
"""Texts the judged-vault case may send to the model: a catalog that bench/_report.py
kept (``keep_catalog``) holds the vector of every chunk and sentence, so a build from it
embeds none; one that lacks them would embed the whole vault again (dendron-site's 21,486
vectors of 6,487 chunks and their sentences: about 7 minutes on a loaded 2-core box), every run."""

DOCS_QUERIES = (
    "how do I search my notes from an AI agent",
    "what happens when the index is damaged",
    "reciprocal rank fusion weights",
    "exclude a folder from indexing",
    "which embedding model is bundled",
    "hybrid",
    "top_k",
    "confidence of the first hit",
)


def _pages(vault: Vault, query: str) -> dict[int, list[tuple[str, float]]]:
    return {k: [(h.path, h.score) for h in vault.search(query, top_k=k)] for k in PAGES}


def _same_prefixes(pages: dict[int, list[tuple[str, float]]]) -> list[str]:
    """Every pair of pages whose common length differs, described."""
    out = []
    for small in PAGES:
        for big in PAGES:
            if small < big:
                n = min(len(pages[small]), len(pages[big]))
                if pages[small][:n] != pages[big][:n]:
                    out.append(f"top_k={small} vs {big}")
                if len(pages[small]) < small and len(pages[big]) > len(pages[small]):
                    out.append(f"top_k={small} returned {len(pages[small])}, {big} more")
    return out


@pytest.fixture(scope="module")
def docs_vault(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> Vault:
    root = tmp_path_factory.mktemp("docs") / "docs"
    # benchmarks.md is a third of the docs' text and only tables: left out, the index
    # still holds hundreds of chunks and costs a third less to embed
    shutil.copytree(ROOT / "docs", root, ignore=shutil.ignore_patterns("benchmarks.md"))
    vault = Vault.open(root, index_dir=root.parent / "index")
    vault.index()
    return vault


@pytest.mark.parametrize("query", DOCS_QUERIES)
def test_docs_first_hits_do_not_depend_on_top_k(docs_vault: Vault, query: str) -> None:
    pages = _pages(docs_vault, query)
    assert len(pages[10]) == 10
    assert _same_prefixes(pages) == []


class StaleCatalog(Exception):
    """The cached catalog left the model more to embed than ``MODEL_BUDGET``."""


def _model_budget(monkeypatch: pytest.MonkeyPatch, budget: int) -> None:
    """Every model call of this test counted; past ``budget`` texts it fails, which
    stops the index run at its next model call."""
    asked = 0
    real = Embedder.embed_texts

    def counted(self: Embedder, texts: list[str]):  # type: ignore[no-untyped-def]
        nonlocal asked
        asked += len(texts)
        if asked > budget:
            raise StaleCatalog(f"{asked} texts sent to the model (budget {budget})")
        return real(self, texts)

    monkeypatch.setattr(Embedder, "embed_texts", counted)


@pytest.mark.parametrize("name", ["dendron-site", "vaultofknowledge"])
def test_judged_queries_first_hits_do_not_depend_on_top_k(
    name: str, tmp_path: Path, embedder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Needs the shared vault and the catalog the judged-vault benches cache for it, with
    its vectors (``MODEL_BUDGET``). A cached catalog without them (kept by an older
    bench) is skipped with how to refresh it, not embedded again."""
    source, catalog = SHARED_VAULTS / name, Path(str(CACHED_CATALOG).format(name))
    refresh = f"run `python bench/typo_queries.py {name}` once to refresh {catalog}"
    if not source.is_dir() or not catalog.is_file():
        pytest.skip(f"{source} or {catalog} is not here ({refresh})")
    shutil.copytree(source, tmp_path / "vault")
    (tmp_path / "index").mkdir()
    shutil.copy2(catalog, tmp_path / "index" / "catalog.sqlite")
    _model_budget(monkeypatch, MODEL_BUDGET)
    vault = Vault.open(tmp_path / "vault", index_dir=tmp_path / "index")
    try:
        try:
            vault.index()
        except StaleCatalog as exc:
            pytest.skip(f"the cached catalog lacks this vault's vectors: {exc}; {refresh}")
        differ = {}
        for q in load_judged(name):
            if found := _same_prefixes(_pages(vault, q.query)):
                differ[q.id] = found
        assert differ == {}
    finally:
        vault.close()
