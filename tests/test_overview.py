"""File counts for the page: by size and time, never reading a note."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import WriteVault, bump_mtime
from vaultsearch.app.vault import Vault
from vaultsearch.fault import FailureRow
from vaultsearch.indexing.overview import count_files, file_counts
from vaultsearch.indexing.scan import FileInfo


def _info(path: str, size: int = 10, mtime: int = 1) -> FileInfo:
    return FileInfo(path, Path("/nowhere") / path, size, mtime)


def test_counts_compare_sizes_and_times_only() -> None:
    scanned = {p: _info(p) for p in ("same.md", "new.md", "touched.md", "bad.md", "fixed.md")}
    scanned["touched.md"] = _info("touched.md", mtime=2)
    scanned["fixed.md"] = _info("fixed.md", size=11)
    known = {
        "same.md": (1, "h1", 10, 1),
        "touched.md": (2, "h2", 10, 1),
        "gone.md": (3, "h3", 10, 1),
    }
    failures = {
        "bad.md": FailureRow("binary file (NUL bytes)", 1, 10),
        "fixed.md": FailureRow("too big", 1, 10),
    }
    counts = count_files(scanned, known, failures)
    assert counts.to_dict() == {
        "total": 5, "indexed": 1, "not_indexed": 3, "deleted": 1, "failed": 1, "to_retry": 0,
    }  # fmt: skip
    assert counts.failed == {"bad.md": "binary file (NUL bytes)"}
    assert counts.pending == 4


def test_counts_of_a_real_vault_follow_its_index(write_vault: WriteVault, embedder: object) -> None:
    root = write_vault(
        {"a.md": "# A\n\nalpha\n", "b.md": "# B\n\nbeta\n", "c.bin.md": b"\x00\x01" * 99}
    )
    with Vault.open(root) as vault:
        before = file_counts(vault.manager())
        assert (before.total, before.not_indexed, before.indexed) == (3, 3, 0)
        vault.index()
        after = file_counts(vault.manager())
        assert after.to_dict() == {
            "total": 3, "indexed": 2, "not_indexed": 0, "deleted": 0, "failed": 1, "to_retry": 0,
        }  # fmt: skip
        assert "binary" in after.failed["c.bin.md"]
        (root / "b.md").unlink()
        bump_mtime(root / "a.md")
        (root / "d.md").write_text("# D\n")
        moved = file_counts(vault.manager())
        assert (moved.not_indexed, moved.deleted, moved.indexed) == (2, 1, 0)
