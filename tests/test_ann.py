"""An approximate index beside a large vector segment: written past the threshold,
read with tombstones and ``allowed`` honoured, ranking as flat where it reaches, and
checked and repaired like the segment it belongs to."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import faiss
import numpy as np
import pytest

from tests.conftest import bump_mtime, embeddings, write_files
from tests.corpus import WORDS
from vaultsearch import Vault
from vaultsearch.errors import IndexCorruptError
from vaultsearch.indexing.manager import FIRST_BATCH
from vaultsearch.search.snapshot import Snapshot
from vaultsearch.store import ann
from vaultsearch.store.derived.sentences import SentencePart
from vaultsearch.store.derived.vectors import VectorPart
from vaultsearch.store.segments import Entry, Segment, read_list
from vaultsearch.store.vectors import SegmentedVectors, normalize
from vaultsearch.store.verify import settings_of

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
FORCED = ("index.ann_threshold=0",)
# fewer notes than a first build publishes at once, so that build leaves one segment
NOTES = FIRST_BATCH - 2


def note(i: int, version: int = 0) -> str:
    return (
        f"# Note {i:03d}\n\nAbout the {WORDS[i % 20]} and the {WORDS[(i * 7 + version) % 20]}. "
        f"Version {version}. See [[Note {(i + 1) % NOTES:03d}]].\n"
    )


def open_vault(tmp_path: Path, flags: tuple[str, ...] = FORCED) -> Vault:
    root = tmp_path / "vault"
    if not root.is_dir():
        write_files(root, {f"Note {i:03d}.md": note(i) for i in range(NOTES)})
    return Vault.open(root, index_dir=tmp_path / "index", flags=flags)


def flat_twin(reader: SegmentedVectors) -> SegmentedVectors:
    """The same mapped segments read without their approximate index."""
    return SegmentedVectors(
        reader.dim,
        [Segment(dataclasses.replace(s.entry, ann=None), ids=s.ids, rows=s.rows)
         for s in reader.segments],
    )  # fmt: skip


@pytest.fixture
def vault(tmp_path: Path, embedder: object) -> Vault:
    v = open_vault(tmp_path)
    v.index()
    return v


def test_the_chunk_segments_past_the_threshold_get_an_index_and_sentences_none(
    vault: Vault,
) -> None:
    (entry,) = read_list(VectorPart.location(vault.layout.live)).segments
    assert entry.ann is not None and entry.ann[0] == ann.DEFAULT_KIND
    path = entry.ann_file(vault.layout.live.root / "segments")
    assert path is not None and path.is_file()
    assert all(e.ann is None for e in read_list(SentencePart.location(vault.layout.live)).segments)
    assert vault.manager().verify().ok


def test_below_the_threshold_or_flat_no_index_is_written(tmp_path: Path, embedder: object) -> None:
    for n, flags in enumerate([("index.vector_index=flat", *FORCED), ()]):
        v = open_vault(tmp_path / str(n), flags)
        v.index()
        assert all(e.ann is None for e in read_list(VectorPart.location(v.layout.live)).segments)
        assert not list((v.layout.live.root / "segments").glob("*.faiss"))


def test_search_through_the_index_ranks_as_flat_with_tombstones_and_allowed(
    vault: Vault,
) -> None:
    for version in (1, 2):  # tombstones in the first segment, a second segment
        path = vault.root / "Note 003.md"
        path.write_text(note(3, version), encoding="utf-8")
        bump_mtime(path, seconds=version + 5)
        vault.index()
    snap = Snapshot.open(vault.layout, vault.config)
    reader = snap.reader("vectors").vectors
    assert len(reader.segments) == 2 and reader.segments[0].entry.dead
    assert all(s.entry.ann is not None for s in reader.segments)
    flat = flat_twin(reader)
    dead = set(reader.segments[0].entry.dead)
    ids = reader.ids()
    queries = [normalize(np.asarray(reader.segments[0].rows[i]))[0] for i in range(0, NOTES, 3)]
    for q in queries:
        for k in (1, 5, 10, 60):
            got = reader.search(q, k)
            assert got == flat.search(q, k)
            assert not dead & {i for i, _ in got}
        for allowed in (ids[::2], ids[:3], ids[:0]):  # a wide and a narrow filter
            got = reader.search(q, 10, allowed)
            assert got == flat.search(q, 10, allowed)
            assert {i for i, _ in got} <= set(allowed.tolist())
    # the candidates were decoded alone: no float32 copy of a whole segment is held
    assert not any("decoded" in s.__dict__ for s in reader.segments)


def test_the_approximate_path_finds_the_true_neighbours_of_real_vectors(
    embedder: object,
) -> None:
    """recall@10 against flat on SciFact titles embedded by the bundled model, with
    held-out claims as queries: a graph that lost its way or candidates that pointed at
    other rows would show here, as the rows are many more than the search depth."""
    if not (SCIFACT / "corpus.jsonl").is_file():
        pytest.skip(f"{SCIFACT} is not here (the shared data sits beside the repo)")
    lines = (SCIFACT / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:1500]
    titles = [json.loads(line)["title"] for line in lines]
    claims = [
        json.loads(line)["text"]
        for line in (SCIFACT / "queries.jsonl").read_text(encoding="utf-8").splitlines()[:60]
    ]
    rows = normalize(np.asarray(embedder.embed_texts(titles)))  # type: ignore[attr-defined]
    ids = np.arange(len(rows), dtype=np.int64) * 3
    entry = Entry("memory", len(ids), (), ("", ""), (ann.DEFAULT_KIND, ""))
    index = ann.load_bytes(ann.build(ann.DEFAULT_KIND, rows))
    reader = SegmentedVectors(rows.shape[1], [Segment(entry, ids=ids, rows=rows, ann_index=index)])
    flat = flat_twin(reader)
    found = hits = 0
    for claim in claims:
        q = np.asarray(embedder.embed_query(claim))  # type: ignore[attr-defined]
        truth = flat.search(q, 10)
        got = reader.search(q, 10)
        both = dict(got).keys() & dict(truth).keys()
        hits += len(both)
        found += len(truth)
        assert {i: dict(got)[i] for i in both} == {i: dict(truth)[i] for i in both}
    assert hits / found >= 0.95


@pytest.mark.parametrize("damage", ["flip", "remove"])
def test_check_finds_a_damaged_index_file_and_repair_rebuilds_it_without_embedding(
    vault: Vault, damage: str
) -> None:
    (entry,) = read_list(VectorPart.location(vault.layout.live)).segments
    path = entry.ann_file(vault.layout.live.root / "segments")
    assert path is not None
    before = path.read_bytes()
    if damage == "flip":
        body = bytearray(before)
        body[len(body) // 2] ^= 0xFF
        path.unlink()  # a hard link shared with no one now, as a writer would replace it
        path.write_bytes(bytes(body))
    else:
        path.unlink()
    report = vault.manager().verify()
    assert not report.ok
    assert any(path.name in p for p in report.problems), report.problems
    if damage == "flip":
        snap = Snapshot.open(vault.layout, vault.config)
        with pytest.raises(IndexCorruptError):
            snap.reader("vectors").vectors.search(
                np.asarray(snap.reader("vectors").vectors.segments[0].rows[0]), 5
            )
    cached = embeddings()
    vault.manager().repair()
    assert embeddings() == cached, "the repair embedded something"
    assert vault.manager().verify().ok
    (entry,) = read_list(VectorPart.location(vault.layout.live)).segments
    assert entry.ann is not None


def test_the_writer_builds_the_index_for_a_kept_segment_once_the_setting_asks(
    tmp_path: Path, embedder: object
) -> None:
    first = open_vault(tmp_path, ())
    first.index()
    (entry,) = read_list(VectorPart.location(first.layout.live)).segments
    assert entry.ann is None
    again = open_vault(tmp_path)
    path = again.root / "Note 005.md"
    path.write_text(note(5, 1), encoding="utf-8")
    bump_mtime(path)
    again.index()
    kept, added = read_list(VectorPart.location(again.layout.live)).segments
    assert kept.name == entry.name and kept.ann is not None and added.ann is not None
    part = VectorPart(again.layout.live, settings_of(again.layout.live, again.config))
    assert part.damage({}) is None
    assert again.manager().verify().ok


def test_a_segment_of_many_rows_gets_product_codes_and_its_hits_score_as_flat() -> None:
    """Past ``PQ_MIN_ROWS`` rows the graph holds product-quantizer codes, which keeps the
    file near a third of HNSW32 over 8-bit codes; a hit still scores as flat scores it,
    and the re-scored candidates hold most of flat's top 10."""
    rng = np.random.default_rng(7)
    n, dim = ann.PQ_MIN_ROWS + 16, 384
    centres = rng.standard_normal((200, dim))
    rows = normalize(centres[rng.integers(0, 200, n)] + 0.6 * rng.standard_normal((n, dim)))
    body = ann.build(ann.DEFAULT_KIND, rows)
    index = ann.load_bytes(body)
    assert isinstance(faiss.downcast_index(index.storage), faiss.IndexPQ)
    assert len(body) / n < 300  # HNSW32 over 8-bit codes: 656
    entry = Entry("memory", n, (), ("", ""), (ann.DEFAULT_KIND, ""))
    ids = np.arange(n, dtype=np.int64)
    reader = SegmentedVectors(dim, [Segment(entry, ids=ids, rows=rows, ann_index=index)])
    flat = flat_twin(reader)
    hits = 0
    queries = normalize(centres[:40] + 0.6 * rng.standard_normal((40, dim)))
    for q in queries:
        got, truth = dict(reader.search(q, 10)), dict(flat.search(q, 10))
        both = got.keys() & truth.keys()
        hits += len(both)
        assert {i: got[i] for i in both} == {i: truth[i] for i in both}
    assert hits / (10 * len(queries)) >= 0.9


