"""The semantic branch's top k is a function of the vault, not of where its vectors sit:
identical notes (templates, copies) give the same vector, so equal cosines, and a
repair, a merge or an edit written back puts the same rows in other segments and
positions. The tie at the k-th cosine is cut by note path, then chunk id, as the keyword
branch cuts its own (``store/ties.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import bump_mtime, write_files
from vaultsearch import Vault
from vaultsearch.store import ann, vectors
from vaultsearch.store.derived.base import Query
from vaultsearch.store.derived.vectors import VectorReader
from vaultsearch.store.segments import Entry, Segment
from vaultsearch.store.vectors import HALF_SCAN_ROWS, encode, normalize

DIM = 32
QUERY = np.eye(DIM, dtype=np.float32)[0]
NEAR = normalize(0.8 * np.eye(DIM)[0] + 0.6 * np.eye(DIM)[1])[0]
TIED = normalize(0.6 * np.eye(DIM)[0] + 0.8 * np.eye(DIM)[1])[0]
CHUNKS = [(1, NEAR), (2, NEAR)] + [(cid, TIED) for cid in range(3, 13)]
"""Two chunks above ten that tie with each other: a top 5 cuts through the ten."""


def _by_path(paths: dict[int, str]):  # type: ignore[no-untyped-def]
    def order(ids: Sequence[int]) -> list[tuple[str, int]]:
        return [(paths.get(c, ""), c) for c in ids]

    return order


BY_ID = _by_path({cid: f"n/{cid:02d}.md" for cid in range(1, 13)})


def _filler(n: int, first_id: int, rng: np.random.Generator) -> list[tuple[int, np.ndarray]]:
    """Rows far below every tied one (a negative cosine with the query)."""
    rows = rng.standard_normal((n, DIM)).astype(np.float32)
    rows[:, 0] = -np.abs(rows[:, 0]) - 1.0
    return list(zip(range(first_id, first_id + n), normalize(rows), strict=True))


def _segment(name: str, kind: str, chunks: list[tuple[int, np.ndarray]], seed: int) -> Segment:
    """A segment of these rows in this order, stored as ``kind`` stores them: float32
    (scanned flat), float16 past ``HALF_SCAN_ROWS`` (scanned in float16, its candidates
    scored flat) or with an approximate index."""
    rng = np.random.default_rng(seed)
    if kind == "half":
        chunks = chunks + _filler(HALF_SCAN_ROWS, 100_000 * (seed + 1), rng)
    elif kind == "ann":
        chunks = chunks + _filler(300, 100_000 * (seed + 1), rng)
    ids = np.array([c for c, _ in chunks], dtype=np.int64)
    vecs = np.stack([v for _, v in chunks])
    rows = encode(vecs, "float32" if kind == "flat" else "float16")
    if kind != "ann":
        return Segment(Entry(name, len(ids), (), ("", "")), ids=ids, rows=rows)
    entry = Entry(name, len(ids), (), ("", ""), (ann.DEFAULT_KIND, ""))
    index = ann.load_bytes(ann.build(ann.DEFAULT_KIND, vectors.decode(rows)))
    return Segment(entry, ids=ids, rows=rows, ann_index=index)


def _reader(kind: str, chunks: list[tuple[int, np.ndarray]], parts: int = 1) -> VectorReader:
    step = -(-len(chunks) // parts)
    segments = [
        _segment(f"s{n}", kind, chunks[start : start + step], n)
        for n, start in enumerate(range(0, len(chunks), step))
    ]
    return VectorReader(DIM, segments)


def _ids(reader: VectorReader, k: int, tie_order=BY_ID) -> list[int]:  # type: ignore[no-untyped-def]
    """The top k's ids, equal cosines by id: which chunks a top k keeps is what is
    compared, not the order of equal ones inside it (fusion gives them one rank)."""
    hits = reader.search(Query(vector=QUERY, tie_order=tie_order), k)
    return [cid for cid, _ in sorted(hits, key=lambda h: (-h[1], h[0]))]


@pytest.mark.parametrize("kind", ["flat", "half", "ann"])
def test_a_tie_at_the_cut_is_cut_by_path_whatever_the_write_order(kind: str) -> None:
    forward = _reader(kind, CHUNKS)
    backward = _reader(kind, CHUNKS[::-1])
    split = _reader(kind, CHUNKS[5:] + CHUNKS[:5], parts=3)
    for k in (1, 2, 3, 5, 11, 12):
        assert _ids(forward, k) == _ids(backward, k) == _ids(split, k), k
    assert _ids(backward, 5) == [1, 2, 3, 4, 5]
    scores = [s for _, s in backward.search(Query(vector=QUERY, tie_order=BY_ID), 12)]
    assert scores[0] == scores[1] > scores[2] == scores[-1]


def test_a_filter_narrower_than_the_graph_cuts_the_tie_by_path_too() -> None:
    """An approximate segment with few rows selected (``allowed``) is scanned flat over
    them: the tie there is read wider and cut alike."""
    allowed = np.array([c for c, _ in CHUNKS] + [100_000, 100_001], dtype=np.int64)
    tops = []
    for order in (CHUNKS, CHUNKS[::-1]):
        reader = _reader("ann", order)
        hits = reader.search(Query(vector=QUERY, tie_order=BY_ID), 5, allowed)
        tops.append(sorted(cid for cid, _ in hits))
    assert tops == [[1, 2, 3, 4, 5]] * 2


@pytest.mark.parametrize("split", [False, True], ids=["one_thread", "scan_pool"])
def test_a_tie_spanning_two_segments_is_read_wider_where_a_segment_holds_more(
    split: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older segment holds ten copies, its paths last-written first; a newer one (an
    edit written back, a repair) three copies of lower paths. A top 5 keeps the newer
    three and the older segment's two lowest paths: that segment's first read (k + 1
    rows) ends inside the tie, so it is read again, wider. A merge of the two segments,
    either way round, keeps the same five."""
    if split:
        monkeypatch.setattr(vectors, "PARALLEL_ROWS", 0)
    older = [(cid, TIED) for cid in range(20, 30)]
    newer = [(cid, TIED) for cid in (1, 2, 3)]
    paths = {cid: f"m/{29 - cid}.md" for cid in range(20, 30)}
    paths.update({cid: f"a/{cid}.md" for cid in (1, 2, 3)})
    order = _by_path(paths)
    two = VectorReader(DIM, [_segment("s0", "flat", older, 0), _segment("s1", "flat", newer, 1)])
    merged = _reader("flat", older + newer)
    merged_back = _reader("flat", newer[::-1] + older[::-1])
    assert _ids(two, 5, order) == _ids(merged, 5, order) == _ids(merged_back, 5, order)
    assert _ids(two, 5, order) == [1, 2, 3, 28, 29]
    assert _ids(two, 13, order) == [1, 2, 3, *range(20, 30)]


