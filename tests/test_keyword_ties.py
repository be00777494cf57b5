"""The keyword branch's top k is a function of the vault, not of the order its chunks
were written: a repair or a rebuild writes the same chunks in another order, and a
catalog rebuilt from the files numbers the chunks of notes edited since anew."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import bump_mtime, write_files
from vaultsearch import Vault
from vaultsearch.store import keywords
from vaultsearch.store.keywords import KeywordDoc, KeywordIndex


def _doc(cid: int, body: str) -> KeywordDoc:
    return KeywordDoc(cid, f"n{cid}.md", f"Note {cid}", (), (), (), body)


DOCS = [_doc(1, "river river stone"), _doc(2, "river river stone")] + [
    _doc(cid, "river stone") for cid in range(3, 13)
]
"""Two chunks above ten that tie with each other: a top 5 cuts through the ten."""


def _index(folder: Path, order: list[KeywordDoc], commits: int = 1) -> KeywordIndex:
    index = KeywordIndex(folder)
    step = -(-len(order) // commits)
    for start in range(0, len(order), step):
        index.add(order[start : start + step])
        index.commit()
    return index


def _ids(index: KeywordIndex, k: int) -> list[int]:
    return [cid for cid, _ in index.search(["river"], k=k)]


def test_a_tie_at_the_cut_is_cut_by_chunk_id_whatever_the_write_order(tmp_path: Path) -> None:
    forward = _index(tmp_path / "forward", DOCS)
    backward = _index(tmp_path / "backward", DOCS[::-1])
    split = _index(tmp_path / "split", DOCS[5:] + DOCS[:5], commits=3)
    for k in (1, 2, 3, 5, 11, 12, 20):
        assert _ids(forward, k) == _ids(backward, k) == _ids(split, k)
    assert _ids(backward, 5) == [1, 2, 3, 4, 5]
    scores = [s for _, s in backward.search(["river"], k=20)]
    assert scores[0] == scores[1] > scores[2] == scores[-1] and len(scores) == 12


def test_a_tie_longer_than_the_fetch_is_cut_among_the_hits_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``TIE_FETCH`` bounds the extra hits read: past it the answer is still k hits,
    best first, and never a hit outside the tie."""
    monkeypatch.setattr(keywords, "TIE_FETCH", 2)
    index = _index(tmp_path / "k", DOCS[::-1])
    got = index.search(["river"], k=3)
    assert [cid for cid, _ in got[:2]] == [1, 2] and len(got) == 3
    assert got[2][0] in range(3, 13) and got[2][1] < got[1][1]


class _Engine:
    """A Milvus client whose sparse search keeps, of equal scores, the hits it stored
    first, as an engine's top-k keeps whatever its segments held first."""

    def __init__(self, stored: list[tuple[int, float]]) -> None:
        self.stored = stored

    def search(self, _collection: str, *, limit: int, **_: object) -> list[list[dict]]:
        ranked = sorted(self.stored, key=lambda h: -h[1])[:limit]
        return [[{"id": c, "distance": s, "entity": {"note_id": c}} for c, s in ranked]]


def test_the_milvus_keyword_side_cuts_a_tie_by_chunk_id_whatever_the_engine_kept() -> None:
    from vaultsearch.search.milvus_reader import MilvusReader, _View

    hits = [(1, 9.0), (2, 9.0)] + [(cid, 4.0) for cid in range(3, 13)]
    answers = []
    for stored in (hits, hits[::-1], hits[5:] + hits[:5]):
        reader = object.__new__(MilvusReader)
        reader.client = _Engine(stored)
        answers.append([c for c, _ in reader._ann("g", "sparse", "river", 5, "", _View())])
    assert answers == [[1, 2, 3, 4, 5]] * 3


def test_a_note_edited_and_written_back_keeps_its_place_among_ties(
    tmp_path: Path, embedder: object
) -> None:
    """Twelve notes tie on "river"; a top 5 cuts the tie. A note edited and written back
    has new chunk ids and new Tantivy documents, last in both orders; an index built
    afresh has neither: both answer the first five notes by path."""
    root = write_files(
        tmp_path / "vault",
        {
            f"n/Note {i:02d}.md": f"# Note {i:02d}\n\nThe river runs past the mill.\n"
            for i in range(12)
        },
    )
    note = root / "n/Note 01.md"
    original = note.read_text()
    edited = Vault.open(root, index_dir=tmp_path / "edited")
    edited.index()
    note.write_text(original + "\nA pond by the mill.\n")
    bump_mtime(note)
    edited.index()
    note.write_text(original)
    bump_mtime(note, 10)
    edited.index()
    Vault.open(root, index_dir=tmp_path / "fresh").index()
    cfg = edited.config.with_search(candidates=5)
    tops = [
        [h.path for h in Vault(root, tmp_path / ix, cfg).search("river", mode="keyword", top_k=5)]
        for ix in ("edited", "fresh")
    ]
    assert tops == [[f"n/Note {i:02d}.md" for i in range(5)]] * 2
