"""Vectors in immutable segments: an edit links what it keeps and writes only what it
adds, compaction keeps the list short, a search ranks as one flat index over the
catalog's embeddings would, and nothing maps a vector until a search needs it."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import faiss
import numpy as np
import pytest

from tests.conftest import bump_mtime, live_catalog, write_files
from tests.corpus import WORDS
from vaultsearch import Vault
from vaultsearch.search.snapshot import Snapshot
from vaultsearch.store.catalog import SENTENCE_BITS
from vaultsearch.store.derived import derived
from vaultsearch.store.derived.sentences import SentenceVectors
from vaultsearch.store.derived.vectors import VectorPart
from vaultsearch.store.embedcache import CACHE_ENV, EmbeddingCache, default_cache_dir
from vaultsearch.store.layout import IndexLayout
from vaultsearch.store.segments import (
    MAX_DEAD,
    MAX_SEGMENTS,
    TIER,
    Entry,
    Segment,
    merge_plan,
    open_segments,
    read_list,
    tier,
    write_segment,
)
from vaultsearch.store.vectors import (
    HALF_SCAN_ROWS,
    SegmentedVectors,
    decode,
    dot_rows,
    encode,
    normalize,
)
from vaultsearch.store.verify import settings_of


def note(i: int, version: int = 0) -> str:
    return (
        f"# Note {i:03d}\n\nAbout the {WORDS[i % 20]} and the {WORDS[(i + version) % 20]}. "
        f"Version {version} of it. See [[Note {(i + 1) % 30:03d}]].\n"
    )


def edit(root: Path, i: int, version: int) -> None:
    path = root / f"Note {i:03d}.md"
    path.write_text(note(i, version), encoding="utf-8")
    bump_mtime(path, seconds=version + 5)


@pytest.fixture
def vault(tmp_path: Path, embedder: object) -> Vault:
    root = write_files(tmp_path / "vault", {f"Note {i:03d}.md": note(i) for i in range(30)})
    v = Vault.open(root, index_dir=tmp_path / "index")
    v.index()
    return v


def _files(layout: IndexLayout) -> dict[str, os.stat_result]:
    folder = layout.live.root / "segments"
    return {p.name: p.stat() for p in folder.iterdir()}


def test_an_edit_links_the_segments_it_keeps_and_writes_only_its_rows(vault: Vault) -> None:
    before = _files(vault.layout)
    old = vault.status()
    edit(vault.root, 3, 1)
    vault.index()
    after = _files(vault.layout)
    kept = {n for n in before if n in after and after[n].st_ino == before[n].st_ino}
    assert kept == set(before), "a segment of the last generation was copied or dropped"
    new = set(after) - set(before)
    assert {n.split("-")[0] for n in new} == {"vectors", "sentences"}
    for index in ("vectors", "sentences"):
        first, added = read_list(derived(index).location(vault.layout.live)).segments
        assert first.dead and added.rows and not added.dead  # the old rows tombstoned
    vectors = read_list(VectorPart.location(vault.layout.live)).segments
    assert (len(vectors[0].dead), vectors[1].rows) == (1, 1)  # note 3 is one chunk
    status = vault.status()
    assert (status["vectors"], status["chunks"]) == (old["vectors"], old["chunks"])
    assert vault.manager().verify().ok


def test_compaction_bounds_segments_and_dead_rows_and_leaves_readers_alone(
    vault: Vault,
) -> None:
    held = Snapshot.open(vault.layout, vault.config)
    query = normalize(held.reader("vectors").vectors.segments[0].rows[0])[0]
    seen = held.reader("vectors").nearest(query, 10)
    for version in range(1, 2 * MAX_SEGMENTS + 2):
        edit(vault.root, version % 4, version)  # four notes, again and again: dead rows
        vault.index()
        for index in ("vectors", "sentences"):
            listing = read_list(derived(index).location(vault.layout.live))
            assert len(listing.segments) <= MAX_SEGMENTS
            for entry in listing.segments:
                assert len(entry.dead) <= MAX_DEAD * entry.rows
    assert held.reader("vectors").nearest(query, 10) == seen  # the held generation is never written
    held.close()
    assert vault.manager().verify().ok
    catalog = live_catalog(vault.index_dir)
    want = sorted(catalog.chunk_ids())
    catalog.close()
    snap = Snapshot.open(vault.layout, vault.config)
    assert sorted(snap.reader("vectors").ids().tolist()) == want
    snap.close()


def _append_all(steps: list[int]) -> tuple[int, list[int]]:
    """Rows written by the commits of these appends (one new segment each, merged as
    ``merge_plan`` says, as ``VectorPart.commit`` does), and the live segments' sizes."""
    entries: list[Entry] = []
    written = 0
    for n, rows in enumerate(steps):
        items = [*entries, Entry("", rows, (), ("", ""))]
        groups = merge_plan(items)
        assert [i for g in groups for i in g] == list(range(len(items)))  # order kept
        entries = []
        for group in groups:
            if len(group) == 1 and items[group[0]].name:
                entries.append(items[group[0]])
                continue
            size = sum(items[i].live for i in group)
            written += size
            entries.append(Entry(f"s{n}", size, (), ("", "")))
    return written, [e.rows for e in entries]


