"""The keyword branch's top k is a function of the chunks, not of the order Tantivy
was given them: a repair or a rebuild writes the same chunks in another order."""

from __future__ import annotations

from pathlib import Path

import pytest

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
