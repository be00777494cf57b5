from __future__ import annotations

import math
from pathlib import Path
from urllib.parse import unquote

import pytest

from vaultsearch.app.evaluation import (
    evaluate,
    load_corpus,
    load_qrels,
    load_queries,
    mrr_at_k,
    ndcg_at_k,
    note_filename,
    recall_at_k,
    write_corpus_as_vault,
)

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


# nDCG@10


def test_ndcg_graded_by_hand() -> None:
    # DCG = 1/log2(2) + 2/log2(3); ideal = 2/log2(2) + 1/log2(3); "c" (rel 0) adds nothing.
    relevant = {"a": 2, "b": 1, "c": 0}
    expected = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    assert ndcg_at_k(["b", "a", "c"], relevant) == pytest.approx(expected)
    assert expected == pytest.approx(0.859719, abs=1e-6)


def test_ndcg_ideal_ordering_is_one() -> None:
    assert ndcg_at_k(["a", "b", "x"], {"a": 1, "b": 1}) == pytest.approx(1.0)
    assert ndcg_at_k(["a", "b", "c"], {"a": 3, "b": 2, "c": 1}) == pytest.approx(1.0)


def test_ndcg_single_relevant_at_rank_two() -> None:
    assert ndcg_at_k(["x", "a"], {"a": 1}) == pytest.approx(1 / math.log2(3))


def test_ndcg_no_relevant_retrieved_is_zero() -> None:
    assert ndcg_at_k(["x", "y"], {"a": 1}) == 0.0
    assert ndcg_at_k([], {"a": 1}) == 0.0
    assert ndcg_at_k(["a"], {"a": 0}) == 0.0


def test_mrr_is_the_reciprocal_rank_of_the_first_relevant_note() -> None:
    assert mrr_at_k(["x", "y", "a", "b"], {"a": 1, "b": 2}) == pytest.approx(1 / 3)
    assert mrr_at_k(["b", "a"], {"a": 2, "b": 1}) == 1.0
    assert mrr_at_k(["x", "a"], {"a": 0, "x": 0}) == 0.0


def test_mrr_counts_a_repeated_id_once_and_stops_at_k() -> None:
    assert mrr_at_k(["x", "x", "a"], {"a": 1}) == pytest.approx(1 / 2)
    assert mrr_at_k([f"n{i}" for i in range(10)] + ["a"], {"a": 1}, k=10) == 0.0
    assert mrr_at_k([f"n{i}" for i in range(9)] + ["a"], {"a": 1}, k=10) == pytest.approx(0.1)
    with pytest.raises(ValueError):
        mrr_at_k(["a"], {"a": 1}, k=0)


def test_ndcg_ignores_ranks_past_cutoff() -> None:
    ranking = [f"x{i}" for i in range(10)] + ["a"]
    assert ndcg_at_k(ranking, {"a": 1}) == 0.0
    assert ndcg_at_k(ranking, {"a": 1}, k=11) == pytest.approx(1 / math.log2(12))


def test_ndcg_ideal_uses_unretrieved_judgments() -> None:
    # Two relevant docs exist but only one is retrieved, at rank 1.
    assert ndcg_at_k(["a"], {"a": 1, "b": 1}) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_ndcg_rejects_non_positive_k() -> None:
    with pytest.raises(ValueError, match="k must be positive"):
        ndcg_at_k(["a"], {"a": 1}, k=0)


# Recall@100


def test_recall_by_hand() -> None:
    relevant = {"a": 1, "b": 2, "c": 1, "d": 0}
    assert recall_at_k(["a", "d", "x", "c"], relevant) == pytest.approx(2 / 3)
    assert recall_at_k(["a", "b", "c"], relevant) == 1.0
    assert recall_at_k([], relevant) == 0.0


def test_recall_cutoff_and_no_targets() -> None:
    ranking = [f"x{i}" for i in range(100)] + ["a"]
    assert recall_at_k(ranking, {"a": 1}) == 0.0
    assert recall_at_k(ranking, {"a": 1}, k=101) == 1.0
    assert recall_at_k(["a"], {"a": 0}) == 0.0


# Duplicates in a ranking


def test_duplicates_count_once_at_first_occurrence() -> None:
    relevant = {"a": 1, "b": 1}
    assert ndcg_at_k(["a", "a"], relevant) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert recall_at_k(["a", "a", "a"], relevant) == 0.5
    # The repeated "x" does not take a slot: "a" is at rank 2 and inside k=2.
    assert ndcg_at_k(["x", "x", "a"], {"a": 1}, k=2) == pytest.approx(1 / math.log2(3))
    assert recall_at_k(["x", "x", "a"], {"a": 1}, k=2) == 1.0


# evaluate


def test_evaluate_means_over_judged_queries() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {}}
    run = {"q1": ["a"], "q2": ["x", "b"], "unjudged": ["a"]}
    result = evaluate(run, qrels)
    assert result["queries"] == 2
    assert result["ndcg@10"] == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert result["recall@100"] == pytest.approx(1.0)


def test_evaluate_judged_query_missing_from_run_scores_zero() -> None:
    result = evaluate({"q1": ["a"]}, {"q1": {"a": 1}, "q2": {"b": 1}})
    assert result == {"ndcg@10": 0.5, "recall@100": 0.5, "queries": 2}


def test_evaluate_without_qrels() -> None:
    assert evaluate({"q": ["a"]}, {}) == {"ndcg@10": 0.0, "recall@100": 0.0, "queries": 0}


# Loaders


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_load_corpus(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "corpus.jsonl",
        '{"_id": "1", "title": "T", "text": "body"}\n\n{"_id": 2, "text": "untitled"}\n',
    )
    assert load_corpus(path) == {"1": ("T", "body"), "2": ("", "untitled")}