@pytest.mark.parametrize(
    "steps",
    [
        [300] + [3000] * 330,  # a first build publishing step by step, to a million rows
        [300] + [1800 + (n * 7919) % 2400 for n in range(330)],  # steps of unlike sizes
        [1] * 5000,  # one-row edits
        [7, 4000, 2, 2, 90000, 1, 1, 1, 600, 30, 250000] * 8,  # unlike sizes in turn
    ],
)
def test_appends_rewrite_each_row_a_logarithmic_number_of_times(steps: list[int]) -> None:
    total = sum(steps)
    written, sizes = _append_all(steps)
    assert sum(sizes) == total
    rewrites = written / total  # each row's first write included
    assert rewrites <= tier(total) + 1, (rewrites, tier(total))
    assert len(sizes) <= MAX_SEGMENTS
    if max(steps[1:]) <= TIER * min(steps[1:]):  # like appends do not pile up
        assert len(sizes) <= (TIER - 1) * (tier(total) + 1)


def _flat(ids: np.ndarray, rows: np.ndarray) -> faiss.Index:
    index = faiss.IndexIDMap2(faiss.IndexFlatIP(rows.shape[1]))
    index.add_with_ids(rows, ids)
    return index


def _as_flat(
    flat: faiss.Index, query: np.ndarray, k: int, allowed: np.ndarray | None
) -> list[tuple[int, float]]:
    params = None
    if allowed is not None:
        params = faiss.SearchParameters(sel=faiss.IDSelectorBatch(allowed))  # type: ignore[call-arg]
    scores, ids = flat.search(normalize(query), k, params=params)
    return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i != -1]


def _segments(
    rng: np.random.Generator, sizes: list[int], dead_share: float, dim: int = 16
) -> tuple[list[Segment], np.ndarray, np.ndarray, np.ndarray]:
    """Segments of random rows, many repeated (ties within and across segments), some
    tombstoned; with the live ids and rows in position order, and the repeated rows."""
    base = normalize(rng.standard_normal((8, dim), dtype=np.float32))
    segments, live_ids, live_rows, next_id = [], [], [], 0
    for n, size in enumerate(sizes):
        rows = normalize(rng.standard_normal((size, dim), dtype=np.float32))
        rows[rng.random(size) < 0.4] = base[rng.integers(0, 8)]
        ids = np.arange(next_id, next_id + size, dtype=np.int64)
        next_id += size
        dead = tuple(int(i) for i in ids[rng.random(size) < dead_share])
        segments.append(Segment(Entry(f"s{n}", size, dead, ("", "")), ids=ids, rows=rows))
        keep = ~np.isin(ids, dead)
        live_ids.append(ids[keep])
        live_rows.append(rows[keep])
    return segments, np.concatenate(live_ids), np.concatenate(live_rows), base


