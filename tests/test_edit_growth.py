"""An edit's cost must not grow with the index: what a long-lived writer and a reader
following it read of the files an earlier generation already had (they are hard-linked,
never rewritten), how often an edit walks the generation's tree to sync it, and what
the per-user cache reads to add one vector. Counted, not timed."""

from __future__ import annotations

import cProfile
import os
import pstats
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import bump_mtime, run_check, write_files
from tests.corpus import WORDS
from vaultsearch import Vault
from vaultsearch.store.embedcache import EmbeddingCache
from vaultsearch.store.generations import hold_current
from vaultsearch.store.layout import Generation, IndexLayout
from vaultsearch.store.segments import read_list

_OPENED: list[str] | None = None


def _audit(event: str, args: tuple[object, ...]) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], str | bytes | Path):
        _OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


@contextmanager
def opened() -> Iterator[list[str]]:
    """Every file Python opens meanwhile (``open`` and ``os.open``, numpy's maps too;
    Tantivy's and SQLite's own opens are not Python's)."""
    global _OPENED
    _OPENED = found = []
    try:
        yield found
    finally:
        _OPENED = None


def _note(i: int, version: int = 0) -> str:
    return (
        f"# Note {i:03d}\n\nAbout the {WORDS[i % 20]} and the {WORDS[(i + version) % 20]}, "
        f"version {version}. See [[Note {(i + 1) % 40:03d}]] and [[Nowhere]].\n"
    )


def _edit(root: Path, i: int, version: int) -> str:
    rel = f"f{i % 4}/Note {i:03d}.md"
    (root / rel).write_text(_note(i, version), encoding="utf-8")
    bump_mtime(root / rel, seconds=version + 5)
    return rel


@pytest.fixture
def vault(tmp_path: Path, embedder: object) -> Path:
    root = write_files(
        tmp_path / "vault", {f"f{i % 4}/Note {i:03d}.md": _note(i) for i in range(40)}
    )
    with Vault.open(root, index_dir=tmp_path / "index") as v:
        v.index()
        manager = v.manager()
        for version in range(1, 6):  # several segments and graph parts, as edits leave them
            manager.update(paths=[_edit(root, version, version)])
    return root


def _inodes(generation: Generation) -> set[tuple[str, int]]:
    """(path inside the generation, inode) of its files: a later generation's hard link
    of one has the same of both (an inode alone may be a freed one used again)."""
    root = generation.root
    return {
        (p.relative_to(root).as_posix(), p.stat().st_ino) for p in root.rglob("*") if p.is_file()
    }


def _old_files_read(opened: list[str], old: set[tuple[str, int]], *roots: Path) -> set[str]:
    """The files opened, in these generations' folders, that the older one already had."""
    out = set()
    for path in opened:
        p = Path(path)
        for root in roots:
            if root in p.parents and p.is_file():
                rel = p.relative_to(root).as_posix()
                if (rel, p.stat().st_ino) in old:
                    out.add(rel)
    return out


def _calls(profile: cProfile.Profile, name: str, caller: str | None = None) -> int:
    """Calls of the function ``name`` (made by the function ``caller``, when given)."""
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    total = 0
    for (_, _, func), (_, calls, _, _, callers) in stats.items():
        if func == name:
            total += (
                calls
                if caller is None
                else sum(c[1] for (_, _, f), c in callers.items() if f == caller)
            )
    return total


def test_a_reader_following_an_edit_reads_no_file_the_generation_before_had(
    vault: Path, tmp_path: Path
) -> None:
    """The graph's base is as large as the vault's graph and a segment file as large as
    its rows: a reader that read them at every generation it followed did work growing
    with the index at every edit. It reads them once, then only what an edit wrote."""
    index_dir = tmp_path / "index"
    layout = IndexLayout(index_dir)
    with (
        Vault.open(vault, index_dir=index_dir) as writer,
        Vault.open(vault, index_dir=index_dir) as reader,
    ):
        manager = writer.manager()
        assert reader.search("granite", mode="hybrid")
        for version in (6, 7, 8):
            old = layout.live
            before = _inodes(old)
            manager.update(paths=[_edit(vault, 2, version)])
            with opened() as files:
                snap = reader.orchestrator.snapshot()
            assert snap.followed_paths == ["f2/Note 002.md"]
            read = _old_files_read(files, before, old.root, layout.live.root)
            assert {p for p in read if _sized_by_index(p)} == set()
    assert run_check(vault, index_dir).returncode == 0