def test_a_tie_longer_than_the_fetch_is_cut_among_the_rows_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``TIE_FETCH`` bounds the extra rows read a segment: past it the answer is still k
    hits, best first, and never a row outside the tie."""
    monkeypatch.setattr(vectors, "TIE_FETCH", 2)
    got = _reader("flat", CHUNKS[::-1]).search(Query(vector=QUERY, tie_order=BY_ID), 3)
    assert [cid for cid, _ in got[:2]] == [1, 2] and len(got) == 3
    assert got[2][0] in range(3, 13) and got[2][1] < got[1][1]


class _Engine:
    """A Milvus client whose dense search keeps, of equal scores, the hits it stored
    first, as an engine's top-k keeps whatever its segments held first."""

    def __init__(self, stored: list[tuple[int, float]]) -> None:
        self.stored = stored
        self.limits: list[int] = []

    def search(self, _collection: str, *, limit: int, **_: object) -> list[list[dict]]:
        self.limits.append(limit)
        ranked = sorted(self.stored, key=lambda h: -h[1])[:limit]
        return [[{"id": c, "distance": s, "entity": {"note_id": c}} for c, s in ranked]]


def test_the_milvus_dense_side_cuts_a_tie_by_chunk_id_whatever_the_engine_kept() -> None:
    from vaultsearch.search.milvus_reader import MilvusReader, _View

    hits = [(1, 0.9), (2, 0.9)] + [(cid, 0.5) for cid in range(3, 13)]
    answers, limits = [], []
    reader = object.__new__(MilvusReader)
    for stored in (hits, hits[::-1], hits[5:] + hits[:5]):
        reader.client = engine = _Engine(stored)
        answers.append([c for c, _ in reader._ann("g", "dense", [1.0], 5, "", _View())])
        limits.append(engine.limits)
    assert answers == [[1, 2, 3, 4, 5]] * 3
    assert limits == [[6, 24]] * 3  # k + 1, then four times as many
    reader.client = engine = _Engine([(c, 1.0 - c / 100) for c in range(1, 13)])
    assert [c for c, _ in reader._ann("g", "dense", [1.0], 5, "", _View())] == [1, 2, 3, 4, 5]
    assert engine.limits == [6]  # no tie at the cut: one read


