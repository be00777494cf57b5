"""A reader that follows a writer (reloading only the notes a run changed, applying only
the graph records that differ, keeping the vector segments it mapped) must answer
exactly as a reader that opens the same generation from nothing: same maps, same
graph, same boilerplate, same hits with the same scores. Compared, not trusted."""

from __future__ import annotations

import os
import random
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from tests.conftest import HANG_GUARD, bump_mtime, write_files
from vaultsearch import Vault
from vaultsearch.search import chunklayer
from vaultsearch.search.idlepages import IdleRelease
from vaultsearch.search.snapshot import Snapshot
from vaultsearch.store.graph import graph_data
from vaultsearch.store.segments import Segment, write_segment

FOOTER = "## About these notes\n\nWritten for the river survey; corrections welcome.\n"
QUERIES = ("river stone", "heron nesting", "survey corrections", "granite", "otter")


def _note(i: int, links: str = "", footer: bool = True) -> str:
    words = ("river stone", "heron nesting", "granite ledge", "otter tracks")[i % 4]
    body = f"---\ntags: [t{i % 3}]\n---\n# Note {i}\n\nNote {i} is about {words} {i}.\n{links}\n"
    return body + ("\n" + FOOTER if footer else "")


def _vault(root: Path) -> Path:
    files = {
        f"n{i:02d}.md": _note(i, f"See [[n{(i + 1) % 24:02d}]].", i % 5 != 0) for i in range(24)
    }
    files["hub.md"] = "# Hub\n\n" + " ".join(f"[[n{i:02d}]]" for i in range(0, 24, 3)) + "\n"
    files["sub/deep.md"] = "# Deep\n\nGranite under the river. [[hub]] [[missing note]]\n"
    return write_files(root, files)


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    bump_mtime(path)


def _steps(root: Path) -> list[tuple[str, Callable[[], None]]]:
    def rename(a: str, b: str) -> Callable[[], None]:
        def move() -> None:
            (root / b).parent.mkdir(parents=True, exist_ok=True)
            shutil.move(root / a, root / b)

        return move

    return [
        ("edit", lambda: _write(root, "n03.md", _note(3, "Now otter tracks too. [[hub]]"))),
        ("new note linking in", lambda: _write(root, "new.md", "# New\n\nOtter [[n01]] [[n02]]\n")),
        ("rename", rename("n05.md", "moved/n05b.md")),
        ("delete a linked note", lambda: (root / "n07.md").unlink()),
        ("it comes back", lambda: _write(root, "n07.md", _note(7, "Back. [[n08]]"))),
        ("link target appears", lambda: _write(root, "missing note.md", "# Missing\n\nFound.\n")),
        ("footer everywhere", lambda: [_write(root, f"n{i:02d}.md", _note(i)) for i in (0, 10)]),
        ("many deleted", lambda: [(root / f"n{i:02d}.md").unlink() for i in range(12, 20)]),
        (
            "edit after deletes",
            lambda: _write(root, "hub.md", "# Hub\n\nGranite [[n01]] [[new]]\n"),
        ),
        ("rename onto a deleted path", rename("n21.md", "n12.md")),
    ]


def _maps(snap: Snapshot) -> tuple[object, ...]:
    return (
        list(snap.notes.items()),
        snap.note_by_path,
        snap.note_of_chunk,
        {k: v.tolist() for k, v in snap.chunks_by_note.items()},
    )


def _same_readers(followed: Snapshot, fresh: Snapshot) -> None:
    assert followed.damaged == fresh.damaged == {}
    g1, g2 = followed.reader("graph"), fresh.reader("graph")
    assert _shape(g1.graph) == _shape(g2.graph)
    assert g1.records == g2.records
    assert len(g1) == len(g2)
    for name in ("vectors", "sentences"):
        r1, r2 = followed.reader(name), fresh.reader(name)
        assert len(r1) == len(r2)
        for s1, s2 in zip(r1.segments, r2.segments, strict=True):
            assert s1.entry == s2.entry
            assert np.array_equal(s1.ids, s2.ids) and np.array_equal(s1.rows, s2.rows)
    assert followed.boilerplate == fresh.boilerplate


def _answers(vault: Vault) -> list[object]:
    out: list[object] = []
    for query in QUERIES:
        for mode in ("hybrid", "keyword", "semantic"):
            hits = vault.search(query, top_k=8, mode=mode)
            out.append((query, mode, hits.degraded, [h.to_dict() for h in hits]))
    return out


