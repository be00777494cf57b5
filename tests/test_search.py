"""Hybrid search end to end on a small linked vault, with the real model and indexes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import write_files
from vaultsearch import QueryError, Vault
from vaultsearch.config import config_from_dict

TODAY = datetime.now(UTC).date()
RECENT = (TODAY - timedelta(days=2)).isoformat()

FILES: dict[str, str | bytes] = {
    "garden/Tomatoes.md": f"""
        ---
        tags: [garden/vegetables]
        status: done
        updated: {RECENT}
        ---
        # Tomatoes

        Tomatoes need full sun and deep watering twice a week.
        See [[Composting]] for soil preparation.

        ## Pests

        Hornworms eat tomato leaves; pick them off by hand.
        """,
    "garden/Composting.md": """
        ---
        tags: [garden]
        status: draft
        updated: 2020-03-01
        ---
        # Composting

        Kitchen scraps and leaves turn into rich humus in a few months.
        """,
    "work/Meetings.md": """
        ---
        tags: [work]
        updated: 2021-06-01
        ---
        # Meetings

        Weekly planning meeting every Monday with the design team.
        """,
    "work/archive/Old Plans.md": """
        ---
        updated: 2019-01-01
        ---
        # Old Plans

        Planning notes from the design offsite: budget, hiring, roadmap.
        """,
    "same/a-old.md": "---\nupdated: 2018-01-01\n---\n# Twin\n\nIdentical twin note about lighthouses.\n",
    "same/b-new.md": f"---\nupdated: {RECENT}\n---\n# Twin\n\nIdentical twin note about lighthouses.\n",
}


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> Vault:
    root = write_files(tmp_path_factory.mktemp("search") / "vault", FILES)
    v = Vault.open(root)
    v.index()
    return v


def _with(vault: Vault, **search: object) -> Vault:
    cfg = vault.config.with_search(**search)
    return Vault(vault.root, vault.index_dir, cfg)


def test_hybrid_finds_the_place(vault: Vault) -> None:
    hits = vault.search("how often should I water tomato plants")
    top = hits[0]
    assert top.path == "garden/Tomatoes.md"
    assert top.heading_path == "Tomatoes"
    assert (top.start_line, top.end_line) == (6, 9)
    marked = {top.snippet[s:e] for s, e in top.highlights}
    assert "watering" in marked and "Tomatoes" in marked
    assert "«watering»" in top.marked_snippet() and "**" not in top.marked_snippet()
    assert len(top.snippet) <= 320


def test_modes_and_explain(vault: Vault) -> None:
    for mode in ("keyword", "semantic", "hybrid"):
        hits = vault.search("hornworms on leaves", mode=mode, explain=True)
        assert hits[0].path == "garden/Tomatoes.md", mode
        assert hits[0].heading_path == "Tomatoes > Pests", mode
    ex = vault.search("hornworms", mode="hybrid", explain=True)[0].explain
    branches = [p.branch for p in ex.branches] if ex else []
    assert branches == ["keyword", "semantic", "sentences"]
    assert ex.branches[0].rank == 1 and ex.method == "convex"
    kw = vault.search("hornworms", mode="keyword", explain=True)[0].explain
    assert kw is not None and [p.branch for p in kw.branches] == ["keyword"]
    sem = vault.search("hornworms", mode="semantic", explain=True)[0].explain
    assert sem is not None and [p.branch for p in sem.branches] == ["semantic", "sentences"]


def test_bad_arguments(vault: Vault) -> None:
    with pytest.raises(QueryError, match="mode"):
        vault.search("x", mode="fuzzy")
    with pytest.raises(QueryError, match="top_k"):
        vault.search("x", top_k=0)
    with pytest.raises(QueryError, match="top_k"):
        vault.search("x", top_k=-3)


@pytest.mark.parametrize(
    "query",
    [
        "C++",
        '"',
        "title:(",
        "a AND OR NOT b",
        "*",
        "-",
        '-"',
        "tag:",
        "(((",
        "x^2 ~3",
        '"unclosed phrase',
        "\\",
        "",
    ],
)
@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_hostile_queries_never_raise(vault: Vault, query: str, mode: str) -> None:
    assert isinstance(vault.search(query, mode=mode), list)


def test_tag_filter_is_hierarchical(vault: Vault) -> None:
    paths = {h.path for h in vault.search("notes", tags=["garden"], top_k=10)}
    assert paths == {"garden/Tomatoes.md", "garden/Composting.md"}
    assert {h.path for h in vault.search("notes", tags=["garden/vegetables"])} == {
        "garden/Tomatoes.md"
    }
    assert {h.path for h in vault.search("tag:work planning")} == {"work/Meetings.md"}


def test_folder_filter_forms(vault: Vault) -> None:
    assert {h.path for h in vault.search("planning", folders=["archive"])} == {
        "work/archive/Old Plans.md"
    }
    assert {h.path for h in vault.search("planning", folders=["/work"])} == {
        "work/Meetings.md",
        "work/archive/Old Plans.md",
    }
    assert {h.path for h in vault.search("planning", folders=["work/*"])} == {
        "work/archive/Old Plans.md"
    }
    for glob in ("**/archive/**", "work/archive/**", "archive/", "work/**/archive"):
        assert {h.path for h in vault.search("planning", folders=[glob])} == {
            "work/archive/Old Plans.md"
        }, glob
    assert {h.path for h in vault.search("planning", folders=["work/**"])} == {
        "work/Meetings.md",
        "work/archive/Old Plans.md",
    }
    with pytest.raises(
        QueryError, match=r"folder '/nowhere'; folders in this vault: archive, garden,"
    ):
        vault.search("planning", folders=["/nowhere"])  # said, not an empty answer
    with pytest.raises(QueryError, match=r"folder 'archiv/' \(did you mean 'archive'\?\)"):
        vault.search("planning", folders=["archiv/"])


def test_filtered_query_still_returns_k(vault: Vault) -> None:
    # the twins rank far below the gardening notes for this query, yet a filter to
    # their folder must still return both rather than an empty cut of a top-k list
    hits = vault.search("watering tomatoes in the sun", folders=["same"], top_k=2, mode="keyword")
    assert hits == []  # no keyword overlap at all
    hits = vault.search("watering tomatoes in the sun", folders=["same"], top_k=2, mode="semantic")
    assert {h.path for h in hits} == {"same/a-old.md", "same/b-new.md"}


def test_where_and_dates(vault: Vault) -> None:
    assert {h.path for h in vault.search("garden", where={"status": "draft"})} == {
        "garden/Composting.md"
    }
    assert {h.path for h in vault.search("garden", where={"status": ["draft", "done"]})} == {
        "garden/Composting.md",
        "garden/Tomatoes.md",
    }
    old = {h.path for h in vault.search("planning", before="2020-01-01")}
    assert old == {"work/archive/Old Plans.md", "same/a-old.md"}
    new = {h.path for h in vault.search("planning design", after="2021-01-01", top_k=10)}
    assert "work/archive/Old Plans.md" not in new and "work/Meetings.md" in new
    assert vault.search("garden", where={"status": "nonexistent"}) == []


def test_min_score(vault: Vault) -> None:
    hits = vault.search("tomatoes", top_k=10)
    cut = hits[0].score * 0.99
    assert [h.path for h in vault.search("tomatoes", top_k=10, min_score=cut)] == [hits[0].path]


def test_exclusion_operator(vault: Vault) -> None:
    paths = [h.path for h in vault.search("planning -offsite", top_k=10)]
    assert "work/archive/Old Plans.md" not in paths and "work/Meetings.md" in paths


def test_recency_switch(vault: Vault) -> None:
    on = vault.search("lighthouses", folders=["same"], mode="keyword", explain=True)
    assert [h.path for h in on] == ["same/b-new.md", "same/a-old.md"]
    assert on[0].explain and on[0].explain.recency_multiplier == 1.2
    off = _with(vault, recency=False).search("lighthouses", folders=["same"], mode="keyword")
    assert [h.path for h in off] == ["same/a-old.md", "same/b-new.md"]  # a tie, broken by path
    assert off[0].score == off[1].score


def test_graph_boost_switch(vault: Vault) -> None:
    # Composting says nothing of hornworms, but Tomatoes (the top hit) links to it
    on = {h.path: h for h in vault.search("hornworms", explain=True, top_k=5)}
    boosted = on["garden/Composting.md"].explain
    assert boosted and boosted.graph_from == "garden/Tomatoes.md" and boosted.graph_added > 0
    off = _with(vault, graph_boost=False).search("hornworms", explain=True, top_k=5)
    assert all(h.explain and h.explain.graph_added == 0 for h in off)


def test_keyword_mode_never_adds_linked_notes(vault: Vault) -> None:
    """The newcomer's ``xylophone`` case: keyword mode lists only notes with the word,
    even though the graph boost is on and Tomatoes links to Composting."""
    assert vault.config.search.graph_boost
    hits = vault.search("hornworms", mode="keyword", top_k=5)
    assert [h.path for h in hits] == ["garden/Tomatoes.md"]


def test_results_are_deterministic(vault: Vault) -> None:
    a = [h.to_dict() for h in vault.search("planning meeting design", top_k=5)]
    b = [h.to_dict() for h in vault.search("planning meeting design", top_k=5)]
    assert a == b


def test_config_rejects_bad_values() -> None:
    from vaultsearch import ConfigError

    with pytest.raises(ConfigError, match=r"search\.rrf_k"):
        config_from_dict({"search": {"rrf_k": 0}})
    with pytest.raises(ConfigError, match=r"Unknown config key 'search\.rrf'"):
        config_from_dict({"search": {"rrf": 1}})


def test_search_without_index_says_how_to_fix(tmp_path: Path) -> None:
    from vaultsearch import IndexMissingError

    (tmp_path / "n.md").write_text("# n\n")
    with pytest.raises(IndexMissingError) as err:
        Vault.open(tmp_path).search("x")
    assert err.value.fix and "vaultsearch index" in err.value.fix


def test_reranker_orders_the_head_by_cross_encoder_score(vault: Vault) -> None:
    """No cross-encoder ships here, so the bundled encoder stands in (with an untrained
    scoring head): what is checked is the wiring, not the quality."""
    pytest.importorskip("sentence_transformers", reason="rerankers need the huggingface extra")
    from vaultsearch.embedding import bundled_model_path

    reranked = _with(vault, reranker=str(bundled_model_path()), rerank_top=3)
    hits = reranked.search("planning meeting design", top_k=5, explain=True)
    head = [h for h in hits if h.explain and h.explain.rerank_added != 0]
    assert len(head) == min(3, len(hits))
    assert [h.score for h in head] == sorted((h.score for h in head), reverse=True)
    assert all(h.explain and abs(h.explain.total - h.score) < 1e-9 for h in hits)
    assert min(h.score for h in head) > max((h.score for h in hits[len(head) :]), default=0)


def test_exclusion_also_applies_to_graph_neighbours(vault: Vault) -> None:
    # Tomatoes links to Composting; excluding a Composting word keeps it out even
    # though the graph boost would bring it in
    paths = [h.path for h in vault.search("hornworms -humus", mode="keyword", top_k=5)]
    assert paths == ["garden/Tomatoes.md"]


def test_snippet_marks_content_words_not_stopwords() -> None:
    from vaultsearch.search.snippets import make_snippet

    out = make_snippet(
        "How is a rebuild decided? The manifest is compared.", ("how", "is", "a", "rebuild")
    )
    assert out.text == "How is a rebuild decided? The manifest is compared."
    assert [out.text[s:e] for s, e in out.highlights] == ["rebuild"]