def test_identical_notes_keep_their_semantic_places_after_an_edit_written_back(
    tmp_path: Path, embedder: object
) -> None:
    """Twelve identical notes (one name, one text, twelve folders) tie on every query's
    cosine; a top 5 cuts the tie. A note edited and written back has a new chunk id and
    a new row in a later segment; an index built afresh has neither: both answer the
    first five folders, in semantic and in hybrid search."""
    text = "# Template\n\nThe river runs past the mill.\n"
    root = write_files(tmp_path / "vault", {f"f{i:02d}/Template.md": text for i in range(12)})
    note = root / "f01/Template.md"
    edited = Vault.open(root, index_dir=tmp_path / "edited")
    edited.index()
    note.write_text(text + "\nA pond by the mill.\n")
    bump_mtime(note)
    edited.index()
    note.write_text(text)
    bump_mtime(note, 10)
    edited.index()
    Vault.open(root, index_dir=tmp_path / "fresh").index()
    cfg = edited.config.with_search(candidates=5)
    for mode in ("semantic", "hybrid"):
        vaults = [Vault(root, tmp_path / ix, cfg) for ix in ("edited", "fresh")]
        tops = [[h.path for h in v.search("river mill", mode=mode, top_k=5)] for v in vaults]
        assert tops == [[f"f{i:02d}/Template.md" for i in range(5)]] * 2, mode


def test_identical_notes_keep_their_semantic_places_after_a_vector_repair(
    tmp_path: Path, embedder: object
) -> None:
    """A vector segment of an index whose note was edited and written back is damaged,
    and ``check --repair`` writes the vectors again from the catalog: in chunk id order,
    the edited note's chunk, numbered anew, last. The semantic top 5 is still the first
    five folders."""
    from vaultsearch.cli.main import main
    from vaultsearch.store.layout import IndexLayout

    text = "# Template\n\nThe river runs past the mill.\n"
    root = write_files(tmp_path / "vault", {f"f{i:02d}/Template.md": text for i in range(12)})
    note = root / "f01/Template.md"
    index_dir = tmp_path / "index"
    with Vault.open(root, index_dir=index_dir) as vault:
        vault.index()
        note.write_text(text + "\nA pond by the mill.\n")
        bump_mtime(note)
        vault.index()
        note.write_text(text)
        bump_mtime(note, 10)
        vault.index()
        cfg = vault.config.with_search(candidates=5)
    folder = IndexLayout(index_dir).live.root / "segments"
    segment = sorted(folder.glob("vectors-*.rows.npy"))[0]
    data = bytearray(segment.read_bytes())
    data[-100] ^= 0x10
    segment.unlink()  # a new file: the old one may still be mapped
    segment.write_bytes(bytes(data))
    args = [str(root), "--index-dir", str(index_dir)]
    assert main(["check", *args]) != 0
    assert main(["check", "--repair", *args]) == 0
    assert main(["check", *args]) == 0
    with Vault(root, index_dir, cfg) as vault:
        top = [h.path for h in vault.search("river mill", mode="semantic", top_k=5)]
    assert top == [f"f{i:02d}/Template.md" for i in range(5)]
