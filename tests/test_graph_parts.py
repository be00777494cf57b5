"""The graph's delta in immutable parts: a long run of one-note edits writes each record
a logarithmic number of times (never the whole delta, never the base), a kill inside a
merge or a fold leaves the previous generation served, and a damaged part is found by
``check`` and restored by ``--repair``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import HANG_GUARD, live_catalog, run_check, write_files
from vaultsearch import Vault
from vaultsearch.store.derived.graph import GraphPart
from vaultsearch.store.graph import build_graph, graph_data, load_graph, read_delta
from vaultsearch.store.graphdelta import PARTS_FOLDER, delta_path, parts_folder, read_listing
from vaultsearch.store.layout import Generation, IndexLayout
from vaultsearch.store.manifest import file_crc32, read_state, write_state
from vaultsearch.store.segments import tier

NOTES = 40


def _note(i: int, edit: int = 0) -> str:
    return (
        f"# Note {i}\n\nNote {i} links to [[Note {(i + 1) % NOTES}]] and [[Note {(i * 7) % NOTES}]]"
        f" and to [[nowhere {i % 3}]].\n" + "".join(f"\nEdit {e}.\n" for e in range(edit))
    )


def _vault(root: Path, notes: int = NOTES) -> Path:
    return write_files(root, {f"n/Note {i}.md": _note(i) for i in range(notes)})


def _edited(tmp_path: Path, notes: int, edits: int) -> tuple[Path, Path]:
    """A built vault whose first ``edits`` notes were then edited one index run each:
    one delta part per edit."""
    root = _vault(tmp_path / "vault", notes)
    index_dir = tmp_path / "index"
    with Vault.open(root, index_dir=index_dir) as vault:
        vault.index()
        for k in range(edits):
            (root / f"n/Note {k}.md").write_text(_note(k, 1), encoding="utf-8")
            vault.index()
    return root, index_dir


def _graph_files(generation: Generation) -> dict[str, os.stat_result]:
    graph = GraphPart.location(generation)
    files = [graph, delta_path(graph)]
    if parts_folder(graph).is_dir():
        files += sorted(parts_folder(graph).iterdir())
    return {str(p.relative_to(generation.root)): p.stat() for p in files if p.is_file()}


def _graph_bytes(generation: Generation) -> dict[str, bytes]:
    return {name: (generation.root / name).read_bytes() for name in _graph_files(generation)}


def _records_in(path: Path) -> int:
    """The node records a graph file holds, whatever its kind: the base's nodes, a part's
    records, or the records a delta file kept inside itself."""
    data = json.loads(path.read_bytes())
    if "nodes" in data and "edges" in data:
        return len(data["nodes"])
    return len(data.get("records", {}))


def _same_as_built(index_dir: Path) -> None:
    catalog = live_catalog(index_dir)
    try:
        built = graph_data(build_graph(catalog.notes(), catalog.links()))
    finally:
        catalog.close()
    assert graph_data(load_graph(GraphPart.location(IndexLayout(index_dir).live))) == built


def test_one_note_edits_write_each_graph_record_a_logarithmic_number_of_times(
    tmp_path: Path, embedder: object
) -> None:
    """Each edit records one note: what the graph files of all generations hold anew
    (files not hard-linked from the generation before) stays within the tier bound per
    edit. A delta file rewritten whole at every edit wrote every record changed since
    the base again each time, and a base rewritten when the delta passed a share of it
    wrote the whole graph every few edits."""
    edits = 96
    root = _vault(tmp_path / "vault")
    index_dir = tmp_path / "index"
    written = parts_seen = 0
    with Vault.open(root, index_dir=index_dir) as vault:
        vault.index()
        manager = vault.manager()
        before = _graph_files(IndexLayout(index_dir).live)
        base_inode = before["graph.json"].st_ino
        for k in range(edits):
            i = (k * 13) % NOTES
            rel = f"n/Note {i}.md"
            (root / rel).write_text(_note(i, k // NOTES + 1), encoding="utf-8")
            manager.update(paths=[rel])
            live = IndexLayout(index_dir).live
            now = _graph_files(live)
            inodes = {st.st_ino for st in before.values()}
            written += sum(
                _records_in(live.root / name) for name, st in now.items() if st.st_ino not in inodes
            )
            parts_seen = max(parts_seen, len(read_listing(GraphPart.location(live)).parts))
            assert now["graph.json"].st_ino == base_inode, k  # never rewritten for an edit
            before = now
            if k % 16 == 15:
                _same_as_built(index_dir)
    assert parts_seen > 1, "no edit left more than one part: nothing merged was tested"
    assert written <= edits * (tier(edits) + 2), (written, edits * (tier(edits) + 2))


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from vaultsearch.cli.main import main
    from vaultsearch.store.derived import graph as dg
    point = sys.argv[1]
    dg.COMPACT_MIN = int(sys.argv[2])

    def die(at):
        if at == point:
            os.kill(os.getpid(), signal.SIGKILL)

    merged, save_graph, remove_unlisted = dg.merged, dg.save_graph, dg.remove_unlisted

    def merged_(*args):
        part = merged(*args)
        die("merged-part")
        return part

    def save_graph_(*args):
        save_graph(*args)
        die("new-base")

    def remove_unlisted_(*args):
        die("list-written")
        remove_unlisted(*args)

    dg.merged, dg.save_graph, dg.remove_unlisted = merged_, save_graph_, remove_unlisted_
    sys.exit(main(sys.argv[3:]))
    """
)


