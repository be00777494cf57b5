"""The ranking maths, checked against numbers worked out by hand."""

from __future__ import annotations

import pytest

from vaultsearch.search.fusion import (
    graph_boost,
    rank_items,
    recency_multiplier,
    tied_ranks,
    weighted_rrf,
)


def test_rrf_hand_computed() -> None:
    # k = 60: a = 1/61 + 1/63, b = 1/62 + 1/61, c = 1/63, d = 1/62
    scores = weighted_rrf({"kw": ["a", "b", "c"], "sem": ["b", "d", "a"]}, {}, 60)
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 63)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["c"] == pytest.approx(1 / 63)
    assert scores["d"] == pytest.approx(1 / 62)
    assert rank_items(scores) == ["b", "a", "d", "c"]


def test_rrf_weights_and_zero_weight() -> None:
    scores = weighted_rrf({"kw": ["x", "y"], "sem": ["y", "x"]}, {"kw": 2.0, "sem": 0.5}, 10)
    assert scores["x"] == pytest.approx(2 / 11 + 0.5 / 12)
    assert scores["y"] == pytest.approx(2 / 12 + 0.5 / 11)
    only_kw = weighted_rrf({"kw": ["x"], "sem": ["z"]}, {"sem": 0.0}, 60)
    assert only_kw == {"x": pytest.approx(1 / 61)}


def test_rrf_duplicate_in_one_list_counts_once() -> None:
    assert weighted_rrf({"kw": ["a", "a", "b"]}, {}, 1) == {"a": 0.5, "b": pytest.approx(1 / 3)}


def test_ties_break_by_key_not_hash() -> None:
    scores = {"zeta": 1.0, "alpha": 1.0, "mid": 2.0}
    assert rank_items(scores) == ["mid", "alpha", "zeta"]
    assert rank_items({3: 1.0, 1: 1.0, 2: 1.0}) == [1, 2, 3]


def test_graph_boost_hand_computed() -> None:
    scores = {"a": 0.04, "b": 0.03, "c": 0.01}
    links = {"a": ["c", "n"], "b": ["n"], "c": ["a"], "n": ["a", "b"]}
    boosted, why = graph_boost(scores, lambda x: links.get(x, []), top=2, share=0.5)
    # top 2 are a and b; c gains 0.5*0.04; n (not in the pool) enters with max(0.02, 0.015)
    assert boosted["c"] == pytest.approx(0.01 + 0.02)
    assert boosted["n"] == pytest.approx(0.02)
    assert why["n"].source == "a"
    # a is linked from b? no: b links only to n. a is c's neighbour but c is not in the top 2
    assert boosted["a"] == pytest.approx(0.04)
    assert boosted["b"] == pytest.approx(0.03)


def test_graph_lead_raises_only_the_best_notes_gift() -> None:
    scores = {"a": 0.04, "b": 0.03, "c": 0.01}
    links = {"a": ["c"], "b": ["n"]}
    boosted, why = graph_boost(scores, lambda x: links.get(x, []), top=2, share=0.1, lead=0.5)
    assert boosted["c"] == pytest.approx(0.01 + 0.5 * 0.04)  # a is first: the lead share
    assert boosted["n"] == pytest.approx(0.1 * 0.03)  # b is second: the plain share
    assert why["c"].source == "a"
    below, _ = graph_boost(scores, lambda x: links.get(x, []), top=2, share=0.1, lead=0.05)
    assert below["c"] == pytest.approx(0.01 + 0.1 * 0.04)  # a lead under the share is no cut


def test_graph_boost_share_zero_changes_nothing() -> None:
    scores = {"a": 1.0, "b": 0.5}
    boosted, _ = graph_boost(scores, lambda x: ["b"] if x == "a" else [], top=5, share=0.0)
    assert boosted == scores


@pytest.mark.parametrize(
    ("age", "expected"),
    [(0, 1.2), (6.9, 1.2), (7, 1.2), (7.1, 1.1), (30, 1.1), (31, 1.0), (-3, 1.2)],
)
def test_recency_tiers(age: float, expected: float) -> None:
    assert recency_multiplier(age, [[30, 1.1], [7, 1.2]]) == expected


def test_recency_no_tiers() -> None:
    assert recency_multiplier(1, []) == 1.0


