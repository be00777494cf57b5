"""Models behind an OpenAI-compatible server: the ``openai`` embedding backend, the
rerank endpoint and LLM query expansion, against a real HTTP server started here
(tests/model_server.py, serving the bundled model) and its failure modes. Everything
of vaultsearch's own is real: Tantivy, FAISS, the catalog, the embedding cache."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_files
from tests.model_server import ModelServer, model_server
from vaultsearch import Vault
from vaultsearch.cli.main import main
from vaultsearch.config import Config, config_from_dict
from vaultsearch.embedding import Embedder
from vaultsearch.embedding.endpoint import EndpointError
from vaultsearch.errors import ConfigError, IndexIncompatibleError
from vaultsearch.store.layout import IndexLayout

NOTES = {
    "rivers.md": "# Rivers\n\nThe Danube flows through ten countries into the Black Sea.\n",
    "owls.md": "# Owls\n\nBarn owls hunt at night by sound; see [[rivers]].\n",
    "tax.md": "# Taxes\n\nFile the quarterly VAT return before the end of the month.\n",
    "keys.md": "# Credentials\n\nRotate the API tokens every ninety days and revoke old ones.\n",
    "garden.md": "# Garden\n\nTomatoes need sun, water and a stake to climb.\n",
}
TOPICS = (
    "apples",
    "boats",
    "comets",
    "dolphins",
    "engines",
    "forests",
    "glaciers",
    "harps",
    "islands",
)
SMALL = {f"{t}.md": f"# {t.title()}\n\nA note about {t}.\n" for t in TOPICS}
QUERIES = ("birds that hunt in the dark", "sales tax deadline", "a long river in Europe")


@pytest.fixture
def server(embedder: Embedder) -> Iterator[ModelServer]:
    with model_server(embedder=embedder) as s:
        yield s


def endpoint_config(url: str, **embedding: Any) -> Config:
    return config_from_dict(
        {"embedding": {"backend": "openai", "url": url, "model": "minilm", **embedding}}
    )


def texts_requested(server: ModelServer) -> int:
    return sum(len(b["input"]) for p, b in server.requests if p == "/v1/embeddings")


def test_the_openai_backend_gives_what_the_model_behind_it_gives(
    tmp_path: Path, server: ModelServer
) -> None:
    root = write_files(tmp_path / "vault", NOTES)
    config = endpoint_config(server.url, batch_size=3)
    with Vault.open(root, index_dir=tmp_path / "bundled") as bundled:
        bundled.index()
        with Vault.open(root, index_dir=tmp_path / "endpoint", config=config) as remote:
            remote.index()
            for query in QUERIES:
                for mode in ("semantic", "hybrid"):
                    want = bundled.search(query, mode=mode)
                    got = remote.search(query, mode=mode)
                    assert [h.path for h in got] == [h.path for h in want]
                    assert [h.score for h in got] == pytest.approx([h.score for h in want])
    manifest = json.loads((tmp_path / "endpoint" / "index.manifest.json").read_text())
    assert manifest["embedding"]["model"] == "minilm"
    assert manifest["embedding"]["dimension"] == 384
    assert manifest["embedding"]["fingerprint"]["weights"] == "dim384"
    assert manifest["embedding"]["fingerprint"]["runtime"] == "openai-api"
    sizes = [len(b["input"]) for p, b in server.requests if p == "/v1/embeddings"]
    assert max(sizes) == 3 and {b["model"] for _, b in server.requests} == {"minilm"}


def test_a_second_index_embeds_nothing_and_check_asks_the_server_nothing(
    tmp_path: Path, server: ModelServer
) -> None:
    root = write_files(tmp_path / "vault", NOTES)
    config = endpoint_config(server.url)
    with Vault.open(root, index_dir=tmp_path / "one", config=config) as vault:
        first = vault.index()
    asked = texts_requested(server)
    with Vault.open(root, index_dir=tmp_path / "two", config=config) as vault:
        second = vault.index()
        assert vault.check().status == "current"
    assert first.chunks_embedded == len(NOTES) and second.chunks_embedded == 0
    assert second.sentences_embedded == 0
    assert texts_requested(server) == asked


def test_a_model_switch_is_a_rebuild_that_index_check_reports(
    tmp_path: Path, server: ModelServer
) -> None:
    root = write_files(tmp_path / "vault", NOTES)
    index = tmp_path / "index"
    with Vault.open(root, index_dir=index, config=endpoint_config(server.url)) as vault:
        vault.index()
    requests = len(server.requests)
    toml = tmp_path / "config.toml"
    argv = ["index", str(root), "--check", "--index-dir", str(index), "--config", str(toml)]
    body = f'[embedding]\nbackend = "openai"\nurl = "{server.url}"\nmodel = "MODEL"\n'
    toml.write_text(body.replace("MODEL", "minilm"))
    assert main(argv) == 0
    toml.write_text(body.replace("MODEL", "nomic-embed-text"))
    assert main(argv) == 1
    with Vault.open(root, index_dir=index, config=toml) as vault:
        check = vault.check()
    assert check.status == "rebuild"
    assert any(c.startswith("embedding.model:") for c in check.manifest_changes)
    assert len(server.requests) == requests  # --check never calls the model


def test_another_dimension_behind_the_same_name_rebuilds(
    tmp_path: Path, server: ModelServer, embedder: Embedder
) -> None:
    root = write_files(tmp_path / "vault", NOTES)
    index = tmp_path / "index"
    with Vault.open(root, index_dir=index, config=endpoint_config(server.url)) as vault:
        vault.index()
    with (
        model_server(embedder=embedder, failure="wrong-dimension") as other,
        Vault.open(root, index_dir=index, config=endpoint_config(other.url)) as vault,
    ):
        with pytest.raises(IndexIncompatibleError, match="192-dimensional query vectors") as err:
            vault.search("owls at night")
        assert err.value.fix and "vaultsearch index" in err.value.fix
        assert vault.search("owls", mode="keyword")[0].path == "owls.md"
        summary = vault.index()
        assert "fingerprint.weights" in " ".join(summary.rebuild_reasons)
        assert vault.search("owls at night", mode="semantic")[0].path == "owls.md"
    manifest = json.loads((index / "index.manifest.json").read_text())
    assert manifest["embedding"]["dimension"] == 192


FAILURES = {
    "hang": ({"failure": "hang"}, {"timeout": 0.3, "retries": 0}, "did not answer within 0.3 s"),
    "401": (
        {"api_key": "right"},
        {"api_key_env": "VS_TEST_KEY"},
        "refused the request with HTTP 401",
    ),
    "429": ({"failure": "429"}, {"retries": 2}, "still answered HTTP 429 after 3 tries"),
    "503": (
        {"failure": "503", "fail_after": 2},
        {"retries": 1},
        "still answered HTTP 503 after 2 tries",
    ),
    "wrong-dimension": (
        {"failure": "wrong-dimension", "fail_after": 2},
        {},
        "answered 192-dimensional vectors after 384-dimensional ones",
    ),
    "malformed": ({"failure": "malformed", "fail_after": 1}, {}, "did not answer with JSON"),
}


@pytest.mark.parametrize("name", FAILURES)
def test_each_endpoint_failure_is_one_sentence_and_never_a_half_written_index(
    name: str, tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VS_TEST_KEY", "wrong")
    server_options, embedding, message = FAILURES[name]
    root = write_files(tmp_path / "vault", SMALL)
    index = tmp_path / "index"
    with model_server(embedder=embedder, **server_options) as server:
        config = endpoint_config(server.url, batch_size=2, **embedding)
        with Vault.open(root, index_dir=index, config=config) as vault:
            with pytest.raises(EndpointError) as err:
                vault.index()
            assert message in err.value.message and err.value.fix
            assert err.value.message.count(". ") == 0 and err.value.message.endswith(".")
            assert IndexLayout(index).current() is None
            assert vault.check().status == "rebuild"
        server.failure, server.api_key = None, ""
        # the server well again: a timeout short enough to find a hang must not also
        # time out a real model answering on a loaded machine
        recovered = endpoint_config(server.url, batch_size=2, **{**embedding, "timeout": 60})
        with Vault.open(root, index_dir=index, config=recovered) as vault:
            assert vault.index().added == len(SMALL)
            assert vault.search("glaciers", mode="semantic")[0].path == "glaciers.md"


def test_an_unreachable_endpoint_and_a_missing_key_are_one_sentence(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_files(tmp_path / "vault", NOTES)
    with model_server(embedder=embedder) as gone:
        url = gone.url
    config = endpoint_config(url, retries=1)
    with Vault.open(root, index_dir=tmp_path / "index", config=config) as vault:
        with pytest.raises(EndpointError, match="is unreachable") as err:
            vault.index()
        assert err.value.fix and "embedding.url" in err.value.fix
    monkeypatch.delenv("VS_UNSET_KEY", raising=False)
    config = endpoint_config(url, api_key_env="VS_UNSET_KEY")
    with (
        Vault.open(root, index_dir=tmp_path / "index", config=config) as vault,
        pytest.raises(EndpointError, match=r"needs an API key in \$VS_UNSET_KEY"),
    ):
        vault.index()


def test_a_429_is_retried_after_the_time_the_server_asks(
    tmp_path: Path, embedder: Embedder
) -> None:
    root = write_files(tmp_path / "vault", NOTES)
    with model_server(embedder=embedder, failure="429-once", fail_after=1) as server:
        config = endpoint_config(server.url, retries=1)
        with Vault.open(root, index_dir=tmp_path / "index", config=config) as vault:
            assert vault.index().added == len(NOTES)
        assert len(server.requests) == server.answered + 1  # the one refused, then retried


def test_an_interrupted_build_resumes_where_it_stopped(tmp_path: Path, embedder: Embedder) -> None:
    root = write_files(
        tmp_path / "vault",
        {f"n{i}.md": f"# Note {i}\n\nThe number {i} and rivers.\n" for i in range(40)},
    )
    with model_server(embedder=embedder, failure="503", fail_after=4) as server:
        config = endpoint_config(server.url, batch_size=4, retries=0, sentences=False)
        with Vault.open(root, index_dir=tmp_path / "index", config=config) as vault:
            with pytest.raises(EndpointError):
                vault.index()
            done = server.texts_embedded - 1  # less the dimension probe
            assert 0 < done < 40
            server.failure = None
            assert vault.index().chunks_embedded == 40 - done


def test_an_interrupted_update_leaves_the_live_index_searchable(
    tmp_path: Path, embedder: Embedder
) -> None:
    root = write_files(tmp_path / "vault", NOTES)
    with model_server(embedder=embedder) as server:
        config = endpoint_config(server.url, batch_size=2, retries=0)
        with Vault.open(root, index_dir=tmp_path / "index", config=config) as vault:
            vault.index()
            live = IndexLayout(tmp_path / "index").current()
            write_files(
                root, {f"more{i}.md": f"# More {i}\n\nComets number {i}.\n" for i in range(8)}
            )
            server.failure, server.fail_after = "503", server.answered + 1
            with pytest.raises(EndpointError):
                vault.index()
            current = IndexLayout(tmp_path / "index").current()
            assert live is not None and current is not None and current.root == live.root
            server.failure = None
            assert vault.search("owls at night", mode="semantic")[0].path == "owls.md"
            assert vault.check().status == "update"
            assert vault.index().added == 8


# --- rerank -----------------------------------------------------------------------------


def rerank_config(url: str, **search: Any) -> Config:
    return config_from_dict(
        {"search": {"rerank": True, "rerank_url": url, "rerank_model": "cos", **search}}
    )


def test_the_rerank_endpoint_orders_the_top_notes_and_shows_in_explain(
    tmp_path: Path, server: ModelServer
) -> None:
    root = write_files(tmp_path / "vault", NOTES)
    query = "owls and rivers at night"
    with Vault.open(root, index_dir=tmp_path / "index") as vault:
        vault.index()
        fused = vault.search(query, explain=True)
    with Vault.open(
        root, index_dir=tmp_path / "index", config=rerank_config(server.url, rerank_top=3)
    ) as vault:
        hits = vault.search(query, explain=True)
    ((_, body),) = [(p, b) for p, b in server.requests if p == "/v1/rerank"]
    assert body["top_n"] == 3 and len(body["documents"]) == 3 and body["model"] == "cos"
    head, tail = hits[:3], hits[3:]
    assert {h.path for h in head} == {h.path for h in fused[:3]}
    assert [h.path for h in tail] == [h.path for h in fused[3:]]
    relevance = [h.explain.relevance for h in head if h.explain]
    assert relevance == sorted(relevance, reverse=True) and len(relevance) == 3
    assert all(h.explain and h.explain.reranker == "rerank endpoint cos" for h in head)
    shown_dict = head[0].to_dict()["explain"]
    assert shown_dict["reranker"] == "rerank endpoint cos" and "relevance" in shown_dict
    assert not {"reranker", "relevance", "rewrites", "notes"} & set(fused[0].to_dict()["explain"])
    assert all(h.explain and abs(h.explain.total - h.score) < 1e-9 for h in hits)
    shown = {h.path: h.explain.relevance for h in head if h.explain}
    scores = {r["index"]: r["relevance_score"] for r in server.rerank(body)["results"]}
    for i, hit in enumerate(fused[:3]):  # the documents went in fused order
        assert shown[hit.path] == pytest.approx(scores[i])


def test_the_reranker_reads_the_query_with_its_typo_corrected(
    tmp_path: Path, server: ModelServer
) -> None:
    """A misspelt word is corrected before the query is embedded (``search/typos.py``);
    the reranker must judge the same corrected query, not the slip."""
    root = write_files(tmp_path / "vault", NOTES)
    with Vault.open(root, index_dir=tmp_path / "index") as vault:
        vault.index()
    with Vault.open(root, index_dir=tmp_path / "index", config=rerank_config(server.url)) as vault:
        hits = vault.search("owls and rivres at night", explain=True)
    assert hits[0].explain and hits[0].explain.embedded == "owls and rivers at night"
    ((_, body),) = [(p, b) for p, b in server.requests if p == "/v1/rerank"]
    assert body["query"] == "owls and rivers at night"


def test_rerank_weight_zero_keeps_the_fused_order(tmp_path: Path, server: ModelServer) -> None:
    root = write_files(tmp_path / "vault", NOTES)
    query = "owls and rivers at night"
    with Vault.open(root, index_dir=tmp_path / "index") as vault:
        vault.index()
        fused = [h.path for h in vault.search(query)]
    config = rerank_config(server.url, rerank_weight=0.0)
    with Vault.open(root, index_dir=tmp_path / "index", config=config) as vault:
        assert [h.path for h in vault.search(query)] == fused


def test_a_failing_rerank_endpoint_keeps_the_fused_order_and_says_so(
    tmp_path: Path, embedder: Embedder
) -> None:
    root = write_files(tmp_path / "vault", NOTES)
    with Vault.open(root, index_dir=tmp_path / "index") as vault:
        vault.index()
        fused = [h.path for h in vault.search("owls at night")]
    with (
        model_server(embedder=embedder, failure="503") as server,
        Vault.open(root, index_dir=tmp_path / "index", config=rerank_config(server.url)) as vault,
    ):
        hits = vault.search("owls at night", explain=True)
    assert [h.path for h in hits] == fused
    assert hits[0].explain and "reranking failed" in hits[0].explain.notes[0]
    assert "HTTP 503" in hits[0].explain.notes[0]


def test_rerank_without_a_reranker_is_refused_at_config_load() -> None:
    with pytest.raises(ConfigError) as err:
        config_from_dict({"search": {"rerank": True}})
    assert "search.rerank" in err.value.message
    assert err.value.fix and "rerank_url" in err.value.fix and "docs/Models.md" in err.value.fix
    with pytest.raises(ConfigError, match=r"search\.rerank_model"):
        config_from_dict({"search": {"rerank": True, "rerank_url": "http://127.0.0.1:9/v1"}})


# --- query expansion ------------------------------------------------------------------


def expand_config(url: str) -> Config:
    return config_from_dict(
        {
            "search": {
                "expand": True,
                "expand_url": url,
                "expand_model": "chat",
                "expand_rewrites": 2,
            }
        }
    )


def test_query_expansion_searches_each_rewrite_and_the_passage(
    tmp_path: Path, server: ModelServer
) -> None:
    root = write_files(tmp_path / "vault", NOTES)
    query = "how often should secrets be changed"
    server.expansions[query] = {
        "rewrites": ["rotate API tokens", "credential rotation schedule", "third one dropped"],
        "passage": "Rotate the tokens every few months and revoke the old ones.",
    }
    with Vault.open(root, index_dir=tmp_path / "index") as plain:
        plain.index()
    with Vault.open(root, index_dir=tmp_path / "index", config=expand_config(server.url)) as vault:
        hits = vault.search(query, mode="hybrid", explain=True)
        again = vault.search(query, mode="hybrid", explain=True)
        literal = vault.search(query, mode="keyword", explain=True)
    top = hits[0]
    assert top.path == "keys.md" and top.explain
    assert top.explain.rewrites == (
        "rotate API tokens",
        "credential rotation schedule",
        "passage: Rotate the tokens every few months and revoke the old ones.",
    )
    parts = {p.branch for p in top.explain.branches}
    assert {"keyword@1", "semantic@1", "keyword@2", "semantic@p"} <= parts
    assert not any(p.branch == "keyword@p" for p in top.explain.branches)
    assert [h.path for h in again] == [h.path for h in hits]
    chats = [b for p, b in server.requests if p == "/v1/chat/completions"]
    assert len(chats) == 1 and chats[0]["model"] == "chat"  # the second search used the cache
    assert all(h.explain and not h.explain.rewrites for h in literal)


def test_query_expansion_rewrites_the_query_with_its_typo_corrected(
    tmp_path: Path, server: ModelServer
) -> None:
    """The expander is asked about the corrected query, as the embedder is: a rewrite of
    the slip would carry it into every rewritten search."""
    root = write_files(tmp_path / "vault", NOTES)
    server.expansions["when are the API tokens rotated"] = {
        "rewrites": ["credential rotation schedule"],
        "passage": "Rotate the tokens every ninety days.",
    }
    with Vault.open(root, index_dir=tmp_path / "index") as plain:
        plain.index()
    with Vault.open(root, index_dir=tmp_path / "index", config=expand_config(server.url)) as vault:
        hits = vault.search("when are the API tokens rotatde", mode="hybrid", explain=True)
    assert hits[0].explain and hits[0].explain.embedded == "when are the API tokens rotated"
    assert hits[0].explain.rewrites == (
        "credential rotation schedule",
        "passage: Rotate the tokens every ninety days.",
    )


def test_a_failing_expansion_endpoint_searches_the_plain_query_and_says_so(
    tmp_path: Path, embedder: Embedder
) -> None:
    root = write_files(tmp_path / "vault", NOTES)
    with Vault.open(root, index_dir=tmp_path / "index") as plain:
        plain.index()
        want = [(h.path, h.score) for h in plain.search("owls at night")]
    with model_server(embedder=embedder, failure="hang") as server:
        config = expand_config(server.url)
        config = replace(config, search=replace(config.search, model_timeout=0.3))
        with Vault.open(root, index_dir=tmp_path / "index", config=config) as vault:
            hits = vault.search("owls at night", explain=True)
    assert [(h.path, h.score) for h in hits] == want
    assert hits[0].explain and "query expansion failed" in hits[0].explain.notes[0]
    assert "did not answer within 0.3 s" in hits[0].explain.notes[0]


def test_expansion_needs_its_url() -> None:
    with pytest.raises(ConfigError, match=r"search\.expand_url"):
        config_from_dict({"search": {"expand": True}})
    with pytest.raises(ConfigError, match=r"embedding\.url"):
        config_from_dict({"embedding": {"backend": "openai", "model": "m"}})