def _counts(vault: Vault) -> dict[str, object]:
    return {k: v for k, v in vault.status().items() if isinstance(v, int | str)}


@pytest.mark.parametrize("compact_min", [512, 2])
def test_a_followed_snapshot_answers_as_a_fresh_one(
    tmp_path: Path, embedder: object, monkeypatch: pytest.MonkeyPatch, compact_min: int
) -> None:
    """``compact_min`` 2: the graph delta is folded into a new base every few edits, so
    the graph is read whole at some steps and followed at others; the chunk map's layer
    likewise (``search/chunklayer.py``)."""
    monkeypatch.setattr("vaultsearch.store.derived.graph.COMPACT_MIN", compact_min)
    monkeypatch.setattr(chunklayer, "FOLD", 10**9)
    monkeypatch.setattr(chunklayer, "FOLD_AT_LEAST", 10**9 if compact_min > 2 else 6)
    layered = []
    root = _vault(tmp_path / "vault")
    writer = Vault.open(root)
    writer.index()
    reader = Vault.open(root)
    assert _answers(reader)  # holds a snapshot and finds its boilerplate, as a server does
    graph_read_whole = []
    for label, step in _steps(root):
        step()
        writer.index()
        followed = reader.orchestrator.snapshot()
        assert followed.followed_paths is not None, label
        assert followed.followed_paths, label
        fresh = Snapshot.open(reader.layout, reader.config)
        try:
            assert _maps(followed) == _maps(fresh), label
            _same_readers(followed, fresh)
        finally:
            fresh.close()
        if not followed.reader("graph").followed:
            graph_read_whole.append(label)
        layered.append(isinstance(followed.chunks_by_note, chunklayer.LayeredChunks))
        other = Vault.open(root)  # its own orchestrator: every generation read whole
        try:
            assert _answers(reader) == _answers(other), label
            assert _counts(reader) == _counts(other), label
        finally:
            other.close()
    if compact_min == 512:  # a base note deleted and back: its links from the base
        assert graph_read_whole == ["it comes back", "rename onto a deleted path"]
    else:
        assert 0 < len(graph_read_whole) < len(_steps(root))
    assert all(layered) if compact_min > 2 else 0 < sum(layered) < len(layered)
    writer.close()
    reader.close()


