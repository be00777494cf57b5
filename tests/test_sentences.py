"""Sentence vectors: which units a chunk is cut into, what the sentence index holds for
them through edits, and that a search scores a note by its best sentence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conftest import WriteVault, bump_mtime
from vaultsearch import Vault
from vaultsearch.embedding.embedder import Embedder
from vaultsearch.parsers.sentences import MAX_UNITS, sentence_units, unit_texts
from vaultsearch.store.catalog import SENTENCE_BITS
from vaultsearch.store.derived.sentences import SentencePart
from vaultsearch.store.layout import IndexLayout
from vaultsearch.store.segments import open_segments
from vaultsearch.store.vectors import SegmentedVectors, decode, encode


def test_prose_is_cut_at_sentence_ends_and_short_units_dropped() -> None:
    text = "Cats sleep most of the day. Dogs bark at night! Is that true? Yes.\nIt is, e.g. here."
    assert sentence_units(text) == [
        "Cats sleep most of the day.",
        "Dogs bark at night!",
        "Is that true?",
        "It is, e.g. here.",
    ]


def test_markdown_structure_decides_units_first() -> None:
    text = (
        "## Watering the garden beds\n"
        "Water early. The soil keeps it\n"
        "all day long.\n"
        "- [ ] buy a new hose\n"
        "- [[Compost]]\n"
        "1. dig the bed over\n"
        "> a quoted line of text\n"
        "| sun | six hours a day |\n"
        "```python\n"
        "print('code is not a sentence at all')\n"
        "```\n"
        "Water early."
    )
    assert sentence_units(text) == [
        "Watering the garden beds",
        "The soil keeps it all day long.",
        "buy a new hose",
        "dig the bed over",
        "a quoted line of text",
        "sun | six hours a day",
    ]


def test_units_are_capped_and_code_has_none() -> None:
    text = "\n".join(f"- item number {i} here" for i in range(MAX_UNITS + 10))
    assert len(sentence_units(text)) == MAX_UNITS
    assert unit_texts("def f(x):\n    return x + 1  # add one to it", "code") == []
    assert unit_texts("Plain prose with a few words.", "text") == ["Plain prose with a few words."]


def _held(path: Path) -> SegmentedVectors:
    """Every live row of a generation's segments, by id (stored rows decoded to float32)."""
    listing, segments = open_segments(path)
    return SegmentedVectors(listing.dim, segments)


def _rows(index_dir: Path) -> dict[int, list[int]]:
    """Chunk id -> the unit numbers the live sentence index holds for it."""
    ids = _held(SentencePart.location(IndexLayout(index_dir).live)).ids().tolist()
    out: dict[int, list[int]] = {}
    for i in sorted(ids):
        out.setdefault(i >> SENTENCE_BITS, []).append(i & ((1 << SENTENCE_BITS) - 1))
    return out


NOTE = (
    "# Bees\n\nHoney bees dance to show where flowers are. "
    "A colony can hold fifty thousand workers. The queen lays the eggs.\n"
)


def test_the_index_holds_each_unit_of_each_chunk_through_edits(
    write_vault: WriteVault, embedder: Embedder
) -> None:
    root = write_vault({"Bees.md": NOTE, "tool.py": "def f(x):\n    return x + 1\n"})
    with Vault.open(root) as vault:
        vault.index()
        snap = vault.orchestrator.snapshot()
        rows = _rows(vault.index_dir)
        bees = snap.note_by_path["Bees.md"]
        tool = snap.note_by_path["tool.py"]
        (bee_chunk,) = snap.chunks_by_note[bees].tolist()
        (tool_chunk,) = snap.chunks_by_note[tool].tolist()
        assert rows == {bee_chunk: [0, 1, 2], tool_chunk: [0]}
        held = _held(SentencePart.location(IndexLayout(vault.index_dir).live))
        stored = held.vectors_of([bee_chunk << SENTENCE_BITS | 1])[1][0]
        alone = embedder.embed_texts(["A colony can hold fifty thousand workers."])[0]
        assert float(stored @ alone / np.linalg.norm(alone)) > 0.999
        code = held.vectors_of([tool_chunk << SENTENCE_BITS])[1][0]
        assert float(code @ snap.reader("vectors").vectors_of([tool_chunk])[1][0]) > 0.999

        (root / "Bees.md").write_text(NOTE.replace("The queen lays the eggs.", ""))
        bump_mtime(root / "Bees.md")
        vault.index()
        after = _rows(vault.index_dir)
        assert bee_chunk not in after and len(after) == 2
        assert sorted(len(u) for u in after.values()) == [1, 2]
        assert vault.check().status == "current"
        assert vault.manager().verify().ok