def test_a_segment_indexed_by_an_older_kind_is_indexed_again_at_the_next_commit(
    vault: Vault,
) -> None:
    """An index written by an older release (HNSW32 over 8-bit codes, kind ``hnsw``)
    stays readable, and the next update writes the current kind in its place."""
    live = vault.layout.live
    listing = read_list(VectorPart.location(live))
    (entry,) = listing.segments
    folder = live.root / "segments"
    current = entry.ann_file(folder)
    assert current is not None and entry.ann is not None
    older = dataclasses.replace(entry, ann=("hnsw", entry.ann[1]))
    old_file = older.ann_file(folder)
    assert old_file is not None
    current.rename(old_file)
    data = json.loads(VectorPart.location(live).read_text(encoding="utf-8"))
    data["segments"][0]["ann"] = ["hnsw", entry.ann[1]]
    VectorPart.location(live).write_text(json.dumps(data), encoding="utf-8")
    path = vault.root / "Note 002.md"
    path.write_text(note(2, 1), encoding="utf-8")
    bump_mtime(path)
    vault.index()
    kept = read_list(VectorPart.location(vault.layout.live)).segments[0]
    assert kept.name == entry.name and kept.ann is not None
    assert kept.ann[0] == ann.DEFAULT_KIND
    assert not list((vault.layout.live.root / "segments").glob("*.hnsw.faiss"))
    assert vault.manager().verify().ok