def test_a_followed_graph_reads_only_the_new_parts_through_merges(
    tmp_path: Path, embedder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One-note edits, each a delta part, merged as they pile up (``tier_runs``), with a
    note appearing that others link to and one deleted: the follower reads only the
    parts it lacks (a merged part replacing parts it had included) and must hold the
    records and graph a fresh reader builds from the whole delta."""
    from vaultsearch.store.derived.graph import LinkGraph

    monkeypatch.setattr("vaultsearch.store.derived.graph.COMPACT_MIN", 512)
    made: list[bool] = []
    follow = LinkGraph.follow

    def counted(self: LinkGraph, *args: object) -> LinkGraph | None:
        out = follow(self, *args)  # type: ignore[arg-type]
        made.append(out is not None)
        return out

    monkeypatch.setattr(LinkGraph, "follow", counted)
    root = _vault(tmp_path / "vault")
    writer = Vault.open(root)
    writer.index()
    reader = Vault.open(root)
    reader.search("river stone")
    edits = [("n03.md", _note(3, f"Edit {k}. [[hub]]")) for k in range(6)]
    edits += [("late.md", "# Late\n\nOtter.\n")]
    edits += [(f"n{i:02d}.md", _note(i, "[[late]] and [[n01]]")) for i in range(8, 14)]
    merged_away = 0
    before: set[object] = set()
    for step, (rel, text) in enumerate([*edits, ("n09.md", None)]):
        if step % 3 == 2:  # a run the reader does not see: two new parts at once
            _write(root, "n20.md", _note(20, f"Unseen {step}. [[n0{step % 7}]]"))
            writer.index()
        if text is None:
            (root / rel).unlink()
        else:
            _write(root, rel, text)
        writer.index()
        graph = reader.orchestrator.snapshot().reader("graph")
        fresh = Snapshot.open(reader.layout, reader.config)
        try:
            whole = fresh.reader("graph")
            assert graph.records == whole.records, rel
            assert _shape(graph.graph) == _shape(whole.graph), rel
            assert len(graph) == len(whole), rel
        finally:
            fresh.close()
        merged_away += bool(before - set(graph.parts))
        before = set(graph.parts)
    assert made.count(True) >= len(edits) - 1
    assert merged_away >= 1
    writer.close()
    reader.close()


def test_a_reader_that_missed_a_run_or_a_rebuild_reads_the_generation_whole(
    tmp_path: Path, embedder: object
) -> None:
    root = _vault(tmp_path / "vault")
    writer = Vault.open(root)
    writer.index()
    reader = Vault.open(root)
    reader.search("river stone")
    for i in (1, 2):  # two runs between two searches: the second lists changes since the first
        _write(root, f"n0{i}.md", _note(i, "Otter otter."))
        writer.index()
    skipped = reader.orchestrator.snapshot()
    assert skipped.followed_paths is None
    _write(root, "n04.md", _note(4, "Heron heron."))
    writer.index()
    assert reader.orchestrator.snapshot().followed_paths == ["n04.md"]
    writer.index(full=True)  # a new catalog file: nothing of the old one applies
    rebuilt = reader.orchestrator.snapshot()
    assert rebuilt.followed_paths is None
    other = Vault.open(root)
    try:
        assert _answers(reader) == _answers(other)
    finally:
        other.close()
    writer.close()
    reader.close()


def test_a_cold_status_says_what_a_held_snapshot_says(tmp_path: Path, embedder: object) -> None:
    """``status`` without a snapshot reads counts from the catalog, the state and each
    index's ``counts``; with one it reads the readers: the same numbers, damaged or not."""
    root = _vault(tmp_path / "vault")
    with Vault.open(root) as writer:
        writer.index()
        _write(root, "n01.md", _note(1, "Otter."))
        writer.index()
    with Vault.open(root) as cold, Vault.open(root) as warm:
        warm.search("river stone")
        assert cold.status() == warm.status()
        assert cold.orchestrator.held() is None  # it opened no snapshot
        graph = warm.orchestrator.snapshot().generation.root / "graph.delta.json"
        graph.write_bytes(graph.read_bytes() + b" ")  # parses, but not the bytes written
    with Vault.open(root) as cold, Vault.open(root) as warm:
        warm.search("river stone")
        assert warm.orchestrator.snapshot().damaged
        assert cold.status() == warm.status()
        assert cold.status()["graph_edges"] == 0


def test_an_idle_reader_gives_back_its_vector_pages(tmp_path: Path, embedder: object) -> None:
    root = _vault(tmp_path / "vault")
    with Vault.open(root) as vault:
        vault.index()
        first = vault.search("granite ledge", mode="semantic")
        snap = vault.orchestrator.snapshot()
        rows = (
            snap.reader("vectors")
            .segments[0]
            .entry.files(snap.reader("vectors").segments[0]._folder)[1]
        )
        assert _resident_kb(rows) > 0
        vault.orchestrator._release_pages()
        assert _resident_kb(rows) == 0
        assert vault.search("granite ledge", mode="semantic") == first


def _resident_kb(path: Path) -> int:
    """This process's resident pages of one mapped file (``/proc/self/smaps``)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head[0]) > 8 and ":" not in head[0]:
            inside = len(head) > 5 and Path(head[5]).name == path.name
        elif inside and head[0] == "Rss:":
            total += int(head[1])
    return total


def test_the_idle_thread_releases_once_after_the_last_touch() -> None:
    released = threading.Event()
    calls: list[int] = []

    def release() -> None:
        calls.append(1)
        released.set()

    seconds = 0.3
    idle = IdleRelease(release, seconds=seconds)
    start = time.monotonic()
    for _ in range(3):
        idle.touch()
    together = time.monotonic() - start < seconds  # a starved test may pause between them
    assert released.wait(HANG_GUARD)
    released.clear()
    idle.touch()
    assert released.wait(HANG_GUARD)
    idle.close()
    if together:
        assert len(calls) == 2
    else:  # a pause past ``seconds`` rightly released in between
        assert 2 <= len(calls) <= 4


@pytest.mark.parametrize("preadv", [True, False], ids=["preadv", "pread"])
def test_rows_read_by_position_are_the_mapped_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, preadv: bool
) -> None:
    """The sentence re-scorer reads rows with ``pread`` instead of the mapping: runs of
    neighbours, single rows, the first and the last, as the mapping has them, read into
    the array (``preadv``) or copied in where the platform lacks it; none; a file cut
    short is an error."""
    import vaultsearch.store.segments as segments

    monkeypatch.setattr(segments, "_PREADV", preadv and hasattr(os, "preadv"))
    rng = np.random.default_rng(5)
    ids = np.arange(0, 4000, 2, dtype=np.int64)
    rows = rng.random((len(ids), 12)).astype(np.float16)
    entry = write_segment(tmp_path, "sentences-000001-000", ids, rows)
    segment = Segment(entry, tmp_path)
    for positions in (
        [0],
        [len(ids) - 1],
        [3, 4, 5, 9, 10, 400, 1999],
        sorted(rng.choice(2000, 300)),
        [7, 6, 5, 1000, 3],
        [],
    ):
        wanted = np.asarray(positions, dtype=np.int64)
        assert np.array_equal(segment.take_rows(wanted), rows[wanted])
    assert "rows" not in segment.__dict__  # never mapped
    path = entry.files(tmp_path)[1]
    with path.open("r+b") as fh:
        fh.truncate(path.stat().st_size - 10)
    with pytest.raises(ValueError, match="shorter"):
        segment.take_rows(np.array([1, len(ids) - 1]))


def test_graph_records_followed_equal_the_base_with_the_delta_applied() -> None:
    """The graph side alone, with deltas no writer needs to make: random records over
    a base (notes deleted, back again, linking to notes that come and go, records left
    unchanged while their targets change). Each followed graph must equal the base
    with the whole delta applied, as a fresh reader builds it."""

    from vaultsearch.store.derived.graph import LinkGraph
    from vaultsearch.store.graph import followed_counted

    rng = random.Random(11)
    paths = [f"p{i}.md" for i in range(30)]
    base, fresh = _random_base(rng, paths[:20])

    header, key = {"nodes": 20, "crc32": 1}, (1, 1, 1)
    records: dict[str, object] = {}
    reader = LinkGraph(fresh(records), header, key, dict(records), frozenset(base))
    ways = {"followed": 0, "whole": 0}
    for _ in range(300):
        records = dict(records)
        for path in rng.sample(paths, rng.randint(1, 3)):
            if rng.random() < 0.3:
                records[path] = None
                continue
            now = fresh(records)
            targets = [t for t in rng.sample(paths, 4) if t in now and t != path]
            out = [[t, rng.randint(1, 2), 0] for t in sorted(targets)]
            records[path] = {"title": path, "tags": [], "aliases": [], "out": out}
            if rng.random() < 0.3:
                records[path]["unresolved"] = {"gone": rng.randint(1, 3)}  # type: ignore[index]
        changed = reader.changes_to(header, key, records)  # type: ignore[arg-type]
        before = _shape(reader.graph)
        if changed is None:
            graph, ways["whole"] = fresh(records), ways["whole"] + 1
        else:
            graph, more = followed_counted(reader.graph, changed)
            assert more == graph.number_of_edges() - reader.graph.number_of_edges()
            ways["followed"] += 1
        expected = fresh(records)
        assert _shape(reader.graph) == before  # a search may still be reading it
        assert _shape(graph) == _shape(expected)
        assert graph.graph["unresolved_links"] == expected.graph["unresolved_links"]
        reader = LinkGraph(graph, header, key, dict(records), frozenset(base))  # type: ignore[arg-type]
    assert ways["followed"] > 100 and ways["whole"] > 0


def test_a_graph_followed_by_fresh_records_alone_equals_a_fresh_read() -> None:
    """A follower given only the records the delta's new parts hold (as ``follow``
    reads them) must hold what a fresh read of base + whole delta holds: when a note
    appears (added, moved in, back after a delete) the older delta records linking to
    it are found through the map of link targets the followers hand on, which each
    follow updates with its records. Sometimes a reader is followed twice (a follower
    took its map, and changed it with other records): the second must be right."""

    from vaultsearch.store.derived.graph import LinkGraph
    from vaultsearch.store.graphlinkers import Linkers

    rng = random.Random(23)
    paths = [f"p{i}.md" for i in range(40)]
    base, fresh = _random_base(rng, paths[:20])

    header, key = {"nodes": 20, "crc32": 1}, (1, 1, 1)
    records: dict[str, object] = {}
    reader = LinkGraph(fresh(records), header, key, {}, frozenset(base))
    ways = {"followed": 0, "whole": 0, "appeared": 0, "twice": 0}
    for _ in range(400):
        part: dict[str, object] = {}
        for path in rng.sample(paths, rng.randint(1, 3)):
            if rng.random() < 0.3:
                part[path] = None
                continue
            now = fresh({**records, **part})
            targets = [t for t in rng.sample(paths, 5) if t in now and t != path]
            out = [[t, rng.randint(1, 2), 0] for t in sorted(targets)]
            part[path] = {"title": path, "out": out}
            if rng.random() < 0.3:
                part[path]["unresolved"] = {"gone": rng.randint(1, 3)}  # type: ignore[index]
        records = {**records, **part}
        expected = fresh(records)
        before = _shape(reader.graph)
        ways["appeared"] += any(r is not None and p not in reader.graph for p, r in part.items())
        if rng.random() < 0.2:  # a follow of other records, then dropped
            decoy = {
                p: None for p in rng.sample(sorted(reader.records), min(5, len(reader.records)))
            }
            ways["twice"] += reader.followed_by(header, key, decoy, {}) is not None
        follower = reader.followed_by(header, key, part, {})  # type: ignore[arg-type]
        assert _shape(reader.graph) == before  # a search may still be reading it
        if follower is None:
            ways["whole"] += 1
            reader = LinkGraph(expected, header, key, dict(records), frozenset(base))  # type: ignore[arg-type]
            continue
        ways["followed"] += 1
        assert _shape(follower.graph) == _shape(expected)
        assert follower.records == records
        assert len(follower) == expected.number_of_edges()
        assert follower.graph.graph["unresolved_links"] == expected.graph["unresolved_links"]
        linkers = follower._linkers
        if linkers is not None:
            assert linkers.as_dict() == Linkers(records).as_dict()  # type: ignore[arg-type]
        reader = follower
    assert ways["followed"] > 300 and ways["whole"] > 0
    assert ways["appeared"] > 50 and ways["twice"] > 10


def _shape(g: object) -> tuple[object, ...]:
    """Nodes, edges and attributes, and each node's predecessors (what backlinks read,
    kept in networkx apart from the edges ``graph_data`` lists)."""
    assert isinstance(g, nx.DiGraph)
    return graph_data(g), {n: sorted(g.predecessors(n)) for n in g}


def test_check_reads_the_list_of_changed_notes(tmp_path: Path, embedder: object) -> None:
    """A reader trusts the list to know what to read again: ``check`` finds one no writer
    would make, even under a checksum made to match."""
    from vaultsearch.store.manifest import read_state, write_state
    from vaultsearch.store.verify import verify_store

    root = _vault(tmp_path / "vault")
    with Vault.open(root) as vault:
        vault.index()
        _write(root, "n01.md", _note(1, "Otter."))
        vault.index()
        generation = vault.layout.current()
        assert generation is not None
        state = read_state(generation.root)
        assert state is not None and state["changes"]["paths"] == ["n01.md"]
        assert verify_store(vault.layout, vault.config).ok
        body = {k: v for k, v in state.items() if k != "checksum"}
        write_state(generation.root, {**body, "changes": {"since": "1", "paths": ["n01.md"]}})
        assert verify_store(vault.layout, vault.config).problems == [
            "state: its list of changed notes is not one a writer makes"
        ]


def _random_base(
    rng: random.Random, nodes: list[str]
) -> tuple[nx.DiGraph, Callable[[dict[str, object]], nx.DiGraph]]:
    """A base graph of ``nodes`` with 40 random links, and what a fresh reader builds
    from it with a delta's records applied."""
    from vaultsearch.store.graph import apply_records

    base = nx.DiGraph()
    for p in nodes:
        base.add_node(p, title=p, tags=[], aliases=[])
    for _ in range(40):
        a, b = rng.sample(nodes, 2)
        base.add_edge(a, b, count=1, embeds=0)
    base.graph["unresolved_links"] = 0

    def fresh(records: dict[str, object]) -> nx.DiGraph:
        g = base.copy()
        apply_records(g, records)  # type: ignore[arg-type]
        return g

    return base, fresh