@pytest.mark.parametrize("point", ["merged-part", "new-base", "list-written"])
def test_a_kill_inside_a_graph_merge_or_fold_leaves_the_previous_generation_served(
    tmp_path: Path, embedder: object, point: str
) -> None:
    """Three one-note edits leave three one-record parts, so the fourth merges four
    like-sized parts; with no floor (``COMPACT_MIN`` 0), an edit of every note folds the
    delta into a new base. The writer dies after the merged part, after the new base,
    or after the list naming them: the previous generation stays served and whole, and
    the next run completes."""
    notes = 6
    root, index_dir = _edited(tmp_path, notes, 3)
    live = IndexLayout(index_dir).live
    assert len(read_listing(GraphPart.location(live)).parts) == 3
    before = (live.name, _graph_bytes(live))
    fold = point == "new-base"
    for i in range(notes) if fold else [3]:
        (root / f"n/Note {i}.md").write_text(_note(i, 2), encoding="utf-8")
    argv = ["index", str(root), "--index-dir", str(index_dir), "--quiet"]
    floor = "0" if fold else "512"
    killed = subprocess.run(
        [sys.executable, "-c", KILLER, point, floor, *argv],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    live = IndexLayout(index_dir).live
    assert (live.name, _graph_bytes(live)) == before
    check = run_check(root, index_dir, "--json")
    problems = json.loads(check.stdout)["problems"]
    assert problems and all(p.startswith("files:") for p in problems), problems
    with Vault.open(root, index_dir=index_dir) as vault:
        vault.index()
        assert vault.manager().verify().ok
    _same_as_built(index_dir)
    live = IndexLayout(index_dir).live
    listed = {f"{p.name}.json" for p in read_listing(GraphPart.location(live)).parts}
    on_disk = {p.name for p in parts_folder(GraphPart.location(live)).glob("*")}
    assert on_disk == listed  # nothing a killed run wrote is left behind


@pytest.mark.parametrize("how", ["flip", "delete"])
def test_a_damaged_part_is_found_and_repaired(tmp_path: Path, embedder: object, how: str) -> None:
    root, index_dir = _edited(tmp_path, 6, 2)
    with Vault.open(root, index_dir=index_dir) as vault:
        graph = GraphPart.location(IndexLayout(index_dir).live)
        part = read_listing(graph).parts[-1]
        path = parts_folder(graph) / f"{part.name}.json"
        if how == "delete":
            path.unlink()
            reason = "is missing"
        else:
            data = bytearray(path.read_bytes())
            at = data.index(b"Note 1")
            data[at + 5] ^= 0x01  # "Note 0": still JSON, another note
            path.unlink()  # the file is a hard link the next generation may share
            path.write_bytes(bytes(data))
            reason = "differs from the checksum the writer recorded"
        problems = vault.manager().verify().problems
        assert f"graph: {PARTS_FOLDER}/{path.name} {reason}" in problems
        assert vault.search("Note 1 links", mode="hybrid")  # read as no graph, not an error
        vault.manager().repair()
        assert vault.manager().verify().ok
    _same_as_built(index_dir)


def test_a_delta_of_the_previous_format_is_read_and_written_as_the_first_part(
    tmp_path: Path, embedder: object
) -> None:
    """An index written before parts kept the delta's records inside its list file: a
    search reads it, and the next update writes those records as a part before its own."""
    root, index_dir = _edited(tmp_path, 6, 2)
    live = IndexLayout(index_dir).live
    graph = GraphPart.location(live)
    listing = read_listing(graph)
    records = read_delta(graph)[1]
    assert len(listing.parts) == 2 and len(records) == 2
    old = {"base": listing.base, "records": records}
    delta_path(graph).unlink()
    delta_path(graph).write_text(json.dumps(old), encoding="utf-8")
    shutil.rmtree(parts_folder(graph))
    state = read_state(live.root) or {}
    write_state(live.root, {**state, "graph_delta_crc32": file_crc32(delta_path(graph))})
    with Vault.open(root, index_dir=index_dir) as vault:
        assert vault.manager().verify().ok
        (root / "n/Note 4.md").write_text(_note(4, 1), encoding="utf-8")
        vault.index()
        assert vault.manager().verify().ok
    graph = GraphPart.location(IndexLayout(index_dir).live)
    assert [p.records for p in read_listing(graph).parts] == [2, 1]
    assert not read_listing(graph).inline
    _same_as_built(index_dir)
