"""The store's promises, fast cases of bench/reliability_store.py: a reader always sees
one whole published generation (after a SIGKILL, during rebuilds), damaged files are
found by ``check`` and repaired without the model, a read-only index serves another
user, and embeddings outlive the index."""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import (
    HANG_GUARD,
    embeddings,
    files_a_run_leaves,
    kill_index_once_cloned,
    write_files,
)
from tests.corpus import WORDS
from vaultsearch import Vault
from vaultsearch.cli.main import main
from vaultsearch.errors import IndexCorruptError
from vaultsearch.store.catalog import open_catalog_for_reading
from vaultsearch.store.derived import derived
from vaultsearch.store.derived.graph import GraphPart
from vaultsearch.store.derived.keywords import KeywordPart
from vaultsearch.store.derived.sentences import SentencePart
from vaultsearch.store.derived.vectors import VectorPart
from vaultsearch.store.embedcache import CACHE_FILE, EmbeddingCache, default_cache_dir
from vaultsearch.store.generations import hold_current
from vaultsearch.store.layout import IndexLayout
from vaultsearch.store.lock import WriterLock
from vaultsearch.store.manifest import MANIFEST_DIGEST, read_state, write_state

SRC = Path(__file__).resolve().parent.parent / "src"


def note(i: int, version: int = 0) -> str:
    return (
        f"# Note {i:03d}\n\nAbout the {WORDS[i % 10]} and the {WORDS[(i + version) % 10]} "
        f"(version {version}). See [[Note {(i + 1) % 40:03d}]].\n"
    )


def notes(n: int = 40, version: int = 0, edited: int = 0) -> dict[str, str | bytes]:
    return {f"f{i % 4}/Note {i:03d}.md": note(i, version if i < edited else 0) for i in range(n)}


@pytest.fixture
def indexed(tmp_path: Path, embedder: object) -> Iterator[tuple[Path, Path]]:
    root = write_files(tmp_path / "vault", notes())
    index_dir = tmp_path / "index"
    with Vault.open(root, index_dir=index_dir) as vault:
        vault.index()
    yield root, index_dir


def published(index_dir: Path) -> tuple[str, dict[str, str]]:
    """The live generation's name and its notes' content hashes, as a reader opens it."""
    hold = hold_current(IndexLayout(index_dir))
    assert hold is not None
    try:
        catalog = open_catalog_for_reading(hold.generation.catalog)
        try:
            return hold.generation.name, {p: v[1] for p, v in catalog.file_states().items()}
        finally:
            catalog.close()
    finally:
        hold.release()


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(list(args))
    return code, out.getvalue()


@pytest.mark.parametrize("full", [True, False], ids=["full", "incremental"])
def test_a_kill_mid_run_leaves_the_previous_generation_served(
    indexed: tuple[Path, Path], full: bool
) -> None:
    """The writer is killed as soon as its new generation folder exists (not on a
    timer): readers keep the previous generation, whole, and the next run completes."""
    root, index_dir = indexed
    before = published(index_dir)
    write_files(root, notes(version=1, edited=10))
    kill_index_once_cloned(root, index_dir, *(["--full"] if full else []))
    after = published(index_dir)
    if after != before:  # killed after publishing, before exiting: the new one, whole
        assert after[1] == {**before[1], **after[1]} and len(after[1]) == 40
        return
    with Vault.open(root, index_dir=index_dir) as vault:
        problems = vault.manager().verify().problems
        assert problems and all(p.startswith("files:") for p in problems), problems
        summary = vault.index()
        assert summary.updated == 10 and summary.chunks_embedded <= 10
        assert vault.manager().verify().ok
    assert published(index_dir)[0] != before[0]
    assert len(IndexLayout(index_dir).all_generations()) == 1, (
        "the half-built and the old one are gone"
    )


def test_searching_during_full_rebuilds_never_sees_a_partial_index(
    indexed: tuple[Path, Path],
) -> None:
    root, index_dir = indexed
    queries = ["river", "glacier meadow", "Note 007", "canyon"]
    with Vault.open(root, index_dir=index_dir) as vault:
        want = {q: [h.path for h in vault.search(q, mode="keyword")] for q in queries}
    stop = threading.Event()
    seen: list[tuple[str, list[str]]] = []
    generations: set[str] = set()

    def reader() -> None:
        with Vault.open(root, index_dir=index_dir) as vault:
            while not stop.is_set():
                for q in queries:
                    seen.append((q, [h.path for h in vault.search(q, mode="keyword")]))
                generations.add(vault.orchestrator.snapshot().generation.name)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        with Vault.open(root, index_dir=index_dir) as writer:
            for _ in range(3):
                writer.index(full=True)
    finally:
        stop.set()
        thread.join()
    assert seen
    wrong = [(q, got) for q, got in seen if got != want[q]]
    assert wrong == []


def _segment_file(index_dir: Path, suffix: str) -> Path:
    return next(KeywordPart.location(IndexLayout(index_dir).live).glob(f"*{suffix}"))


def _vector_file(index_dir: Path, index: str, suffix: str) -> Path:
    folder = IndexLayout(index_dir).live.root / "segments"
    return next(folder.glob(f"{index}-*{suffix}"))


