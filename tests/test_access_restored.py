"""A note we were not allowed to read is read once its permission is given back.

A failure is recorded with the file's time and size and not read again until they
change; ``chmod`` changes neither, so a note whose permission was fixed stayed failed
until it was edited. Root reads any file through its capabilities, so under root (CI)
the runs are made in processes that ``setpriv`` has stripped of the two that override
file permissions.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import HANG_GUARD
from vaultsearch.fault import DENIED, over_when_readable

NO_OVERRIDE = ["--bounding-set=-dac_override,-dac_read_search",
               "--inh-caps=-dac_override,-dac_read_search"]  # fmt: skip


def _runner() -> list[str]:
    """What runs the CLI as a user whom permissions bind."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without util-linux's setpriv: permissions do not bind root")
    return [setpriv, *NO_OVERRIDE, "--"]


def _cli(base: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_runner(), sys.executable, "-m", "vaultsearch.cli", *args],
        capture_output=True,
        text=True,
        cwd=base,
        timeout=HANG_GUARD,
    )


def _status(base: Path, root: Path, index_dir: Path) -> dict[str, object]:
    done = _cli(base, "status", str(root), "--index-dir", str(index_dir), "--json")
    assert done.returncode == 0, done.stderr
    status: dict[str, object] = json.loads(done.stdout)
    return status


def test_a_note_whose_permission_is_given_back_is_indexed_though_unchanged(tmp_path: Path) -> None:
    base = tmp_path
    root, index_dir = base / "vault", base / "index"
    root.mkdir()
    (root / "open.md").write_text("# Open\n\nAlder trees by the alpine lake.\n")
    locked = root / "locked.md"
    locked.write_text("# Locked\n\nBirches on the bank of the river.\n")
    locked.chmod(0)
    first = _cli(base, "index", str(root), "--index-dir", str(index_dir), "--quiet")
    assert first.returncode == 0, first.stderr
    failed = _status(base, root, index_dir)["failed"]
    assert isinstance(failed, dict) and set(failed) == {"locked.md"}
    assert failed["locked.md"].startswith(DENIED) and over_when_readable(failed["locked.md"])

    before = locked.stat().st_mtime_ns
    locked.chmod(0o644)
    assert locked.stat().st_mtime_ns == before  # what the failure was recorded with
    check = _cli(base, "index", str(root), "--index-dir", str(index_dir), "--check")
    assert check.returncode != 0, check.stdout  # an update is due: the note can be read now
    again = _cli(base, "index", str(root), "--index-dir", str(index_dir), "--quiet")
    assert again.returncode == 0, again.stderr
    status = _status(base, root, index_dir)
    assert status["failed"] == {}
    hits = _cli(base, "search", "birches river bank", "--vault", str(root), "--index-dir",
                str(index_dir), "--json")  # fmt: skip
    assert hits.returncode == 0, hits.stderr
    assert "locked.md" in [h["path"] for h in json.loads(hits.stdout)]
    assert _cli(base, "index", str(root), "--index-dir", str(index_dir), "--check").returncode == 0


def test_only_a_want_of_permission_is_over_when_the_file_opens() -> None:
    assert over_when_readable("cannot read: Permission denied")
    assert over_when_readable(f"cannot read: {os.strerror(1)}")  # EPERM
    assert not over_when_readable("not a regular file")
    assert not over_when_readable("cannot read: Too many levels of symbolic links")
    assert not over_when_readable("file is larger than index.max_file_mb (10 MB); skipped.")