def test_tied_ranks_share_a_rank() -> None:
    assert tied_ranks([("a", 3.0), ("b", 2.0), ("c", 2.0), ("d", 1.0)]) == {
        "a": 1,
        "b": 2,
        "c": 2,
        "d": 4,
    }
    scores = weighted_rrf({"kw": {"x": 1, "y": 1}}, {}, 60)
    assert scores["x"] == scores["y"] == pytest.approx(1 / 61)


def test_normalise_tm2c2_and_minmax() -> None:
    from vaultsearch.search.fusion import normalise

    assert normalise([4.0, 2.0, 1.0], "tm2c2") == [1.0, 0.5, 0.25]
    assert normalise([0.5, -0.2], "tm2c2") == [1.0, 0.0]  # a negative cosine clips to 0
    assert normalise([4.0, 2.0, 1.0], "minmax") == [1.0, 1 / 3, 0.0]
    assert normalise([3.0, 3.0], "minmax") == [1.0, 1.0]
    assert normalise([], "tm2c2") == []


def test_osa_distance_counts_a_swap_once() -> None:
    from vaultsearch.store.fuzzy import osa_distance

    assert osa_distance("diali", "daili", 2) == 1
    assert osa_distance("mermiad", "mermaid", 2) == 1
    assert osa_distance("canv", "canva", 1) == 1
    assert osa_distance("kitten", "sitting", 1) == 2  # gave up past the bound
    assert osa_distance("same", "same", 0) == 0


def test_expand_word_prefers_prefixes_then_close_common_words() -> None:
    from vaultsearch.store.fuzzy import expand_word

    terms = {"canva": 5, "canvass": 1, "daili": 40, "dial": 3, "mermaid": 2}

    def df(t: str) -> int:
        return terms.get(t, 0)

    def prefixed(p: str) -> list[tuple[str, int]]:
        return sorted(((t, c) for t, c in terms.items() if t.startswith(p)), key=lambda x: -x[1])

    assert [str(e) for e in expand_word("canv", "canv", df, prefixed)] == [
        "canv*canva",
        "canv*canvass",
    ]
    # one edit away, the more common first
    assert [str(e) for e in expand_word("dialy", "diali", df, prefixed)] == [
        "dialy~daili",
        "dialy~dial",
    ]
    assert expand_word("canva", "canva", df, prefixed) == []  # it matches: nothing to widen
    assert expand_word("ab", "ab", df, prefixed) == []  # too short to guess


def test_typo_candidates_skipped_by_the_letter_bound_are_never_close() -> None:
    """The letter-set bound only spares distance computations: the expansions are those
    of comparing every term, on random words of a small alphabet (many close ones)."""
    import random

    from vaultsearch.store.fuzzy import MAX_EXPANSIONS, expand_word, max_edits, osa_distance

    rng = random.Random(7)
    for _ in range(200):
        terms = {
            "a" + "".join(rng.choices("abcde", k=rng.randint(3, 9))): rng.randint(1, 50)
            for _ in range(60)
        }
        word = "a" + "".join(rng.choices("abcde", k=rng.randint(3, 8)))
        df = terms.get(word, 0)
        if df:
            continue  # a word the index holds is not widened past its prefixes

        def prefixed(
            p: str, terms: dict[str, int] = terms, word: str = word
        ) -> list[tuple[str, int]]:
            return [(t, c) for t, c in terms.items() if t.startswith(p) and t != word]

        out = expand_word(word, word, lambda t, terms=terms: terms.get(t, 0), prefixed)
        if any(e.kind == "prefix" for e in out):
            continue
        found = [e.term for e in out]
        k = max_edits(word)
        close = sorted((osa_distance(word, t, k), -c, t) for t, c in terms.items() if c > 10 * df)
        assert found == [t for d, _, t in close if d <= k][:MAX_EXPANSIONS]


def test_snippet_marks_whole_links_and_keeps_the_window_off_them() -> None:
    from vaultsearch.search.snippets import make_snippet

    text = "See [[Index rebuild notes]] and `make rebuild` or https://x.org/rebuild now."
    out = make_snippet(text, ("rebuild",))
    marked = [out.text[s:e] for s, e in out.highlights]
    assert marked == ["[[Index rebuild notes]]", "`make rebuild`", "https://x.org/rebuild"]
    long = "word " * 70 + "[[A very long link about rebuild]] tail " + "word " * 70
    cut = make_snippet(long, ("rebuild",), width=100)
    assert cut.text.count("[[") == cut.text.count("]]")


