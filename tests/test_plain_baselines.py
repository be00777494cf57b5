"""The plain baselines of bench/vault_quality.py: what 'beats a simple baseline' is measured
against must itself be right."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from plain_baselines import PlainBM25, PlainNote, plain_chunks, read_notes, rrf


def test_rrf_sums_reciprocal_ranks_with_k_60() -> None:
    fused = rrf([("a", 9.0), ("b", 5.0)], [("b", 0.9), ("c", 0.8)])
    assert [path for path, _ in fused] == ["b", "a", "c"]
    assert dict(fused)["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert dict(fused)["a"] == pytest.approx(1 / 61)


def test_chunks_pack_paragraphs_and_cut_long_ones() -> None:
    note = PlainNote("n.md", "Title", "one two\n\n" + " ".join(f"w{i}" for i in range(450)))
    pieces = plain_chunks(note, words=200)
    assert all(len(p.split()) <= 200 for p in pieces)
    assert pieces[0].startswith("Title one two w0")
    assert " ".join(pieces).split() == ["Title", "one", "two"] + [f"w{i}" for i in range(450)]
    assert plain_chunks(PlainNote("e.md", "Empty", "")) == ["Empty"]


def test_notes_skip_hidden_folders_and_take_the_frontmatter_title(tmp_path: Path) -> None:
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / ".obsidian" / "x.md").write_text("hidden", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.md").write_text(
        "---\nid: 1\ntitle: 'Lookup'\n---\nbody text\n", encoding="utf-8"
    )
    (tmp_path / "plain.md").write_text("no frontmatter", encoding="utf-8")
    notes = read_notes(tmp_path)
    assert [(n.path, n.title, n.body) for n in notes] == [
        ("plain.md", "plain", "no frontmatter"),
        ("sub/a.md", "Lookup", "body text\n"),
    ]


def test_bm25_stems_english_and_searches_title_and_body() -> None:
    bm25 = PlainBM25(
        [
            PlainNote("runs.md", "Running shoes", "what to wear"),
            PlainNote("cook.md", "Cooking", "the runner beans were boiled"),
            PlainNote("other.md", "Other", "nothing here"),
        ]
    )
    assert [path for path, _ in bm25.search("run")] == ["runs.md"]
    assert [path for path, _ in bm25.search("boiling beans?")] == ["cook.md"]
    assert bm25.search("?!") == []
