"""An edit does work proportional to what it changes: the catalog's row counts are kept
by triggers (and compared with a real count only by ``check``), and a long-lived writer
does not hash again the segment files it wrote or already found whole."""

from __future__ import annotations

import cProfile
import pstats
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import bump_mtime, embeddings, run_check
from tests.corpus import WORDS
from vaultsearch import Vault
from vaultsearch.errors import IndexCorruptError
from vaultsearch.store import rowcounts, segments
from vaultsearch.store.counts import current_counts
from vaultsearch.store.layout import IndexLayout


def note(i: int, version: int = 0) -> str:
    return (
        f"# Note {i:03d}\n\nAbout the {WORDS[i % 20]} and the {WORDS[(i + version) % 20]}. "
        f"Version {version}. See [[Note {(i + 1) % 30:03d}]] and [[Nowhere {i % 3}]].\n\n"
        + "".join(f"## Part {k}\n\n{WORDS[(i + k) % 20]} " * 40 + "\n\n" for k in range(i % 3))
    )


def write(root: Path, i: int, version: int) -> str:
    rel = f"f{i % 3}/Note {i:03d}.md"
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(note(i, version), encoding="utf-8")
    bump_mtime(path, seconds=version + 5)
    return rel


@pytest.fixture
def built(tmp_path: Path, embedder: object) -> tuple[Path, Path]:
    root = tmp_path / "vault"
    for i in range(30):
        write(root, i, 0)
    index_dir = tmp_path / "index"
    with Vault.open(root, index_dir=index_dir) as vault:
        vault.index()
    return root, index_dir


def _counts(index_dir: Path) -> dict[str, tuple[int | None, int]]:
    """Each counted table's (kept count, real count) in the published catalog."""
    db = sqlite3.connect(f"{IndexLayout(index_dir).live.catalog.as_uri()}?mode=ro", uri=True)
    try:
        return {t: (rowcounts.kept(db, t), rowcounts.counted(db, t)) for t in rowcounts.COUNTED}
    finally:
        db.close()


def test_kept_counts_follow_edits_moves_and_deletes(built: tuple[Path, Path]) -> None:
    root, index_dir = built
    with Vault.open(root, index_dir=index_dir) as vault:
        manager = vault.manager()
        steps = [
            [write(root, 3, 1), write(root, 4, 2)],  # other chunk and link counts
            [write(root, 40, 0), write(root, 41, 0)],  # new notes
        ]
        (root / "f0/Note 003.md").rename(root / "f2/Moved.md")
        steps.append(["f0/Note 003.md", "f2/Moved.md"])
        (root / "f1/Note 004.md").unlink()
        (root / "f2/Note 005.md").unlink()
        steps.append(["f1/Note 004.md", "f2/Note 005.md"])
        for paths in steps:
            manager.update(paths=paths)
            for table, (kept, real) in _counts(index_dir).items():
                assert kept == real, f"{table} after {paths}: kept {kept}, rows {real}"
    assert _counts(index_dir)["notes"] == (30, 30)
    assert run_check(root, index_dir).returncode == 0


def test_a_kept_count_that_drifted_is_named_by_check_and_recounted_by_repair(
    built: tuple[Path, Path],
) -> None:
    root, index_dir = built
    catalog = IndexLayout(index_dir).live.catalog
    db = sqlite3.connect(catalog)
    with db:
        db.execute("UPDATE meta SET value=value+1 WHERE key=?", (rowcounts.PREFIX + "chunks",))
    db.close()
    kept, real = _counts(index_dir)["chunks"]
    found = run_check(root, index_dir)
    assert found.returncode == 1
    assert f"catalog: its kept count of chunks is {kept}, its rows {real}" in found.stdout
    cached = embeddings()
    assert run_check(root, index_dir, "--repair").returncode == 0
    assert _counts(index_dir)["chunks"] == (real, real)
    assert embeddings() == cached, "the repair embedded something"


def test_a_catalog_without_kept_counts_is_read_and_given_them_by_its_next_writer(
    built: tuple[Path, Path],
) -> None:
    """An index from before the table: readers count rows, the next writer counts once."""
    root, index_dir = built
    db = sqlite3.connect(IndexLayout(index_dir).live.catalog)
    with db:
        for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='trigger'").fetchall():
            db.execute(f"DROP TRIGGER {name}")
        db.execute("DELETE FROM meta WHERE key LIKE 'rows.%'")
    db.close()
    assert _counts(index_dir)["chunks"][0] is None
    assert run_check(root, index_dir).returncode == 0
    assert (counts := current_counts(IndexLayout(index_dir))) is not None and counts.notes == 30
    with Vault.open(root, index_dir=index_dir) as vault:
        vault.manager().update(paths=[write(root, 7, 3)])
    assert all(kept == real for kept, real in _counts(index_dir).values())
    assert run_check(root, index_dir).returncode == 0


def _calls(profile: cProfile.Profile, *names: str) -> int:
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    return sum(v[1] for (_, _, name), v in stats.items() if name in names)


def test_a_long_lived_writer_neither_counts_every_row_nor_hashes_unchanged_segments(
    built: tuple[Path, Path],
) -> None:
    root, index_dir = built
    with Vault.open(root, index_dir=index_dir) as vault:
        manager = vault.manager()
        manager.update(paths=[write(root, 8, 1)])
        profile = cProfile.Profile()
        profile.enable()
        manager.update(paths=[write(root, 9, 1)])
        profile.disable()
        assert manager.update(paths=[write(root, 9, 2)]).updated == 1
    assert _calls(profile, "counted") == 0
    assert _calls(profile, "file_sha256") == 0
    assert run_check(root, index_dir).returncode == 0


def test_a_segment_replaced_under_a_long_lived_process_is_hashed_again(
    built: tuple[Path, Path],
) -> None:
    """What the writer remembers is a file's identity: damage put in its place (a new
    file) or written into it (a new time) is read and found."""
    _root, index_dir = built
    folder = IndexLayout(index_dir).live.root / "segments"
    path = sorted(folder.glob("vectors-*.rows.npy"))[0]
    digest = segments.file_sha256(path)
    segments._as_written(path, digest)  # remembered as whole
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    damaged = path.with_name(path.name + ".damaged")
    damaged.write_bytes(bytes(data))
    damaged.replace(path)
    with pytest.raises(IndexCorruptError, match="damaged"):
        segments._as_written(path, digest)