@pytest.mark.parametrize("suffix", ["sentences.json", ".rows.npy", ".ids.npy"])
def test_check_finds_a_changed_sentence_file(
    write_vault: WriteVault, embedder: Embedder, suffix: str
) -> None:
    root = write_vault({"Bees.md": NOTE})
    with Vault.open(root) as vault:
        vault.index()
        live = IndexLayout(vault.index_dir).live
        (path,) = [p for p in live.root.rglob(f"*{suffix}") if "sentences" in p.name]
        data = bytearray(path.read_bytes())
        data[-40] ^= 0xFF
        damaged = path.with_name(path.name + ".damaged")  # a new inode: never a shared link
        damaged.write_bytes(bytes(data))
        damaged.replace(path)
        problems = vault.manager().verify().problems
        assert any(p.startswith("sentences:") for p in problems), problems


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_a_note_scores_its_best_sentence(
    write_vault: WriteVault, embedder: Embedder, mode: str
) -> None:
    root = write_vault({"Bees.md": NOTE, "Ants.md": "# Ants\n\nAnts farm aphids for honeydew.\n"})
    query = "how many workers live in a bee colony"
    with Vault.open(root) as vault:
        vault.index()
        hit = vault.search(query, mode=mode, explain=True)[0]
    assert hit.path == "Bees.md" and hit.explain is not None
    part = next(p for p in hit.explain.branches if p.branch == "sentences")
    q = embedder.embed_query(query)
    units = embedder.embed_texts(sentence_units(NOTE))
    best = max(float(u @ q / np.linalg.norm(u) / np.linalg.norm(q)) for u in units)
    assert part.raw == pytest.approx(best, abs=2e-3)
    assert hit.explain.total == hit.score


def test_sentences_can_be_turned_off(write_vault: WriteVault, embedder: Embedder) -> None:
    """``embedding.sentences = false``: nothing but chunks is embedded, the sentence index
    stays empty and sound, and search fuses the two other branches alone."""
    from vaultsearch.config import config_from_dict

    root = write_vault({"Bees.md": NOTE})
    config = config_from_dict({"embedding": {"sentences": False}})
    with Vault.open(root, config=config) as vault:
        summary = vault.index()
        assert summary.sentences_embedded == 0 and summary.chunks_embedded == 1
        assert _rows(vault.index_dir) == {}
        assert vault.manager().verify().ok
        ex = vault.search("bee colony workers", explain=True)[0].explain
        assert ex is not None and [p.branch for p in ex.branches] == ["keyword", "semantic"]
        assert ex.total == pytest.approx(1.0 * ex.recency_multiplier + ex.graph_added)
    with Vault.open(root) as vault:  # the default again: a rebuild adds the sentences
        assert vault.check().status == "rebuild"
        assert vault.index().sentences_embedded == 3
        assert len(_rows(vault.index_dir)) == 1


def test_new_catalogs_keep_no_vector_and_the_cache_a_row_in_one_page(
    write_vault: WriteVault, embedder: Embedder
) -> None:
    """The segments hold the only copy of a vector in an index; in the per-user cache an
    embedding row spilled into an overflow page of its own at 4 KB pages, which made five
    times as many vectors cost four times the disk."""
    import sqlite3

    from vaultsearch.store.embedcache import CACHE_FILE, default_cache_dir

    root = write_vault({"Bees.md": NOTE})
    with Vault.open(root) as vault:
        vault.index()
        catalog = IndexLayout(vault.index_dir).live.catalog
    for path in (catalog, default_cache_dir() / CACHE_FILE):
        db = sqlite3.connect(path)
        try:
            assert db.execute("PRAGMA page_size").fetchone()[0] == 8192, path
            rows = db.execute("SELECT count(*) FROM dbstat WHERE pagetype = 'overflow'")
            assert rows.fetchone()[0] == 0, path
            table = "vectors" if path != catalog else "embeddings"
            stored = db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            assert (stored == 0) == (path == catalog), path
        finally:
            db.close()


def test_the_reader_scores_each_chunk_by_its_best_sentence_whatever_the_row_order() -> None:
    """Rows added out of id order (a crash repair adds the missing ones last) are read in
    id order; a chunk without sentences, or unknown, is left out."""
    from vaultsearch.store.derived.sentences import SentenceVectors

    rng = np.random.default_rng(7)
    vectors = {(c, u): rng.normal(size=8).astype(np.float32) for c in (5, 2, 9) for u in range(3)}
    ids = [c << SENTENCE_BITS | u for c, u in vectors]  # chunk 5 first, then 2, then 9
    reader = SentenceVectors.from_arrays(ids, np.stack(list(vectors.values())))
    query = rng.normal(size=8).astype(np.float32)
    got = reader.best(query, [9, 2, 2, 4])
    unit = query / np.linalg.norm(query)
    stored = {k: decode(encode(v, SentencePart.dtype))[0] for k, v in vectors.items()}
    want = {c: max(float(stored[c, u] @ unit) for u in range(3)) for c in (2, 9)}
    assert [c for c, _ in got] == sorted(want, key=lambda c: -want[c])
    for c, cosine in got:
        assert cosine == pytest.approx(want[c], abs=1e-6)
        exact = max(float(vectors[c, u] @ unit / np.linalg.norm(vectors[c, u])) for u in range(3))
        assert cosine == pytest.approx(exact, abs=1e-2)  # int8 codes of 8 components
    assert len(reader) == 9 and reader.best(query, []) == []