def test_a_long_lived_writer_reads_of_older_files_only_the_ids_it_looks_rows_up_in(
    vault: Path, tmp_path: Path
) -> None:
    """Tombstoning an edited note's rows is a binary search in each segment's ids; the
    order of those ids, the graph's parts and the segments' headers were read once, by
    the run that wrote them or the first that met them."""
    index_dir = tmp_path / "index"
    layout = IndexLayout(index_dir)
    with Vault.open(vault, index_dir=index_dir) as writer:
        manager = writer.manager()
        manager.update(paths=[_edit(vault, 3, 6)])
        for version in (7, 8, 9):
            hold = hold_current(layout)  # keeps the older generation to compare with
            assert hold is not None
            live = hold.generation
            before = _inodes(live)
            profile = cProfile.Profile()
            with opened() as files:
                profile.enable()
                manager.update(paths=[_edit(vault, 3, version)])
                profile.disable()
            read = _old_files_read(files, before, live.root, layout.live.root)
            big = {p for p in read if _sized_by_index(p)}
            assert big - _merged_away(live, layout.live) == set(), version
            hold.release()
            assert _calls(profile, "_ascending", caller="order") == 0, "every id read again"
            assert _calls(profile, "fsync_tree") == 1, "the tree is synced once, at the commit"
    assert run_check(vault, index_dir).returncode == 0


def _sized_by_index(path: str) -> bool:
    """A file whose size grows with the index: a segment's rows or approximate index,
    the graph's base and parts, a Tantivy segment file. (The lists, the state and the
    manifest a clone copies are read whole; a segment's ids are binary-searched.)"""
    folder, _, name = path.rpartition("/")
    if folder == "segments":
        return not name.endswith(".ids.npy")
    if folder == "keywords":
        return not name.endswith(".json")
    return path == "graph.json" or folder == "graph-parts"


def _merged_away(old: Generation, new: Generation) -> set[str]:
    """Files of ``old``'s segments and graph parts that ``new`` no longer lists: a merge
    reads them whole."""
    gone: set[str] = set()
    for name in ("vectors.json", "sentences.json"):
        kept = {e.name for e in read_list(new.root / name).segments}
        for entry in read_list(old.root / name).segments:
            if entry.name not in kept:
                gone |= {f"segments/{p.name}" for p in entry.all_files(old.root / "segments")}
    old_parts = {p.name for p in (old.root / "graph-parts").glob("*.json")}
    new_parts = {p.name for p in (new.root / "graph-parts").glob("*.json")}
    gone |= {f"graph-parts/{n}" for n in old_parts - new_parts}
    return gone


def test_adding_to_a_cache_under_its_cap_counts_no_rows(tmp_path: Path) -> None:
    """A count of the cache's rows reads a whole index of its table (25 MB of a 400 MB
    cache): only a cache past its cap, which must evict, needs one."""
    statements: list[str] = []
    cache = EmbeddingCache(tmp_path / "cache", 1 << 30)
    try:
        cache.put("m", {f"h{i}": np.full(384, i, dtype=np.float32) for i in range(200)})
        db = cache._conn()
        assert isinstance(db, sqlite3.Connection)
        db.set_trace_callback(statements.append)
        cache.put("m", {"one more": np.ones(384, dtype=np.float32)})
        db.set_trace_callback(None)
        assert cache.count("m") == 201
    finally:
        cache.close()
    assert any("INSERT" in s.upper() for s in statements)
    assert [s for s in statements if "COUNT(" in s.upper()] == []


def test_a_cache_past_its_cap_still_evicts(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "cache", max_bytes=300_000)
    try:
        for start in range(0, 400, 50):
            cache.put(
                "m", {f"h{i}": np.full(384, i, dtype=np.float32) for i in range(start, start + 50)}
            )
        assert 0 < cache.count("m") < 400
    finally:
        cache.close()
