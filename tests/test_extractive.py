"""The extractive answer: sentences from the hits, numbered citations, nothing made up."""

from __future__ import annotations

from vaultsearch.models import Hit
from vaultsearch.search.extractive import Citation, extractive_answer, sentences


def _hit(path: str, snippet: str, start: int = 1, end: int = 5) -> Hit:
    return Hit(path, path.removesuffix(".md"), "", start, end, snippet, 1.0)


def test_sentences_drop_markup_and_fragments() -> None:
    text = "## Owls\n- Owls hunt at night. They eat mice!\n…the cut part\nok"
    assert sentences(text) == ["Owls hunt at night.", "They eat mice!", "the cut part"]


def test_answer_takes_the_sentences_sharing_most_query_words() -> None:
    hits = [
        _hit("birds/owls.md", "Owls are birds. Owls hunt small mammals at night.", 3, 9),
        _hit("rivers.md", "Rivers flow to the sea. Nothing about birds here.", 1, 4),
        _hit("food.md", "Barn owls mostly hunt voles and mice in fields.", 10, 12),
    ]
    answer = extractive_answer("what do owls hunt at night", hits, max_sentences=2)
    assert (
        answer.text
        == "Owls hunt small mammals at night. [1] Barn owls mostly hunt voles and mice in fields. [2]"
    )
    assert answer.citations == (
        Citation(1, "birds/owls.md", 3, 9),
        Citation(2, "food.md", 10, 12),
    )
    for sentence in ("Owls hunt small mammals at night.", "Barn owls mostly hunt voles"):
        assert any(sentence in h.snippet for h in hits)  # every word is from the vault


def test_answer_keeps_text_order_within_a_passage_and_numbers_by_first_use() -> None:
    hits = [
        _hit("a.md", "Tea grows on hills. The tea harvest starts in spring. Tea is dried."),
        _hit("b.md", "Coffee is roasted beans of a cherry."),
    ]
    answer = extractive_answer("tea harvest", hits, max_sentences=2)
    assert answer.text == "Tea grows on hills. [1] The tea harvest starts in spring. [1]"
    assert [c.n for c in answer.citations] == [1]


def test_no_shared_word_gives_the_best_passage_first_sentence() -> None:
    hits = [_hit("a.md", "Completely different words live here. More of them follow.")]
    answer = extractive_answer("zebra", hits)
    assert answer.text == "Completely different words live here. [1]"


def test_no_hits_says_so_without_citations() -> None:
    answer = extractive_answer("anything", [])
    assert answer.citations == () and "No passage" in answer.text


def test_passage_lines_keep_headings_code_and_tables_out_of_the_answer() -> None:
    passage = (
        "## How a rebuild is decided\n"
        "The manifest records what shapes the index.\n"
        "```sh\nvaultsearch index --check\n```\n"
        "| key | rebuild |\n"
        "A changed chunk size forces a rebuild of every index."
    )
    assert sentences(passage, lines_kept=True) == [
        "The manifest records what shapes the index.",
        "A changed chunk size forces a rebuild of every index.",
    ]
    snippet = "## How a rebuild is decided The manifest records what shapes the index."
    hit = _hit("format.md", snippet, 10, 16)
    joined = extractive_answer("how is a rebuild decided", [hit])
    lined = extractive_answer("how is a rebuild decided", [hit], max_sentences=1, texts=[passage])
    assert joined.text.startswith("How a rebuild is decided The manifest")  # heading run in
    assert lined.text == "A changed chunk size forces a rebuild of every index. [1]"
    assert lined.citations == (Citation(1, "format.md", 10, 16),)


def test_hard_wrapped_lines_are_one_sentence() -> None:
    passage = "A rebuild is needed when what shapes the\nindex changed.\n- A list item stays\n  apart from it."
    assert sentences(passage, lines_kept=True) == [
        "A rebuild is needed when what shapes the index changed.",
        "A list item stays apart from it.",
    ]
