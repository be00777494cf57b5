"""A writer killed with SIGKILL mid-batch leaves a consistent index; a re-run completes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import write_files
from vaultsearch import Vault
from vaultsearch.store.catalog import Catalog
from vaultsearch.store.verify import verify_index

N = 320  # the writer commits every 256 files: one batch lands, one is cut
WORDS = [
    "river",
    "mountain",
    "cloud",
    "forest",
    "desert",
    "ocean",
    "valley",
    "glacier",
    "meadow",
    "canyon",
]


def _many_notes(n: int) -> dict[str, str | bytes]:
    return {
        f"folder{i % 7}/note {i:04d}.md": (
            f"# Note {i}\n\nThis note is about the {WORDS[i % 10]} and the {WORDS[(i * 3) % 10]}.\n"
            f"It links to [[note {(i + 1) % n:04d}]].\n\n## Details\n\nDetail number {i} "
            f"mentions {WORDS[(i * 7) % 10]} twice: {WORDS[(i * 7) % 10]}.\n"
        )
        for i in range(n)
    }


def _generation(index_dir: Path) -> int:
    catalog_path = index_dir / "catalog.sqlite"
    if not catalog_path.exists():
        return 0
    try:
        c = Catalog(catalog_path, readonly=True)
        try:
            return c.generation
        finally:
            c.close()
    except Exception:
        return 0


def test_sigkill_mid_batch_then_rerun(tmp_path: Path, embedder: object) -> None:
    root = write_files(tmp_path / "vault", _many_notes(N))
    index_dir = tmp_path / "index"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vaultsearch.cli",
            "index",
            str(root),
            "--index-dir",
            str(index_dir),
            "--quiet",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 240
    while _generation(index_dir) < 1 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the writer finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    vault = Vault.open(root, index_dir=index_dir)
    catalog = Catalog(vault.layout.catalog, readonly=True)
    committed = catalog.count("notes")
    catalog.close()
    assert 0 < committed < N, "killed after a first batch, before the last"
    repaired = vault.manager().repair()
    assert repaired.chunks_embedded == 0
    report = verify_index(vault.manager())
    assert [p for p in report.problems if not p.startswith("files:")] == []
    assert report.problems, "the files not yet indexed are reported"

    summary = vault.index()
    assert summary.added == N - committed
    report = verify_index(vault.manager())
    assert report.ok, report.problems
    assert vault.status()["notes"] == N
    assert vault.search(f"note {N - 1:04d}", mode="keyword")