@pytest.mark.parametrize("sizes", [[90], [40, 7, 25, 1, 12]], ids=["one", "five"])
def test_segments_rank_as_one_flat_index_of_their_live_rows(sizes: list[int]) -> None:
    """The same scores as FAISS's flat index over the live rows in order, with tombstones
    and filters; the same ids, ties included, when there is one segment (a fresh build).
    Across segments a tie for the last places may be broken otherwise: tied results
    share a rank in fusion, so only that cut can differ."""
    rng = np.random.default_rng(11)
    segments, ids, rows, base = _segments(rng, sizes, dead_share=0.25)
    reader = SegmentedVectors(rows.shape[1], segments)
    flat = _flat(ids, rows)
    assert len(reader) == flat.ntotal
    for trial in range(60):
        query = base[trial % 8] + 0.05 * rng.standard_normal(rows.shape[1], dtype=np.float32)
        allowed = None if trial % 3 else rng.choice(sum(sizes), 30, replace=False)
        for k in (1, 3, 10, 200):
            got = reader.search(query, k, allowed)
            want = _as_flat(flat, query, k, allowed)
            assert [s for _, s in got] == [s for _, s in want]
            if len(sizes) == 1:
                assert got == want
                continue
            last = want[-1][1]
            assert {i for i, s in got if s > last} == {i for i, s in want if s > last}
            tied = {int(i) for i, s in _as_flat(flat, query, len(ids), allowed) if s == last}
            assert {i for i, s in got if s == last} <= tied


def test_a_large_float16_segment_is_scanned_in_float16_and_ranks_as_flat() -> None:
    """A float16 segment past ``HALF_SCAN_ROWS`` is scanned by FAISS's float16 kernel and
    its candidates scored by the flat one: the same scores as a flat index over its
    decoded live rows, the same ids above the last place, and a tie for the last place
    taken earliest position first (identical notes tie); no float32 copy is held."""
    rng = np.random.default_rng(23)
    size, dim = HALF_SCAN_ROWS + 1500, 384
    base = normalize(rng.standard_normal((40, dim), dtype=np.float32))
    vectors = normalize(rng.standard_normal((size, dim), dtype=np.float32))
    repeated = rng.random(size) < 0.5
    vectors[repeated] = base[rng.integers(0, 40, int(repeated.sum()))]
    rows = encode(vectors, "float16")
    ids = np.arange(1000, 1000 + size, dtype=np.int64)
    dead = tuple(int(i) for i in ids[rng.random(size) < 0.1])
    seg = Segment(Entry("half", size, dead, ("", "")), ids=ids, rows=rows)
    reader = SegmentedVectors(dim, [seg])
    live = ~np.isin(ids, dead)
    decoded = decode(rows)
    flat = _flat(ids[live], decoded[live])
    for trial in range(40):
        near = base[trial % 40] if trial % 2 else vectors[trial]
        query = near + 0.02 * rng.standard_normal(dim, dtype=np.float32)
        allowed = None if trial % 4 else rng.choice(ids, 4000, replace=False)
        for k in (1, 10, 100, 300):
            got = reader.search(query, k, allowed)
            want = _as_flat(flat, query, k, allowed)
            assert [s for _, s in got] == [s for _, s in want]
            last = want[-1][1]
            assert {i for i, s in got if s > last} == {i for i, s in want if s > last}
            every = _as_flat(flat, query, size, allowed)
            tied = sorted(int(i) for i, s in every if s == last)  # ids rise with position
            assert sorted(i for i, s in got if s == last) == tied[: sum(s == last for _, s in got)]
    assert "decoded" not in seg.__dict__ and "half_index" in seg.__dict__