def _damage(path: Path, how: str) -> None:
    """The damaged bytes replace the file (a new inode); never rewritten in place: a
    Tantivy reader of an earlier case may still map the old file, and truncating a mapped
    file kills the process with SIGBUS when one of its threads reads it (it did once, on a
    fresh clone under load). What ``check`` reads at the path is damaged either way."""
    if how == "delete":
        path.unlink()
        return
    data = bytearray(path.read_bytes())
    if how == "truncate":
        data = data[: len(data) // 2]
    elif how == "digit-flip":  # one bit of a JSON number: the file still parses
        at = data.index(b'"size": ') + len(b'"size": ')
        while data[at + 1 : at + 2].isdigit():
            at += 1
        data[at] ^= 0x01  # its last digit: 1000 -> 1001
    elif how in ROW_CONTENT:  # bytes inside a stored row that still decode and parse
        old, new = ROW_CONTENT[how]
        at = data.index(old)
        data[at : at + len(old)] = new
    else:  # a bit flip in the middle
        data[len(data) // 2] ^= 0x10
    _replace_bytes(path, bytes(data))


ROW_CONTENT = {"row-bitflip": (b"(version 0)", b"(version 1)"), "row-bytes": (b"About", b"Xyzzy")}
"""Damage to a catalog row's content that SQLite does not see (it checksums no row) and
every read accepts: a flipped bit in a digit of a chunk's text, five bytes of a text
replaced. Only the row's own checksum (``store/rowsums.py``) finds it."""


def _replace_bytes(path: Path, data: bytes) -> None:
    damaged = path.with_name(path.name + ".damaged")
    damaged.write_bytes(data)
    os.replace(damaged, path)


DAMAGED = {
    "catalog-truncate": (lambda d: IndexLayout(d).live.catalog, "truncate"),
    "catalog-row-bitflip": (lambda d: IndexLayout(d).live.catalog, "row-bitflip"),
    "catalog-row-bytes": (lambda d: IndexLayout(d).live.catalog, "row-bytes"),
    "vectors-bitflip": (lambda d: VectorPart.location(IndexLayout(d).live), "bitflip"),
    "vector-rows-bitflip": (lambda d: _vector_file(d, "vectors", ".rows.npy"), "bitflip"),
    "vector-ids-delete": (lambda d: _vector_file(d, "vectors", ".ids.npy"), "delete"),
    "sentence-rows-truncate": (lambda d: _vector_file(d, "sentences", ".rows.npy"), "truncate"),
    "sentence-ids-bitflip": (lambda d: _vector_file(d, "sentences", ".ids.npy"), "bitflip"),
    "sentences-list-delete": (lambda d: SentencePart.location(IndexLayout(d).live), "delete"),
    "term-bitflip": (lambda d: _segment_file(d, ".term"), "bitflip"),
    "store-truncate": (lambda d: _segment_file(d, ".store"), "truncate"),
    "meta-delete": (lambda d: KeywordPart.location(IndexLayout(d).live) / "meta.json", "delete"),
    "graph-bitflip": (lambda d: GraphPart.location(IndexLayout(d).live), "bitflip"),
    "state-delete": (lambda d: IndexLayout(d).live.state, "delete"),
    "manifest-digit-flip": (lambda d: IndexLayout(d).live.manifest, "digit-flip"),
    "pointer-delete": (lambda d: IndexLayout(d).pointer, "delete"),
}


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_damage_is_detected_and_repaired_without_embedding(
    indexed: tuple[Path, Path], case: str
) -> None:
    root, index_dir = indexed
    with Vault.open(root, index_dir=index_dir) as vault:
        want = [h.path for h in vault.search("glacier", mode="keyword")]
    target, how = DAMAGED[case]
    before = _dump(target(index_dir)) if how in ROW_CONTENT else None
    _damage(target(index_dir), how)
    if before is not None:
        assert _dump(target(index_dir)) != before, "the damage changed no stored row"
    cached = embeddings()
    args = [str(root), "--index-dir", str(index_dir)]
    assert run("check", *args)[0] != 0
    code, out = run("check", "--repair", "--json", *args)
    if code != 0:  # no generation to repair (the pointer is gone): index builds one
        assert run("index", *args, "--quiet")[0] == 0
    else:
        assert json.loads(out)["repaired"]["chunks_embedded"] == 0
    assert run("check", *args) == (
        0,
        "consistent (notes 40, chunks 40, vectors 40, keyword_docs 40)\n",
    )
    assert embeddings() == cached, "the repair embedded something"
    with Vault.open(root, index_dir=index_dir) as vault:
        assert [h.path for h in vault.search("glacier", mode="keyword")] == want


def test_a_manifest_changed_in_one_bit_is_named_and_an_older_state_checks_clean(
    indexed: tuple[Path, Path],
) -> None:
    """The manifest stays deterministic (CI keys on it): its digest is in the state
    file, and a state file written before the digest existed checks clean."""
    root, index_dir = indexed
    args = [str(root), "--index-dir", str(index_dir)]
    live = IndexLayout(index_dir).live
    state = read_state(live.root)
    assert state is not None and state[MANIFEST_DIGEST]
    older = {k: v for k, v in state.items() if k not in (MANIFEST_DIGEST, "checksum")}
    write_state(live.root, older)
    assert run("check", *args)[0] == 0
    write_state(live.root, {k: v for k, v in state.items() if k != "checksum"})
    pristine = live.manifest.read_bytes()
    _damage(live.manifest, "digit-flip")
    assert json.loads(live.manifest.read_bytes()) != json.loads(pristine)
    code, out = run("check", *args)
    assert code == 1
    assert "  - manifest: its SHA-256 differs from the one the state file recorded\n" in out
    assert run("check", "--repair", *args)[0] == 0
    assert IndexLayout(index_dir).live.manifest.read_bytes() == pristine
    assert (index_dir / "index.manifest.json").read_bytes() == pristine


def _shared_files(index_dir: Path) -> set[tuple[str, int]]:
    """(name, inode) of every segment file of the live generation: a rebuild writes new
    ones, a clone hard-links the same."""
    live = IndexLayout(index_dir).live.root
    folders = (live / "segments", KeywordPart.location(IndexLayout(index_dir).live))
    found = {(p.name, p.stat().st_ino) for f in folders for p in f.iterdir() if p.is_file()}
    return {(n, i) for n, i in found if not n.endswith(".json") and not n.startswith(".")}


def test_index_writes_a_damaged_manifest_again_without_rebuilding(
    indexed: tuple[Path, Path],
) -> None:
    """A manifest whose bytes are not those the state file recorded is damage, not a
    changed setting, when the settings' own manifest has the recorded bytes: ``index``
    says so and writes it again in a clone, sharing every segment file."""
    root, index_dir = indexed
    args = [str(root), "--index-dir", str(index_dir)]
    pristine = IndexLayout(index_dir).live.manifest.read_bytes()
    segments = _shared_files(index_dir)
    _damage(IndexLayout(index_dir).live.manifest, "digit-flip")
    code, out = run("index", *args, "--check")
    assert (
        code == 1
        and "manifest: damaged; its settings are the ones in use" in out
        and "rebuild" not in out
    ), out
    code, out = run("index", *args, "--json")
    summary = json.loads(out)
    assert code == 0 and summary["rebuild_reasons"] == [], summary
    assert summary["repaired"] == [
        "manifest: damaged; its settings are the ones in use: written again"
    ]
    assert summary["chunks_embedded"] == 0
    assert _shared_files(index_dir) == segments
    assert IndexLayout(index_dir).live.manifest.read_bytes() == pristine
    assert run("check", *args)[0] == 0
    assert run("index", *args, "--json")[0] == 0  # and the next run has nothing to do
    assert _shared_files(index_dir) == segments


@pytest.mark.parametrize("how", ["digit-flip", "bitflip", "delete"])
def test_check_repair_writes_a_damaged_manifest_again_without_rebuilding(
    indexed: tuple[Path, Path], how: str
) -> None:
    """``check --repair`` takes the path ``index`` takes when the manifest alone is
    damaged: the file written again in a clone sharing every segment, nothing rebuilt."""
    root, index_dir = indexed
    args = [str(root), "--index-dir", str(index_dir)]
    pristine = IndexLayout(index_dir).live.manifest.read_bytes()
    segments = _shared_files(index_dir)
    _damage(IndexLayout(index_dir).live.manifest, how)
    assert run("check", *args)[0] == 1
    code, out = run("check", "--repair", "--json", *args)
    answer = json.loads(out)
    assert code == 0 and answer["ok"], answer
    assert answer["repaired"]["derived"] == [
        "manifest: damaged; its settings are the ones in use: written again"
    ]
    assert answer["repaired"]["chunks_embedded"] == 0
    assert _shared_files(index_dir) == segments
    assert IndexLayout(index_dir).live.manifest.read_bytes() == pristine


def test_check_repair_rebuilds_when_more_than_the_manifest_is_damaged(
    indexed: tuple[Path, Path],
) -> None:
    """A damaged manifest beside a damaged segment: writing the manifest again would
    leave the segment served, so the derived indexes are rebuilt from the catalog."""
    root, index_dir = indexed
    args = [str(root), "--index-dir", str(index_dir)]
    live = IndexLayout(index_dir).live
    segments = _shared_files(index_dir)
    _damage(live.manifest, "digit-flip")
    _damage(sorted((live.root / "segments").glob("vectors-*.rows.npy"))[0], "bitflip")
    code, out = run("check", "--repair", "--json", *args)
    answer = json.loads(out)
    assert code == 0 and answer["ok"], answer
    assert "derived indexes: rebuilt from the catalog" in answer["repaired"]["derived"]
    assert answer["repaired"]["chunks_embedded"] == 0
    assert not _shared_files(index_dir) & segments


@pytest.mark.parametrize("damaged", [False, True], ids=["intact", "damaged"])
def test_a_changed_setting_still_rebuilds_with_or_without_a_damaged_manifest(
    indexed: tuple[Path, Path], damaged: bool, tmp_path: Path
) -> None:
    root, index_dir = indexed
    config = tmp_path / "bigger.toml"
    config.write_text("[chunking]\nsize = 1400\n")
    args = [str(root), "--index-dir", str(index_dir), "--config", str(config)]
    segments = _shared_files(index_dir)
    if damaged:
        _damage(IndexLayout(index_dir).live.manifest, "digit-flip")
    code, out = run("index", *args, "--json")
    summary = json.loads(out)
    assert code == 0 and summary["chunks_embedded"] == 0
    want = (
        ["manifest: damaged, and the settings are not those that built the index"]
        if damaged
        else ["chunking.size: 1000 -> 1400"]
    )
    assert summary["rebuild_reasons"] == want
    assert not _shared_files(index_dir) & segments
    assert run("check", *args)[0] == 0


def _dump(catalog: Path) -> list[str]:
    db = sqlite3.connect(f"{catalog.as_uri()}?mode=ro", uri=True)
    try:
        return list(db.iterdump())
    finally:
        db.close()


def test_a_panicking_segment_fails_the_query_not_the_process(
    indexed: tuple[Path, Path],
) -> None:
    """Flipped bytes in a ``.term`` file make Tantivy panic (a BaseException in Python):
    the search raises an error that names the repair instead."""
    root, index_dir = indexed
    term = _segment_file(index_dir, ".term")
    data = bytearray(term.read_bytes())
    for i in range(8, len(data) - 40, 7):
        data[i] ^= 0xFF
    _replace_bytes(term, bytes(data))
    with Vault.open(root, index_dir=index_dir) as vault:
        try:
            for w in WORDS:
                vault.search(w, mode="keyword")
        except IndexCorruptError as exc:
            assert "vaultsearch check --repair" in str(exc)
    assert run("check", str(root), "--index-dir", str(index_dir))[0] == 1


def test_embeddings_outlive_the_index(tmp_path: Path, embedder: object) -> None:
    """A deleted index, a second index folder and a second vault with the same notes
    embed nothing again: the per-user cache has every vector."""
    root = write_files(tmp_path / "vault", notes(12))
    with Vault.open(root, index_dir=tmp_path / "one") as vault:
        first = vault.index()
    assert first.chunks_embedded == 12 and first.sentences_embedded > 0
    assert embeddings() == 12 + first.sentences_embedded
    shutil.rmtree(tmp_path / "one")
    other = write_files(tmp_path / "copy", notes(12))
    for vault_root, index_dir in ((root, "one"), (root, "two"), (other, "three")):
        with Vault.open(vault_root, index_dir=tmp_path / index_dir) as vault:
            again = vault.index()
            assert again.chunks_embedded == 0 == again.sentences_embedded
    assert embeddings() == 12 + first.sentences_embedded


def test_the_cache_evicts_the_least_recently_used(tmp_path: Path) -> None:
    import numpy as np

    cache = EmbeddingCache(tmp_path / "cache", max_bytes=400_000)
    vectors = {f"h{i}": np.full(384, i, dtype=np.float32) for i in range(600)}
    cache.put("m", {"keep": np.ones(384, dtype=np.float32)})
    for start in range(0, 600, 50):
        cache.get("m", ["keep"])  # used again and again: it must survive
        cache.put("m", dict(list(vectors.items())[start : start + 50]))
    assert 0 < cache.count("m") < 600
    assert set(cache.get("m", ["keep"])) == {"keep"}
    assert (tmp_path / "cache" / "embeddings.sqlite").stat().st_size < 1_000_000
    cache.close()


def test_reading_a_warm_cache_again_rewrites_no_row(tmp_path: Path) -> None:
    """A read marks a vector used only when vectors were added since its last use, and
    all at once, at the end of a run or before the next addition: an update rewrites the
    whole row, and a first build over a warm cache rewrote every vector it read, batch
    after batch."""
    import sqlite3

    import numpy as np

    def used() -> dict[str, int]:
        db = sqlite3.connect(tmp_path / "cache" / "embeddings.sqlite")
        try:
            rows = db.execute(
                "SELECT v.text_hash, MAX(v.used, COALESCE(u.used, 0)) FROM vectors v"
                " LEFT JOIN uses u USING (model, text_hash)"
            )
            return dict(rows.fetchall())
        finally:
            db.close()

    cache = EmbeddingCache(tmp_path / "cache", max_bytes=10_000_000)
    cache.put("m", {f"h{i}": np.full(384, i, dtype=np.float32) for i in range(50)})
    added = used()
    assert len(cache.get("m", [f"h{i}" for i in range(40)])) == 40
    assert used() == added  # not yet: at the end of the run
    cache.flush()
    read = used()
    assert {h for h in read if read[h] > added[h]} == {f"h{i}" for i in range(40)}
    assert len(cache.get("m", [f"h{i}" for i in range(50)])) == 50
    cache.flush()
    again = used()  # only the ten not read since they were added
    assert {h for h in again if again[h] != read[h]} == {f"h{i}" for i in range(40, 50)}
    assert len(cache.get("m", [f"h{i}" for i in range(50)])) == 50
    cache.flush()
    assert used() == again  # nothing added since: no row rewritten
    cache.put("m", {"new": np.ones(384, dtype=np.float32)})
    cache.get("m", ["h45"])
    cache.close()
    after = used()
    assert after["new"] < after["h45"]
    assert all(after[h] == again[h] for h in again if h != "h45")


def _as_nobody(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "HOME": "/tmp", "VAULTSEARCH_CACHE_DIR": "off"}
    argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable]
    return subprocess.run(
        [*argv, "-m", "vaultsearch.cli", *args], capture_output=True, text=True, env=env
    )


def _files(folder: Path) -> list[tuple[str, int, int]]:
    return sorted((str(p), p.stat().st_mtime_ns, p.stat().st_mode) for p in folder.rglob("*"))


def test_another_user_searches_and_checks_a_read_only_index(embedder: object) -> None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run a process as another user")
    base = Path(tempfile.mkdtemp(prefix="vaultsearch-shared-"))
    try:
        os.chmod(base, 0o755)
        root = write_files(base / "vault", notes(12))
        index_dir = base / "index"
        with Vault.open(root, index_dir=index_dir) as vault:
            vault.index()
        probe = _as_nobody("--version")
        if probe.returncode != 0:
            pytest.skip(f"'nobody' cannot run this Python: {probe.stderr.strip()[:200]}")
        before = _files(index_dir)
        found = _as_nobody("search", "glacier", "--mode", "keyword", "--vault", str(root),
                           "--index-dir", str(index_dir))  # fmt: skip
        assert found.returncode == 0, found.stderr
        assert "Note 007" in found.stdout
        checked = _as_nobody("check", str(root), "--index-dir", str(index_dir))
        assert checked.returncode == 0, checked.stdout + checked.stderr
        status = _as_nobody("status", "--json", str(root), "--index-dir", str(index_dir))
        assert "read-only for this user" in json.loads(status.stdout)["write_error"]
        refused = _as_nobody("index", str(root), "--index-dir", str(index_dir))
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        assert _files(index_dir) == before, "a reader wrote into the index"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_read_only_mount_is_searched_and_checked(indexed: tuple[Path, Path]) -> None:
    root, index_dir = indexed
    mnt = index_dir.parent / "ro"
    mnt.mkdir()
    if subprocess.run(
        ["mount", "--bind", str(index_dir), str(mnt)], capture_output=True
    ).returncode:
        pytest.skip("bind mounts are not permitted here")
    try:
        remount = ["mount", "-o", "remount,ro,bind", str(mnt)]
        if subprocess.run(remount, capture_output=True).returncode:
            pytest.skip("a bind mount cannot be made read-only here")
        with Vault.open(root, index_dir=mnt) as vault:
            assert vault.search("glacier", mode="keyword")
            assert vault.status()["write_error"] is not None
            assert vault.manager().verify().ok
        code, _ = run("index", str(root), "--index-dir", str(mnt), "--full", "--quiet")
        assert code == 2
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@contextlib.contextmanager
def _small_disk(folder: Path, kb: int) -> Iterator[Path]:
    """A real file system of ``kb`` KB (tmpfs), for a disk that fills up."""
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={kb}k", "tmpfs", str(folder)], capture_output=True
    )
    if mounted.returncode:
        pytest.skip(f"mounting a tmpfs needs root: {mounted.stderr.decode().strip()[:200]}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def _fill(folder: Path, free: int) -> Path:
    """A file taking all of the file system's space but ``free`` bytes."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with contextlib.suppress(OSError):
            while os.write(fd, b"\0" * (1 << 16)):
                pass
        os.ftruncate(fd, max(0, os.fstat(fd).st_size - free))
    finally:
        os.close(fd)
    return filler


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("run_kind", ["edit-no-room", "edit-little-room", "rebuild-half-room"])
def test_a_full_disk_fails_a_run_in_one_sentence_and_keeps_the_index_served(
    tmp_path: Path, embedder: object, run_kind: str
) -> None:
    """On a full disk an edit or a rebuild fails with one sentence, the previous
    generation stays served and searchable, the failed run leaves none of its files
    and ``check`` finds nothing wrong with the index; once there is room the same run
    completes, embedding nothing (every text of the edit was indexed once before)."""
    root = write_files(tmp_path / "vault", notes())
    with _small_disk(tmp_path / "disk", 64 * 1024) as disk:
        index_dir = disk / "index"
        args = [str(root), "--index-dir", str(index_dir)]
        for version in (1, 0):  # both texts of the edited notes are in the cache
            write_files(root, notes(version=version, edited=3))
            assert _cli("index", *args, "--quiet")[0] == 0
        write_files(root, notes(version=1, edited=3))
        full = run_kind.startswith("rebuild")
        free = {"edit-no-room": 0, "edit-little-room": 48 << 10}.get(
            run_kind, IndexLayout(index_dir).size_on_disk() // 2
        )
        before, files, cached = published(index_dir), files_a_run_leaves(index_dir), embeddings()
        filler = _fill(disk, free)
        code, _, err = _cli("index", *args, "--quiet", *(["--full"] if full else []))
        assert code == 2 and err.startswith("error: The disk is full"), err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert published(index_dir) == before
        assert files_a_run_leaves(index_dir) == files
        code, out, _ = _cli("check", "--json", *args)
        problems = json.loads(out)["problems"]
        assert problems and all(p.startswith("files:") for p in problems), problems
        with Vault.open(root, index_dir=index_dir) as vault:
            assert vault.search("glacier", mode="hybrid")
        filler.unlink()
        code, out, _ = _cli("index", *args, "--json", *(["--full"] if full else []))
        assert code == 0 and json.loads(out)["chunks_embedded"] == 0
        assert embeddings() == cached
        assert published(index_dir)[1] != before[1]
        assert _cli("check", *args)[0] == 0


def test_tantivy_running_out_of_space_is_a_full_disk_not_damage(tmp_path: Path) -> None:
    """Tantivy says a full disk as text in its error; read as damage, the run told the
    user to ``check --repair`` an index that was whole (the battery's 64 KB case)."""
    import errno

    from vaultsearch.errors import environment_error_sentence
    from vaultsearch.store.derived.keywords import guarded
    from vaultsearch.store.keywords import KeywordDoc, KeywordIndex

    with _small_disk(tmp_path / "disk", 2048) as disk:
        index = KeywordIndex(disk / "keywords")
        index.add(
            KeywordDoc(i, f"Note {i}.md", f"Note {i}", (), (), (), f"the {WORDS[i % 10]} " * 50)
            for i in range(200)
        )
        _fill(disk, 0)
        with pytest.raises(OSError) as raised:
            guarded(index.commit, "commit")
        assert raised.value.errno == errno.ENOSPC
        assert environment_error_sentence(raised.value) == (
            "The disk is full; free some space and run the command again."
        )


def test_a_live_writer_on_a_full_disk_says_so_and_indexes_once_there_is_room(
    tmp_path: Path, embedder: object, caplog: pytest.LogCaptureFixture
) -> None:
    """``watch`` and the MCP server: a run on a full disk is one sentence in the live
    state (no traceback in the log), the index stays served, and a run after space
    returns indexes the edit."""
    import queue

    from vaultsearch.app.live import LiveIndex

    root = write_files(tmp_path / "vault", notes())
    with _small_disk(tmp_path / "disk", 64 * 1024) as disk:
        index_dir = disk / "index"
        with Vault.open(root, index_dir=index_dir) as vault:
            vault.index()
            ends: queue.Queue[str | None] = queue.Queue()
            live = LiveIndex(
                vault, on_change=lambda kind, st: kind == "run" and ends.put(st.last_error)
            )
            live.start()
            try:
                assert ends.get(timeout=HANG_GUARD) is None  # the start-up update
                before = published(index_dir)
                write_files(root, notes(version=1, edited=3))
                filler = _fill(disk, 0)
                live.request()
                error = ends.get(timeout=HANG_GUARD)
                assert error is not None and error.startswith("The disk is full"), error
                assert published(index_dir) == before
                assert vault.search("glacier", mode="keyword")
                filler.unlink()
                live.request()
                assert ends.get(timeout=HANG_GUARD) is None
                assert published(index_dir)[1] != before[1]
            finally:
                live.stop(HANG_GUARD)
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


def _store_cached_vectors(catalog: Path, model: str) -> dict[str, bytes]:
    """The per-user cache's vectors written into a catalog's own ``embeddings`` table, as
    a catalog of an index format before 4 held them (the segments now hold the only copy)."""
    folder = default_cache_dir()
    assert folder is not None
    with contextlib.closing(sqlite3.connect(folder / CACHE_FILE)) as cache:
        rows = cache.execute("SELECT text_hash, vector FROM vectors WHERE model=?", (model,))
        stored = dict(rows.fetchall())
    assert stored
    with contextlib.closing(sqlite3.connect(catalog)) as db:
        db.executemany(
            "INSERT INTO embeddings(model, text_hash, vector) VALUES (?,?,?)",
            [(model, h, v) for h, v in stored.items()],
        )
        db.commit()
    return stored


@pytest.mark.parametrize("first_batch", [32, 2])
def test_an_index_of_the_older_format_is_rebuilt_with_its_embeddings(
    tmp_path: Path, embedder: object, monkeypatch: pytest.MonkeyPatch, first_batch: int
) -> None:
    """An index from before generations (catalog at the top of the folder, holding the
    vectors as catalogs of that format did) is rebuilt into a generation reusing its
    vectors, even with no per-user cache: its sentences' too when the rebuild runs in two
    stages (``first_batch`` 2 < 6 files), although stage 2 runs after the old catalog
    is gone."""
    monkeypatch.setenv("VAULTSEARCH_INDEX_FIRST_BATCH", str(first_batch))
    root = write_files(tmp_path / "vault", notes(6))
    index_dir = tmp_path / "index"
    with Vault.open(root, index_dir=index_dir) as vault:
        assert vault.index().chunks_embedded == 6
        model = vault.manager().embedder.cache_key
    layout = IndexLayout(index_dir)
    shutil.copyfile(layout.live.catalog, layout.legacy_catalog)
    _store_cached_vectors(layout.legacy_catalog, model)
    monkeypatch.setenv("VAULTSEARCH_CACHE_DIR", "off")
    shutil.rmtree(layout.generations)
    layout.pointer.unlink()
    with Vault.open(root, index_dir=index_dir) as vault:
        assert "older format" in vault.check().reasons[0]
        summary = vault.index()
        assert summary.added == 6 and summary.chunks_embedded == 0
        assert summary.sentences_embedded == 0 and vault.manager().sentences_pending() == 0
        assert vault.manager().verify().ok
    assert not layout.legacy_catalog.exists()


def test_a_long_lived_writer_still_finds_a_catalog_damaged_after_its_own_run(
    tmp_path: Path, embedder: object
) -> None:
    """Every update looks at the catalog's header and a few pages (not every page, the
    catalog being shared and written by every run): a truncation after the writer's own
    run is found by its next update."""
    root = write_files(
        tmp_path / "vault", {f"n{i}.md": f"# N{i}\n\nglacier {i}\n" for i in range(5)}
    )
    with Vault.open(root, index_dir=tmp_path / "index") as vault:
        vault.index()
        assert vault.index().rebuild_reasons == []  # nothing changed: the check was skipped
        _damage(IndexLayout(tmp_path / "index").live.catalog, "truncate")
        summary = vault.index()
        assert any(r.startswith("catalog:") for r in summary.rebuild_reasons), summary
        assert [h.path for h in vault.search("glacier", mode="keyword")]


# --- issue 22: repair that always repairs, and no silent degraded answer -------------
QUERIES = ["glacier", "river canyon", "Note 007", "meadow"]


def _answers(root: Path, index_dir: Path) -> dict[str, list[tuple[str, float]]]:
    """Hybrid answers, with scores: a repair must give back the index it replaced."""
    with Vault.open(root, index_dir=index_dir) as vault:
        return {q: [(h.path, round(h.score, 5)) for h in vault.search(q)] for q in QUERIES}


def _flip_bytes(path: Path, n: int = 200, seed: int = 0) -> None:
    """``n`` bytes inverted at random places past the SQLite header (damage that still
    opens, the kind ``quick_check`` let through), written to a new file renamed over."""
    rng = random.Random(seed)
    data = bytearray(path.read_bytes())
    for _ in range(n):
        data[rng.randrange(100, len(data))] ^= 0xFF
    _replace_bytes(path, bytes(data))


def _readable_chunks(catalog: Path, n: int) -> int:
    """Chunk rows 1..n that a lookup by id still reads whole from a damaged catalog: what
    a salvage can find, found without the salvage (where 200 random flips land depends
    on the file's layout, which any schema change moves)."""
    db = sqlite3.connect(f"{catalog.as_uri()}?mode=ro", uri=True)
    found = 0
    try:
        for chunk_id in range(1, n + 1):
            with contextlib.suppress(sqlite3.Error, ValueError):
                row = db.execute("SELECT embed_hash, text FROM chunks WHERE id=?", (chunk_id,))
                found += row.fetchone() is not None
    finally:
        db.close()
    return found


def _repair(root: Path, index_dir: Path) -> dict[str, object]:
    """``check --repair`` alone: exit 0, consistent, and what it reported."""
    args = [str(root), "--index-dir", str(index_dir)]
    code, out = run("check", "--repair", "--json", *args)
    report = json.loads(out)
    assert code == 0 and report["ok"], report
    assert run("check", *args) == (
        0,
        "consistent (notes 40, chunks 40, vectors 40, keyword_docs 40)\n",
    )
    return dict(report["repaired"])


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_flipped_bytes_in_the_catalog_are_repaired_by_check_repair_alone(
    indexed: tuple[Path, Path], seed: int
) -> None:
    """200 inverted bytes in catalog.sqlite crashed both ``check --repair`` and ``index``
    (a text no longer UTF-8). The repair rebuilds it from the files with the cached
    vectors: nothing embedded, and the same hybrid answers, scores included."""
    root, index_dir = indexed
    before = _answers(root, index_dir)
    _flip_bytes(IndexLayout(index_dir).live.catalog, seed=seed)
    cached = embeddings()
    code, out = run("check", str(root), "--index-dir", str(index_dir))
    assert code == 1 and "  - catalog: " in out, out
    repaired = _repair(root, index_dir)
    assert repaired["chunks_embedded"] == 0
    assert "catalog: rebuilt from the vault's files" in repaired["derived"]  # type: ignore[operator]
    assert embeddings() == cached
    assert _answers(root, index_dir) == before


def test_index_on_a_damaged_catalog_rebuilds_instead_of_crashing(
    indexed: tuple[Path, Path],
) -> None:
    """The update's own check reads the header and a few pages; damage elsewhere shows
    when the update reads a row, and the whole check then confirms it: a rebuild."""
    root, index_dir = indexed
    _flip_bytes(IndexLayout(index_dir).live.catalog, seed=2)
    code, out = run("index", str(root), "--index-dir", str(index_dir), "--json")
    assert code == 0
    summary = json.loads(out)
    assert summary["chunks_embedded"] == 0
    assert any(r.startswith("catalog: ") for r in summary["rebuild_reasons"]), summary
    assert run("check", str(root), "--index-dir", str(index_dir))[0] == 0


def _linked(i: int, version: int) -> str:
    a, b = WORDS[i % 10], WORDS[(i * 3 + version) % 10]
    return (
        f"# Note {i:03d}\n\nNote {i:03d} is about the {a} and the {b} (version {version}).\n"
        f"It links to [[Note {(i + 1) % 40:03d}]] and [[Note {(i * 13) % 40:03d}]].\n\n"
        f"## Details\n\nThe {b} appears here, then the {a} again.\n"
    )


def _linked_notes(edited: Iterable[int] = ()) -> dict[str, str | bytes]:
    return {f"f{i % 4}/Note {i:03d}.md": _linked(i, int(i in edited)) for i in range(40)}


def _catalog_without_its_wal(tmp_path: Path, torn: bool = True) -> tuple[Path, Path, Path]:
    """Edits published while a reader holds an older snapshot, so each checkpoint folds
    in only part of the WAL (none of them may rebuild: the file's header then counts
    pages the WAL holds); then a checkpoint torn midway and the WAL lost, so the file
    left is not whole."""
    root = write_files(tmp_path / "vault", _linked_notes())
    index_dir = tmp_path / "index"
    argv = [sys.executable, "-m", "vaultsearch.cli", "index", str(root)]
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    edited: list[int] = []
    for edit in range(4):
        catalog = IndexLayout(index_dir).live.catalog if edit else None
        reader = sqlite3.connect(f"{catalog.as_uri()}?mode=ro", uri=True) if catalog else None
        if reader is not None:
            reader.execute("BEGIN")
            reader.execute("SELECT COUNT(*) FROM notes").fetchone()
        edited += [edit * 3 + 1, edit * 11 % 40, edit * 17 % 40 + 2] if edit else []
        write_files(root, _linked_notes(edited))
        done = subprocess.run(
            [*argv, "--index-dir", str(index_dir), "--json"],
            env=env,
            check=False,
            capture_output=True,
            text=True,
        )
        if reader is not None:
            reader.close()
        assert done.returncode == 0
        assert not json.loads(done.stdout)["rebuild_reasons"] or not edit, done.stdout
    catalog = IndexLayout(index_dir).live.catalog
    if torn:
        _torn_checkpoint(catalog)
    catalog.with_name(catalog.name + "-wal").unlink()
    return root, index_dir, catalog


def _integrity(catalog: Path) -> list[tuple[str]]:
    db = sqlite3.connect(f"{catalog.as_uri()}?immutable=1", uri=True)
    try:
        return db.execute("PRAGMA integrity_check").fetchall()
    except sqlite3.DatabaseError as exc:
        return [(str(exc),)]
    finally:
        db.close()


def _torn_checkpoint(catalog: Path) -> None:
    """The WAL's frames copied into the file up to a point inside a transaction, as a
    checkpoint killed midway leaves it: the first cut (from the middle on) whose file
    is not whole. A whole-but-older file is the other way a lost WAL ends; the edits
    above leave one (their runs commit once each, and the reader's snapshot holds every
    one of them in the WAL), which an update handles as any older catalog."""
    wal = catalog.with_name(catalog.name + "-wal").read_bytes()
    size, salts = int.from_bytes(wal[8:12], "big"), wal[16:24]
    frames = []
    at = 32
    while at + 24 + size <= len(wal) and wal[at + 8 : at + 16] == salts:
        frames.append((int.from_bytes(wal[at : at + 4], "big"), wal[at + 24 : at + 24 + size]))
        at += 24 + size
    pristine = catalog.read_bytes()
    for cut in range(len(frames) // 2, len(frames)):
        data = bytearray(pristine)
        for page, body in frames[:cut]:
            end = page * size
            data.extend(bytes(max(0, end - len(data))))
            data[end - size : end] = body
        catalog.write_bytes(bytes(data))
        if _integrity(catalog) != [("ok",)]:
            return
    catalog.write_bytes(pristine)


def test_a_lost_wal_that_leaves_indexes_unlike_their_tables_is_repaired(
    tmp_path: Path, embedder: object
) -> None:
    """Such a file can pass ``quick_check`` and be called malformed only when a read goes
    through a damaged index: that read is itself the finding, and the repair rebuilds
    the catalog from the files instead of ending in a traceback."""
    root, index_dir, catalog = _catalog_without_its_wal(tmp_path)
    assert _integrity(catalog) != [("ok",)], "the file left is whole: not the case meant"
    cached = embeddings()
    args = [str(root), "--index-dir", str(index_dir)]
    assert run("check", *args)[0] == 1
    code, out = run("check", "--repair", "--json", *args)
    repaired = json.loads(out)["repaired"]
    assert code == 0 and repaired["chunks_embedded"] == 0, out
    assert any(line.startswith("catalog: ") for line in repaired["derived"]), repaired
    assert run("check", *args)[0] == 0
    assert embeddings() == cached
    with Vault.open(root, index_dir=index_dir) as vault:
        assert vault.search("version 1", mode="keyword")


def test_a_lost_wal_found_by_an_edit_rebuilds_the_catalog(tmp_path: Path, embedder: object) -> None:
    root, index_dir, _catalog = _catalog_without_its_wal(tmp_path)
    write_files(root, {"f0/Note 000.md": _linked(0, 7)})
    code, out = run("index", str(root), "--index-dir", str(index_dir), "--json")
    assert code == 0, out
    summary = json.loads(out)
    assert summary["chunks_embedded"] <= 2
    assert any(r.startswith("catalog: ") for r in summary["rebuild_reasons"]), summary
    assert run("check", str(root), "--index-dir", str(index_dir))[0] == 0


def test_a_lost_wal_that_leaves_a_whole_older_catalog_is_caught_up(
    tmp_path: Path, embedder: object
) -> None:
    """The file is whole but commits behind the published generation: ``check`` says so,
    and the next run brings the catalog level with the files without a model call."""
    root, index_dir, catalog = _catalog_without_its_wal(tmp_path, torn=False)
    assert _integrity(catalog) == [("ok",)]
    code, out = run("check", str(root), "--index-dir", str(index_dir))
    assert code == 1 and "state: commit" in out, out
    code, out = run("index", str(root), "--index-dir", str(index_dir), "--json")
    assert code == 0 and json.loads(out)["chunks_embedded"] == 0, out
    assert run("check", str(root), "--index-dir", str(index_dir))[0] == 0
    with Vault.open(root, index_dir=index_dir) as vault:
        assert vault.search("version 1", mode="keyword")


def test_a_damaged_catalog_without_the_cache_salvages_its_readable_rows(
    tmp_path: Path, embedder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no per-user cache the damaged catalog's own vectors are read one row at a
    time (unit length, the right size): only what the damage destroyed is embedded."""
    monkeypatch.setenv("VAULTSEARCH_CACHE_DIR", "off")
    root = write_files(tmp_path / "vault", notes())
    index_dir = tmp_path / "index"
    with Vault.open(root, index_dir=index_dir) as vault:
        first = vault.index()
    catalog = IndexLayout(index_dir).live.catalog
    pristine = catalog.read_bytes()
    for seed in range(50):  # damage that leaves some chunk rows readable, and not all
        catalog.write_bytes(pristine)
        _flip_bytes(catalog, seed=seed)
        if 0 < _readable_chunks(catalog, 40) < 40:
            break
    else:
        pytest.fail("no damage of 50 seeds left some chunk rows readable and not all")
    repaired = _repair(root, index_dir)
    line = next(x for x in repaired["derived"] if x.startswith("embeddings: "))  # type: ignore[attr-defined]
    salvaged = int(line.split(", ")[1].split()[0])
    total = first.chunks_embedded + first.sentences_embedded
    assert 0 < salvaged < total, line
    assert repaired["chunks_embedded"] < first.chunks_embedded
    assert f"{salvaged} read from the damaged catalog" in line


@pytest.mark.parametrize("how", ["delete", "garbage", "names-nothing"])
def test_a_lost_current_is_repaired_from_the_intact_generation(
    indexed: tuple[Path, Path], how: str
) -> None:
    root, index_dir = indexed
    before = _answers(root, index_dir)
    layout = IndexLayout(index_dir)
    if how == "delete":
        layout.pointer.unlink()
    else:
        _replace_bytes(layout.pointer, b"\xff\xfe\x00g0" if how == "garbage" else b"g999999\n")
    cached = embeddings()
    code, out = run("check", str(root), "--index-dir", str(index_dir))
    assert code == 1 and "CURRENT: missing or unreadable, with generation g" in out, out
    with (  # not "no index has been built"
        Vault.open(root, index_dir=index_dir) as vault,
        pytest.raises(IndexCorruptError, match="check --repair"),
    ):
        vault.search("glacier", mode="keyword")
    repaired = _repair(root, index_dir)
    assert repaired["chunks_embedded"] == 0 and embeddings() == cached
    assert any(x.startswith("CURRENT: ") for x in repaired["derived"])  # type: ignore[union-attr]
    assert _answers(root, index_dir) == before


def test_a_deleted_catalog_is_repaired(indexed: tuple[Path, Path]) -> None:
    root, index_dir = indexed
    before = _answers(root, index_dir)
    IndexLayout(index_dir).live.catalog.unlink()
    cached = embeddings()
    assert run("check", str(root), "--index-dir", str(index_dir))[0] == 1
    repaired = _repair(root, index_dir)
    assert repaired["chunks_embedded"] == 0 and embeddings() == cached
    assert _answers(root, index_dir) == before


def _search_cli(root: Path, index_dir: Path, mode: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "vaultsearch.cli", "search", "glacier", "--mode", mode]
    return subprocess.run(
        [*argv, "--json", "--vault", str(root), "--index-dir", str(index_dir)],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("how", ["delete", "flip"])
def test_a_damaged_vector_file_is_never_a_silent_answer(
    indexed: tuple[Path, Path], how: str
) -> None:
    """Deleted, semantic search answered [] and hybrid keyword-only hits, exit 0 and
    nothing said; flipped bytes changed the answers. Now semantic search fails naming
    the repair, and hybrid answers keyword-only hits flagged as degraded on the Python
    API and in the CLI (stderr and --json)."""
    root, index_dir = indexed
    with Vault.open(root, index_dir=index_dir) as vault:
        keyword = [h.path for h in vault.search("glacier", mode="keyword")]
    vectors = VectorPart.location(IndexLayout(index_dir).live)
    if how == "delete":
        vectors.unlink()
    else:
        _flip_bytes(vectors, n=50)
    with Vault.open(root, index_dir=index_dir) as vault:
        with pytest.raises(IndexCorruptError, match="vaultsearch check --repair"):
            vault.search("glacier", mode="semantic")
        hits = vault.search("glacier")
        assert hits.degraded and "vector index" in hits.degraded
        assert [h.path for h in hits] == keyword
        assert vault.search("glacier", mode="keyword").degraded is None
    semantic = _search_cli(root, index_dir, "semantic")
    assert semantic.returncode == 2 and "vaultsearch check --repair" in semantic.stderr
    assert "Traceback" not in semantic.stderr
    hybrid = _search_cli(root, index_dir, "hybrid")
    assert hybrid.returncode == 0
    assert hybrid.stderr.startswith("warning: Degraded search: the vector index")
    found = json.loads(hybrid.stdout)
    assert found and all(h["degraded"] == hits.degraded for h in found)
    _repair(root, index_dir)
    with Vault.open(root, index_dir=index_dir) as vault:
        assert vault.search("glacier").degraded is None


def test_the_mcp_search_tool_says_its_answer_is_degraded(indexed: tuple[Path, Path]) -> None:
    """A real stdio session with a server that cannot write (this test holds the writer
    lock, so the server does not repair the index before the search)."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    root, index_dir = indexed
    layout = IndexLayout(index_dir)
    VectorPart.location(layout.live).unlink()
    args = ["-m", "vaultsearch.cli", "mcp", str(root), "--index-dir", str(index_dir), "--no-watch"]
    params = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))

    async def session() -> None:
        async with Client(
            stdio_client(params), mode="legacy", read_timeout_seconds=HANG_GUARD
        ) as c:
            hybrid = await c.call_tool("search", {"query": "glacier"})
            assert not hybrid.is_error
            data = hybrid.structured_content
            assert isinstance(data, dict) and data["hits"]
            assert data["degraded"].startswith("Degraded search: the vector index")
            assert data["degraded"] in hybrid.content[0].text
            semantic = await c.call_tool("search", {"query": "glacier", "mode": "semantic"})
            assert semantic.is_error
            assert "vaultsearch check --repair" in semantic.content[0].text

    lock = WriterLock(layout.lock)
    assert lock.acquire()
    try:
        anyio.run(session)
    finally:
        lock.release()


@pytest.mark.parametrize("suffix", [".idx", ".fieldnorm"])
def test_flipped_bytes_in_a_keyword_segment_are_flagged_not_silent(
    indexed: tuple[Path, Path], suffix: str
) -> None:
    """Flipped bytes in a Tantivy ``.idx`` changed answers without a panic; the segment's
    own checksum, read when a reader opens the generation, now fails keyword search and
    leaves hybrid semantic-only, flagged."""
    root, index_dir = indexed
    segment = _segment_file(index_dir, suffix)
    data = bytearray(segment.read_bytes())
    data[len(data) // 3] ^= 0xFF
    _replace_bytes(segment, bytes(data))
    with Vault.open(root, index_dir=index_dir) as vault:
        with pytest.raises(IndexCorruptError, match="check --repair"):
            vault.search("glacier", mode="keyword")
        hits = vault.search("glacier")
        assert (
            hits.degraded
            and "keyword index" in hits.degraded
            and "fails its checksum" in (hits.degraded)
        )
    assert _repair(root, index_dir)["chunks_embedded"] == 0
    with Vault.open(root, index_dir=index_dir) as vault:
        assert vault.search("glacier").degraded is None


def test_salvage_refuses_a_vector_changed_by_one_damaged_byte(
    tmp_path: Path, embedder: object
) -> None:
    """A vector's highest mantissa bit inverted leaves its norm within 1e-3 of 1 but
    changes a value by ~0.01, enough to reorder answers (bench/attack_repair.py, seed 0
    with the cache off): the salvage keeps only what the writer stored (norm 1 to
    float32 precision)."""
    from vaultsearch.store.salvage import SalvagedEmbeddings

    root = write_files(tmp_path / "vault", notes(4))
    index_dir = tmp_path / "index"
    with Vault.open(root, index_dir=index_dir) as vault:
        vault.index()
        model, dimension = vault.manager().embedder.cache_key, vault.manager().embedder.dimension
    catalog = IndexLayout(index_dir).live.catalog
    stored = _store_cached_vectors(catalog, model)
    db = sqlite3.connect(catalog)
    try:
        first = sorted(stored)[0]
        vector = np.frombuffer(stored[first], dtype=np.float32)
        k = int(np.argmin(np.abs(np.abs(vector) - 0.03)))
        damaged = bytearray(stored[first])
        damaged[4 * k + 2] ^= 0x40  # little-endian: the mantissa's highest bit
        changed = np.frombuffer(bytes(damaged), dtype=np.float32)
        assert abs(float(np.linalg.norm(changed)) - 1) < 1e-3  # what the old bound let in
        assert float(np.max(np.abs(changed - vector))) > 1e-3
        db.execute(
            "UPDATE embeddings SET vector=? WHERE model=? AND text_hash=?",
            (bytes(damaged), model, first),
        )
        db.commit()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    salvage = SalvagedEmbeddings(catalog, dimension)
    try:
        found = salvage.embedding_blobs(model, sorted(stored))
    finally:
        salvage.close()
    assert first not in found
    assert all(found[h] == stored[h] for h in found)
    assert len(found) == len(stored) - 1


@pytest.mark.parametrize("index", ["vectors", "sentences"])
def test_tombstones_that_disagree_with_the_catalog_are_found_and_repaired(
    indexed: tuple[Path, Path], index: str
) -> None:
    """An edit leaves the old rows in their segment, tombstoned in the list: a list that
    forgot them serves deleted chunks, and ``check`` must say so and repair it."""
    root, index_dir = indexed
    write_files(root, {"f0/Note 000.md": note(0, version=3)})
    with Vault.open(root, index_dir=index_dir) as vault:
        vault.index()
    path = derived(index).location(IndexLayout(index_dir).live)
    listing = json.loads(path.read_text())
    assert any(seg["dead"] for seg in listing["segments"])
    for seg in listing["segments"]:
        seg["dead"] = []
    _replace_bytes(path, json.dumps(listing).encode())
    args = [str(root), "--index-dir", str(index_dir)]
    code, out = run("check", "--json", *args)
    assert code != 0 and any(p.startswith(f"{index}:") for p in json.loads(out)["problems"])
    cached = embeddings()
    code, out = run("check", "--repair", "--json", *args)
    assert code == 0 and json.loads(out)["repaired"]["chunks_embedded"] == 0
    assert run("check", *args)[0] == 0
    assert embeddings() == cached


def test_keyword_segment_files_are_matched_to_their_segments(
    indexed: tuple[Path, Path],
) -> None:
    """``segment_problems`` lists the folder once and groups its files by segment: a
    file no ``.managed.json`` lists and a segment without its ``.term`` file are found,
    and a sound folder has no problem."""
    from vaultsearch.store.derived.keywords import segment_problems

    _, index_dir = indexed
    folder = KeywordPart.location(IndexLayout(index_dir).live)
    assert segment_problems(folder) == []
    term = next(folder.glob("*.term"))
    stray = folder / f"{term.stem}.stray"
    stray.write_bytes(b"")
    assert segment_problems(folder) == [
        "keywords: .managed.json does not list the index's files",
        f"keywords: {stray.name} fails its checksum",
    ]
    stray.unlink()
    term.rename(folder / "elsewhere.bin")
    assert segment_problems(folder) == [f"keywords: segment {term.stem[:8]} is missing files"]