class _View:
    """A generation as fusion reads it: four notes, note 1 with three chunks."""

    def __init__(self) -> None:
        from vaultsearch.search.filters import NoteMeta

        self.notes = {n: NoteMeta(n, f"n{n}.md", f"N{n}", (), {}, 0.0) for n in (1, 2, 3, 4)}
        self.note_of_chunk = {10: 1, 11: 1, 12: 1, 20: 2, 30: 3, 40: 4}
        self.note_by_path = {m.path: n for n, m in self.notes.items()}

    def first_chunks(self, note_id: int) -> list[int]:
        return [min(c for c, n in self.note_of_chunk.items() if n == note_id)]


def test_fused_chunks_come_best_first_once_and_the_score_is_the_explains_total() -> None:
    from vaultsearch.search.ranking import FusionSettings, fuse

    branches = {
        "keyword": [(11, 9.0), (20, 6.0), (10, 3.0)],
        "semantic": [(10, 0.9), (30, 0.7), (11, 0.2), (12, 0.1)],
    }
    links = {"n1.md": ["n4.md"], "n2.md": ["n4.md"], "n3.md": ["n4.md"]}
    settings = FusionSettings(graph_share=0.5, graph_top=1)
    ranked = fuse(branches, _View(), settings, 0.0, neighbours=lambda p: links.get(p, []))
    by_note = {c.note_id: c for c in ranked}
    # chunk 11: 1.0 + 0.2/0.9; chunk 10: 3/9 + 1.0; chunk 12: 0.1/0.9
    assert by_note[1].chunks == [10, 11, 12]
    assert by_note[4].chunks == [40]  # only a link brought it: its first chunk
    assert by_note[4].explain.graph_from == "n1.md"  # the best note alone gives (graph_top 1)
    assert by_note[4].explain.graph_added == 0.5 * by_note[1].explain.fused
    for c in ranked:
        assert c.score == c.explain.total
    assert [c.note_id for c in ranked] == sorted(by_note, key=lambda n: -by_note[n].score)


def _listed(ranked: list) -> list:
    return [(c.note_id, c.chunks, c.score, c.explain) for c in ranked]


def test_ranking_again_with_hop_gifts_is_a_fresh_fusion_with_them() -> None:
    """``Fusion.ranked(hops)`` after ``ranked()`` gives what one ``fuse(..., hops=...)``
    gives, across two sources (``bound_gifts`` cuts a gift by the other source's notes),
    and a candidate whose gift did not change is not made again."""
    from vaultsearch.search.filters import NoteMeta
    from vaultsearch.search.ranking import Fusion, FusionSettings, fuse

    view = _View()
    view.notes[3] = NoteMeta(3, "n3.md", "N3", (), {}, 0.0, "other")
    branches = {
        "keyword": [(11, 9.0), (20, 6.0), (10, 3.0)],
        "semantic": [(10, 0.9), (30, 0.7), (11, 0.2), (12, 0.1)],
    }
    links = {"n1.md": ["n4.md"], "n2.md": ["n4.md"]}
    settings = FusionSettings(graph_share=0.5, graph_top=1, recency_tiers=((7.0, 1.2),))
    args = (branches, view, settings, 86400.0 * 3)
    hops = {2: (0.4, "n1.md"), 4: (0.05, "n1.md"), 3: (9.0, "n1.md")}
    fusion = Fusion(*args, neighbours=lambda p: links.get(p, []), name="N2")
    first = fusion.ranked()
    assert _listed(first) == _listed(fuse(*args, neighbours=lambda p: links.get(p, []), name="N2"))
    again = fusion.ranked(hops)
    fresh = fuse(*args, neighbours=lambda p: links.get(p, []), name="N2", hops=hops)
    assert _listed(again) == _listed(fresh)
    assert _listed(again) != _listed(first)
    gift = {c.note_id: (c.explain.graph_added, c.explain.graph_from) for c in first}
    unchanged = {
        c.note_id
        for c in again
        if gift.get(c.note_id) == (c.explain.graph_added, c.explain.graph_from)
    }
    assert 2 not in unchanged and {1, 4} <= unchanged
    assert {c.note_id for c in first for d in again if c is d} == unchanged