def test_a_built_index_ranks_as_flat_numpy_over_the_embeddings_as_stored(vault: Vault) -> None:
    """After edits (several segments, tombstones), semantic top-10 lists equal the ranking
    by the cosine with each chunk's embedding (from the per-user cache, where every
    computed one goes) rounded to float16 as the segments store it, and the scores agree."""
    for version in (1, 2, 3):
        edit(vault.root, version * 5, version)
        vault.index()
    catalog = live_catalog(vault.index_dir)
    ids, hashes = catalog.chunk_hashes(sorted(catalog.chunk_ids()))
    catalog.close()
    key = settings_of(vault.layout.live, vault.config).embedding_key
    cache = EmbeddingCache(default_cache_dir(), 1 << 40)
    try:
        blobs = cache.get(key, hashes)
    finally:
        cache.close()
    embedded = np.stack([np.frombuffer(blobs[h], dtype=np.float32) for h in hashes])
    stored = decode(encode(embedded, VectorPart.dtype))
    assert VectorPart.dtype == "float16" and not np.array_equal(stored, normalize(embedded))
    assert len(read_list(VectorPart.location(vault.layout.live)).segments) > 1
    embedder = vault.orchestrator.embedder
    snap = Snapshot.open(vault.layout, vault.config)
    try:
        for word in WORDS:
            query = embedder.embed_query(f"notes about the {word}")
            got = snap.reader("vectors").nearest(query, 10)
            cosines = stored @ normalize(query)[0]
            assert [s for _, s in got] == pytest.approx(np.sort(cosines)[::-1][:10], abs=1e-6)
            assert all(a[1] >= b[1] for a, b in itertools.pairwise(got))
            want = {int(i) for i in ids[np.argsort(-cosines)[:10]]}
            tenth = np.sort(cosines)[::-1][9]
            unsure = {int(i) for i in ids[np.abs(cosines - tenth) < 1e-6]}
            assert {i for i, _ in got} - unsure == want - unsure
    finally:
        snap.close()


def test_sentence_segments_score_only_live_rows() -> None:
    """A chunk whose id came back after a delete has its old rows tombstoned in an older
    segment: only the new rows count."""
    rng = np.random.default_rng(5)
    old = normalize(rng.standard_normal((3, 8), dtype=np.float32))
    new = normalize(rng.standard_normal((2, 8), dtype=np.float32))
    query = old[0]
    ids_old = np.array(
        [7 << SENTENCE_BITS | 0, 7 << SENTENCE_BITS | 1, 7 << SENTENCE_BITS | 2], dtype=np.int64
    )
    ids_new = np.array([7 << SENTENCE_BITS | 0, 7 << SENTENCE_BITS | 1], dtype=np.int64)
    dead = tuple(int(i) for i in ids_old)
    reader = SentenceVectors(
        8,
        [
            Segment(Entry("a", 3, dead, ("", "")), ids=ids_old, rows=old.astype(np.float16)),
            Segment(Entry("b", 2, (), ("", "")), ids=ids_new, rows=new.astype(np.float16)),
        ],
    )
    ((chunk, best),) = reader.best(query, [7])
    assert chunk == 7 and best == pytest.approx(float(np.max(new @ query)), abs=2e-3)
    assert len(reader) == 2


def _mapped(folder: Path) -> set[str]:
    maps = Path("/proc/self/maps").read_text()
    return {Path(line.split()[-1]).name for line in maps.splitlines() if str(folder) in line}


@pytest.mark.skipif(not Path("/proc/self/maps").is_file(), reason="needs /proc/self/maps")
def test_status_and_keyword_search_map_no_vectors(vault: Vault) -> None:
    folder = vault.layout.live.root / "segments"
    assert vault.status()["vectors"] == 30
    assert vault.search("glacier", mode="keyword")
    assert _mapped(folder) == set()
    assert vault.search("glacier", mode="semantic")
    assert any(name.endswith(".rows.npy") for name in _mapped(folder))


def _rows_by_id(layout: IndexLayout, index: str) -> dict[int, bytes]:
    """Every live row's stored bytes, by id."""
    _, segments = open_segments(derived(index).location(layout.live))
    out: dict[int, bytes] = {}
    for seg in segments:
        ids, rows = np.asarray(seg.ids), np.asarray(seg.rows)
        if seg.live_mask is not None:
            ids, rows = ids[seg.live_mask], rows[seg.live_mask]
        out.update((int(i), r.tobytes()) for i, r in zip(ids, rows, strict=True))
    return out