def _mapped(path: Path) -> bool:
    """Whether this process maps the file (``/proc/self/maps``)."""
    return any(
        line.endswith(str(path)) for line in Path("/proc/self/maps").read_text().splitlines()
    )


def test_a_mapped_index_dropped_when_idle_finds_what_one_read_whole_finds(vault: Vault) -> None:
    """The reader maps the index file instead of copying it, and an idle reader drops it
    (``release_pages``): the candidates are those of the index read whole, and a search
    after the drop maps it again and answers as before."""
    snap = Snapshot.open(vault.layout, vault.config)
    try:
        reader = snap.reader("vectors").vectors
        (seg,) = reader.segments
        assert seg._folder is not None
        path = seg.entry.ann_file(seg._folder)
        assert path is not None
        whole = faiss.read_index(str(path))
        queries = [normalize(np.asarray(seg.rows[i]))[0] for i in range(0, NOTES, 4)]
        mask = np.arange(seg.entry.rows) % 3 != 0
        for q in queries:
            for selected in (None, mask):
                got = ann.candidates(seg.ann_index, q, 10, selected)
                assert got.tolist() == ann.candidates(whole, q, 10, selected).tolist()
        answers = [reader.search(q, 10) for q in queries]
        if Path("/proc/self/maps").is_file():
            assert _mapped(path.resolve())
        snap.release_pages()
        assert "ann_index" not in seg.__dict__
        if Path("/proc/self/maps").is_file():
            assert not _mapped(path.resolve())
        assert [reader.search(q, 10) for q in queries] == answers
        assert "ann_index" in seg.__dict__
    finally:
        snap.close()