def test_load_corpus_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "corpus.jsonl", '{"_id": "1", "text": "ok"}\n{"_id": "2", "text": \n')
    with pytest.raises(ValueError, match=r"corpus\.jsonl:2: invalid JSON"):
        load_corpus(path)


def test_load_corpus_missing_field_and_duplicate(tmp_path: Path) -> None:
    missing = _write(tmp_path / "a.jsonl", '{"_id": "1", "title": "t"}\n')
    with pytest.raises(ValueError, match=r"a\.jsonl:1: missing field 'text'"):
        load_corpus(missing)
    twice = _write(tmp_path / "b.jsonl", '{"_id": "1", "text": "x"}\n{"_id": "1", "text": "y"}\n')
    with pytest.raises(ValueError, match=r"b\.jsonl:2: duplicate document id '1'"):
        load_corpus(twice)


def test_load_queries(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "queries.jsonl",
        '{"_id": "0", "text": "claim one", "metadata": {}}\n'
        '{"_id": "2", "text": "claim two", "metadata": {"13734012": []}}\n',
    )
    assert load_queries(path) == {"0": "claim one", "2": "claim two"}


def test_load_queries_rejects_non_object(tmp_path: Path) -> None:
    path = _write(tmp_path / "queries.jsonl", '{"_id": "0", "text": "a"}\n["b"]\n')
    with pytest.raises(ValueError, match=r"queries\.jsonl:2: expected a JSON object"):
        load_queries(path)


def test_load_qrels_skips_header(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "train.tsv",
        "query-id\tcorpus-id\tscore\n0\t31715818\t1\n2\t13734012\t1\n2\t99\t2\n\n",
    )
    assert load_qrels(path) == {"0": {"31715818": 1}, "2": {"13734012": 1, "99": 2}}


def test_load_qrels_without_header_keeps_first_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "train.tsv", "0\t31715818\t1\r\n")
    assert load_qrels(path) == {"0": {"31715818": 1}}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("query-id\tcorpus-id\tscore\n0\t1\tyes\n", r"train\.tsv:2: score 'yes' is not an integer"),
        ("query-id\tcorpus-id\tscore\n0 1 1\n", r"train\.tsv:2: expected 3 tab-separated fields"),
        ("0\t1\t1\n0\t1\t2\n", r"train\.tsv:2: duplicate judgment"),
    ],
)
def test_load_qrels_malformed_line(tmp_path: Path, content: str, message: str) -> None:
    path = _write(tmp_path / "train.tsv", content)
    with pytest.raises(ValueError, match=message):
        load_qrels(path)


@pytest.mark.skipif(not SCIFACT.is_dir(), reason=f"SciFact data not found at {SCIFACT}")
def test_scifact_files_load() -> None:
    corpus = load_corpus(SCIFACT / "corpus.jsonl")
    queries = load_queries(SCIFACT / "queries.jsonl")
    qrels = load_qrels(SCIFACT / "qrels" / "train.tsv")
    assert len(corpus) == 5183
    assert len(queries) == 809
    assert sum(len(docs) for docs in qrels.values()) == 919
    assert set(qrels) <= set(queries)
    assert all(doc_id in corpus for docs in qrels.values() for doc_id in docs)
    perfect = {q: sorted(docs, key=docs.__getitem__, reverse=True) for q, docs in qrels.items()}
    assert evaluate(perfect, qrels)["ndcg@10"] == pytest.approx(1.0)


# Notes


@pytest.mark.parametrize(
    "doc_id", ["13734012", "doc0", "Barack_Obama", "a/b:c", "50%|x#y^z[[w]]", "Éire", "..", "a~b"]
)
def test_note_filename_is_safe_and_reversible(doc_id: str) -> None:
    name = note_filename(doc_id)
    assert name.endswith(".md")
    assert not name.startswith(".")
    assert not set(name) & set('/\\:*?"<>|#^[] ')
    assert name.isascii()
    assert unquote(name[:-3]) == doc_id


def test_note_filename_plain_ids_unchanged() -> None:
    assert note_filename("13734012") == "13734012.md"


def test_note_filename_avoids_windows_reserved_names() -> None:
    assert note_filename("CON") == "%43ON.md"
    assert unquote(note_filename("nul.txt")[:-3]) == "nul.txt"


def test_note_filename_long_ids_stay_short_and_distinct() -> None:
    first, second = note_filename("x" * 300 + "1"), note_filename("x" * 300 + "2")
    assert first != second
    assert len(first.encode()) <= 255


def test_note_filename_rejects_empty_id() -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        note_filename("")


def test_write_corpus_as_vault(tmp_path: Path) -> None:
    corpus = {"1": ("A title", "Body text."), "a/b": ("", "No title.")}
    mapping = write_corpus_as_vault(corpus, tmp_path / "vault")
    assert mapping == {"1.md": "1", "a%2Fb.md": "a/b"}
    vault = tmp_path / "vault"
    assert (vault / "1.md").read_text(encoding="utf-8") == "# A title\n\nBody text.\n"
    assert (vault / "a%2Fb.md").read_text(encoding="utf-8") == "No title.\n"


def test_write_corpus_as_vault_keeps_case_variants_apart(tmp_path: Path) -> None:
    mapping = write_corpus_as_vault({"Red_Meat": ("", "x"), "Red_meat": ("", "y")}, tmp_path)
    assert sorted(mapping.values()) == ["Red_Meat", "Red_meat"]
    names = [name.casefold() for name in mapping]
    assert len(set(names)) == 2
    for name, doc_id in mapping.items():
        expected = "x\n" if doc_id == "Red_Meat" else "y\n"
        assert (tmp_path / name).read_text(encoding="utf-8") == expected