@pytest.mark.parametrize("index", ["vectors", "sentences"])
def test_a_damaged_segment_is_repaired_from_the_whole_ones_and_the_cache_bit_for_bit(
    vault: Vault, index: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The segments hold the only copy of a vector in the index: a repair copies the
    rows of the segments still whole and takes the damaged one's from the per-user cache,
    embedding nothing; with the cache off, it rebuilds from the files and embeds what
    was lost. Either way every row holds the bytes written before the damage."""
    edit(vault.root, 3, 1)
    vault.index()
    part = derived(index)
    before = _rows_by_id(vault.layout, index)
    assert len(read_list(part.location(vault.layout.live)).segments) == 2
    assert part.dtype == {"vectors": "float16", "sentences": "int8"}[index]
    vault.close()
    for cache in ("on", "off"):
        if cache == "off":
            monkeypatch.setenv(CACHE_ENV, "off")
        live = vault.layout.live
        first = read_list(part.location(live)).segments[0]
        rows_file = first.files(live.root / "segments")[1]
        body = bytearray(rows_file.read_bytes())
        body[-40:] = bytes(40)  # in the rows, past the .npy header
        replace = rows_file.with_name(rows_file.name + ".new")
        replace.write_bytes(bytes(body))
        replace.replace(rows_file)  # a new file: the earlier generations keep theirs
        with Vault.open(vault.root, index_dir=vault.index_dir) as v:
            assert not v.manager().verify().ok
            summary = v.manager().repair()
            embedded = summary.chunks_embedded + summary.sentences_embedded
            assert (embedded == 0) == (cache == "on"), (cache, summary.repaired)
            assert v.manager().verify().ok
            after = _rows_by_id(v.layout, index)
            # a rebuild from the files makes a new catalog, with new chunk ids
            assert sorted(after.values()) == sorted(before.values()), cache
            assert (after == before) == (cache == "on"), cache


def test_segments_split_between_two_threads_rank_as_scanned_on_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A search whose segments are split between this thread and the scan thread
    (``scanpool``) returns what one thread scanning them all returns, ties and filters
    included, and the split did run (the scan thread scanned some)."""
    import threading

    import vaultsearch.store.vectors as vectors

    rng = np.random.default_rng(5)
    segments, _, rows, base = _segments(rng, [40, 7, 25, 1, 12, 30], dead_share=0.2)
    reader = SegmentedVectors(rows.shape[1], segments)
    queries = [base[t % 8] + 0.05 * rng.standard_normal(16, dtype=np.float32) for t in range(30)]
    cases = [
        (q, k, None if t % 3 else rng.choice(115, 30, replace=False))
        for t, q in enumerate(queries)
        for k in (1, 5, 10, 200)
    ]
    monkeypatch.setattr(vectors, "PARALLEL_ROWS", 10**9)
    alone = [reader.search(q, k, allowed) for q, k, allowed in cases]
    threads: set[str] = set()
    top = vectors._segment_top

    def seen(*args: object, **kwargs: object) -> object:
        threads.add(threading.current_thread().name)
        return top(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(vectors, "_segment_top", seen)
    monkeypatch.setattr(vectors, "PARALLEL_ROWS", 0)
    split = [reader.search(q, k, allowed) for q, k, allowed in cases]
    assert split == alone
    assert any(t.startswith("vaultsearch-scan") for t in threads) and len(threads) == 2


def test_the_scan_halves_are_of_like_cost_and_a_failed_half_waits_for_the_other() -> None:
    import time

    from vaultsearch.store import scanpool

    assert scanpool.halves([5, 1, 1, 3, 2]) == ([0, 1], [2, 3, 4])
    assert scanpool.halves([7]) == ([0], [])
    done: list[str] = []

    def slow() -> str:
        time.sleep(0.05)
        done.append("there")
        return "there"

    def fails() -> str:
        raise RuntimeError("here")

    assert scanpool.both(lambda: "here", slow) == ("here", "there")
    with pytest.raises(RuntimeError):
        scanpool.both(fails, slow)
    assert done == ["there", "there"]


def test_scores_across_segments_are_each_rows_cosine_in_the_order_asked() -> None:
    """``scores`` scores each segment's rows where they were decoded and orders the
    scores: the same pairs as the rows gathered in order and scored (``vectors_of``)."""
    rng = np.random.default_rng(8)
    segments, ids, rows, base = _segments(rng, [40, 7, 25, 1, 12], dead_share=0.2)
    reader = SegmentedVectors(rows.shape[1], segments)
    for trial in range(20):
        asked = rng.choice(np.r_[ids, [500, 501]], 40)  # repeats, and ids no segment holds
        query = base[trial % 8]
        held, vectors = reader.vectors_of(asked)
        got_ids, cosines = reader.scores(query, asked)
        assert (
            got_ids.tolist()
            == held.tolist()
            == list(dict.fromkeys(int(i) for i in asked if i in set(ids.tolist())))
        )
        assert cosines.tolist() == dot_rows(vectors, normalize(query)[0]).tolist()


def test_what_a_split_scan_keeps_on_a_segment_is_made_on_the_searching_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A float16 segment's scan index is held until the reader idles; made on the scan
    thread, its memory went back to that thread's heap when dropped, and stayed there.
    The segment scanned on the scan thread gets it made by the searching thread."""
    import threading

    import vaultsearch.store.vectors as vectors

    rng = np.random.default_rng(3)
    dim = 16
    half = normalize(rng.standard_normal((HALF_SCAN_ROWS + 100, dim), dtype=np.float32))
    flat = normalize(rng.standard_normal((HALF_SCAN_ROWS + 900, dim), dtype=np.float32))
    segments = [
        Segment(
            Entry("half", len(half), (), ("", "")),
            ids=np.arange(len(half)),
            rows=encode(half, "float16"),
        ),
        Segment(
            Entry("flat", len(flat), (), ("", "")), ids=np.arange(len(flat)) + 10**6, rows=flat
        ),
    ]
    made: list[str] = []
    scanned: dict[str, str] = {}
    index_of, top = vectors._half_index, vectors._segment_top

    def recorded_index(seg: Segment) -> object:
        if "half_index" not in seg.__dict__:
            made.append(threading.current_thread().name)
        return index_of(seg)

    def recorded_top(query: np.ndarray, seg: Segment, *rest: object) -> object:
        scanned[seg.entry.name] = threading.current_thread().name
        return top(query, seg, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(vectors, "_half_index", recorded_index)
    monkeypatch.setattr(vectors, "_segment_top", recorded_top)
    monkeypatch.setattr(vectors, "PARALLEL_ROWS", 0)
    SegmentedVectors(dim, segments).search(half[0], 10)
    assert scanned["half"].startswith("vaultsearch-scan")
    assert made == [threading.current_thread().name]


def test_a_float16_scan_scores_only_its_near_candidates_from_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Of the 2k rows the float16 scan returns, only those within ``HALF_SLACK`` of its
    k-th are scored by the flat kernel (the others cannot reach the top k), and their
    rows are read from the scan index's own copy, not from the file; the results are a
    flat scan's."""
    import vaultsearch.store.vectors as vectors

    rng = np.random.default_rng(5)
    size, dim = HALF_SCAN_ROWS + 500, 384
    rows = encode(normalize(rng.standard_normal((size, dim), dtype=np.float32)), "float16")
    ids = np.arange(size, dtype=np.int64) * 3
    entry = write_segment(tmp_path, "v-000001-000", ids, rows)
    seg = Segment(entry, tmp_path)
    reader = SegmentedVectors(dim, [seg])
    flat = _flat(ids, decode(rows))
    decoded: list[int] = []
    real_decode = vectors.decode

    def counted(block: np.ndarray) -> np.ndarray:
        decoded.append(len(block))
        return real_decode(block)

    def no_file(*args: object) -> np.ndarray:
        raise AssertionError("a candidate row was read from the file")

    monkeypatch.setattr(vectors, "decode", counted)
    monkeypatch.setattr(Segment, "take_rows", no_file)
    for _ in range(10):
        query = rng.standard_normal(dim, dtype=np.float32)
        decoded.clear()
        got = reader.search(query, 10)
        assert got == _as_flat(flat, query, 10, None)
        assert decoded and sum(decoded) < 20, decoded
