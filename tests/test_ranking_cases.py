"""The cases a new user hit on a real vault, each on the real index and model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.conftest import write_files
from vaultsearch import Vault
from vaultsearch.search.confidence import FIRST_LINE, WEAK, first_hit_answers, weak_answer

RECENT = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()

FILES: dict[str, str | bytes] = {
    "music/Xylophone.md": f"""
        ---
        updated: {RECENT}
        ---
        # Xylophone

        A xylophone is a tuned percussion instrument with wooden bars.
        See [[Marimba]] and [[Steel drums]].
        """,
    "music/Marimba.md": """
        # Marimba

        Rosewood bars over resonator tubes give a deep, warm tone.
        """,
    "music/Steel drums.md": """
        # Steel drums

        Pans hammered from oil barrels, first played in Trinidad.
        """,
    "help/FAQ.md": """
        # FAQ

        ## How much storage do I have?

        Every account holds 10 GB of attachments.

        ## Can I export my notes?

        Yes, as plain Markdown files.
        """,
    "help/Sync.md": """
        # Sync

        The sync add-on costs $4 a month, billed yearly, for end-to-end encrypted devices.
        """,
    "kitchen/Focaccia.md": """
        ---
        description: Ligurian olive oil flatbread
        ---
        # Focaccia

        High hydration dough, dimpled by hand, baked hot in a well oiled pan.
        """,
    "kitchen/Bread basics.md": """
        # Bread basics

        Flour, water, salt and yeast; knead, proof, bake.
        """,
    "people/Ada Lovelace.md": """
        ---
        aliases: [Enchantress of Numbers]
        ---
        # Ada Lovelace

        Wrote the first published program, for the Analytical Engine.
        """,
    "math/Prime numbers.md": """
        # Prime numbers

        Numbers divisible only by one and themselves: prime numbers, more numbers.
        """,
    "tools/Canvas.md": """
        # Canvas

        A canvas is an infinite board of cards, notes and arrows.
        """,
    "tools/Mermaid diagrams.md": """
        # Mermaid diagrams

        Draw flowcharts with mermaid code blocks.
        """,
    "tools/Daily notes.md": """
        # Daily notes

        A daily note is created each morning from a template.
        """,
    "tools/Rebuild.md": """
        # Rebuild

        Run `vaultsearch index --full` to rebuild; the guide is at
        https://example.org/rebuild-guide and in [[Index rebuild notes]].
        """,
}


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> Vault:
    root = write_files(tmp_path_factory.mktemp("cases") / "vault", FILES)
    v = Vault.open(root)
    v.index()
    return v


def paths(vault: Vault, query: str, mode: str = "hybrid", k: int = 10) -> list[str]:
    return [h.path for h in vault.search(query, mode=mode, top_k=k)]


def test_keyword_mode_lists_only_notes_with_the_word(vault: Vault) -> None:
    assert vault.config.search.graph_boost
    assert paths(vault, "xylophone", mode="keyword") == ["music/Xylophone.md"]


def test_graph_boost_still_lifts_linked_notes_in_hybrid(vault: Vault) -> None:
    hits = {h.path: h for h in vault.search("xylophone", explain=True)}
    marimba = hits["music/Marimba.md"].explain
    assert marimba and marimba.graph_from == "music/Xylophone.md" and marimba.graph_added > 0


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_function_words_do_not_drive_a_question(vault: Vault, mode: str) -> None:
    assert paths(vault, "how much does sync cost", mode=mode)[0] == "help/Sync.md"


def test_phrases_keep_their_function_words(vault: Vault) -> None:
    assert paths(vault, '"how much storage"', mode="keyword") == ["help/FAQ.md"]


def test_frontmatter_description_is_searchable(vault: Vault) -> None:
    assert paths(vault, "ligurian flatbread", mode="keyword") == ["kitchen/Focaccia.md"]
    assert paths(vault, "ligurian flatbread")[0] == "kitchen/Focaccia.md"


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_alias_only_query_ranks_its_note_first(vault: Vault, mode: str) -> None:
    assert paths(vault, "Enchantress of Numbers", mode=mode)[0] == "people/Ada Lovelace.md"


@pytest.mark.parametrize(
    ("query", "note", "expansion"),
    [
        ("canvs", "tools/Canvas.md", "canvs"),
        ("canv", "tools/Canvas.md", "canv*"),
        ("mermiad", "tools/Mermaid diagrams.md", "mermiad~"),
        ("dialy notes", "tools/Daily notes.md", "dialy~"),
    ],
)
@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_typos_and_prefixes(vault: Vault, query: str, note: str, expansion: str, mode: str) -> None:
    hits = vault.search(query, mode=mode, explain=True)
    assert hits[0].path == note
    assert hits[0].explain and any(e.startswith(expansion) for e in hits[0].explain.expansions)


def test_a_word_that_matches_leaves_no_expansion(vault: Vault) -> None:
    hit = vault.search("canvas", mode="keyword", explain=True)[0]
    assert hit.explain and hit.explain.expansions == ()


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_exclusion_is_the_same_in_every_mode(vault: Vault, mode: str) -> None:
    found = paths(vault, "percussion instrument bars -marimba", mode=mode)
    # Xylophone mentions Marimba in a link, Marimba is the word: both go, in every mode
    assert "music/Marimba.md" not in found and "music/Xylophone.md" not in found
    if mode != "keyword":
        assert found  # the rest of the vault still answers


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
@pytest.mark.parametrize("method", ["convex", "rrf"])
def test_explain_parts_add_up_to_the_score(vault: Vault, mode: str, method: str) -> None:
    v = Vault(vault.root, vault.index_dir, vault.config.with_search(fusion=method))
    hits = v.search("xylophone wooden bars", mode=mode, explain=True, top_k=20)
    assert hits
    for h in hits:
        assert h.explain is not None and h.explain.method == method
        assert h.explain.total == h.score  # the same sum in the same order, made lazily
    recent = {h.path: h for h in hits}["music/Xylophone.md"].explain
    assert recent and recent.recency_multiplier > 1 and recent.recency_added > 0
    if mode != "keyword":
        assert any(h.explain and h.explain.graph_added > 0 for h in hits)


def test_confidence_separates_answers_from_nonsense(vault: Vault) -> None:
    good = vault.search("xylophone percussion instrument")[0]
    assert good.path == "music/Xylophone.md" and good.confidence >= WEAK
    nonsense = vault.search("quarterly tax filing deadline penalties")
    assert nonsense and nonsense[0].confidence < WEAK
    assert all(0.0 <= h.confidence <= 1.0 for h in nonsense)


def test_no_good_match_is_said_from_the_first_hits_calibrated_probability(vault: Vault) -> None:
    good = vault.search("xylophone percussion instrument")
    assert weak_answer([h.confidence for h in good]) is None
    nonsense = vault.search("quarterly tax filing deadline penalties")
    said = weak_answer([h.confidence for h in nonsense])
    p = first_hit_answers(nonsense[0].confidence)
    assert p < FIRST_LINE and said is not None and f"probability {p:.2f}" in said
    assert weak_answer([]) == "No note matches: try other words, or fewer filters."
    ordered = [first_hit_answers(c) for c in (0.001, 0.05, 0.2, 0.9)]
    assert ordered == sorted(ordered) and all(0 < x < 1 for x in ordered)


def test_highlights_never_split_a_link_a_code_span_or_a_url(vault: Vault) -> None:
    hit = vault.search("rebuild", mode="keyword")[0]
    marked = [hit.snippet[s:e] for s, e in hit.highlights]
    assert "`vaultsearch index --full`" not in marked  # no query word inside it
    assert "[[Index rebuild notes]]" in marked
    assert "https://example.org/rebuild-guide" in marked
    text = hit.marked_snippet()
    assert "«[[Index rebuild notes]]»" in text and "[[«" not in text and "**" not in text
