"""A writer killed with SIGKILL mid-build publishes nothing half-built; a rerun completes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import embeddings, write_files
from tests.corpus import WORDS
from vaultsearch import Vault
from vaultsearch.store.catalog import Catalog
from vaultsearch.store.layout import IndexLayout

N = 320  # the writer commits every 256 files: one batch lands, one is cut


def _many_notes(n: int) -> dict[str, str | bytes]:
    return {
        f"folder{i % 7}/note {i:04d}.md": (
            f"# Note {i}\n\nThis note is about the {WORDS[i % 10]} and the {WORDS[(i * 3) % 10]}.\n"
            f"It links to [[note {(i + 1) % n:04d}]].\n\n## Details\n\nDetail number {i} "
            f"mentions {WORDS[(i * 7) % 10]} twice: {WORDS[(i * 7) % 10]}.\n"
        )
        for i in range(n)
    }


def _committed_batches(index_dir: Path) -> int:
    """Batches committed to any generation's catalog, published or still being built."""
    best = 0
    for generation in IndexLayout(index_dir).all_generations():
        if not generation.catalog.exists():
            continue
        try:
            c = Catalog(generation.catalog, readonly=True)
            try:
                best = max(best, c.generation)
            finally:
                c.close()
        except Exception:
            continue
    return best


def test_sigkill_mid_build_then_rerun(tmp_path: Path, embedder: object) -> None:
    """The first build of an index is killed after a batch: nothing half-built is
    published, and the rerun embeds only what the killed run had not."""
    root = write_files(tmp_path / "vault", _many_notes(N))
    index_dir = tmp_path / "index"
    proc = subprocess.Popen(
        [sys.executable, "-m", "vaultsearch.cli", "index", str(root), "--index-dir",
         str(index_dir), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    while _committed_batches(index_dir) < 1 and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "the writer finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    assert IndexLayout(index_dir).current() is None, "a half-built generation was published"
    cached = embeddings()
    assert cached > 0, "the killed run's embeddings were kept"
    vault = Vault.open(root, index_dir=index_dir)
    summary = vault.index()
    assert summary.added == N
    assert embeddings() == cached + summary.chunks_embedded + summary.sentences_embedded
    assert summary.chunks_embedded < summary.chunks_written, "the killed run's work was reused"
    report = vault.manager().verify()
    assert report.ok, report.problems
    assert vault.status()["notes"] == N
    assert len(IndexLayout(index_dir).all_generations()) == 1, "the half-built one was swept"
    assert vault.search(f"note {N - 1:04d}", mode="keyword")
    vault.close()


def test_the_writer_sweeps_its_own_temps_not_a_running_servers(
    tmp_path: Path, embedder: object
) -> None:
    """A killed writer's temp goes; the temp of a ``manager.json`` that a running MCP
    server is writing right now (without the writer lock) must not, or that server's
    rename fails and it exits."""
    vault = Vault.open(write_files(tmp_path / "vault", {"a.md": "# A\n\nApples.\n"}))
    vault.index()
    root = vault.index_dir
    killed = [root / ".CURRENT.k1ll3d.tmp", root / ".sources.json.k1ll3d.tmp"]
    server = root / ".manager.json.wr1t1ng.tmp"
    for tmp in [*killed, server]:
        tmp.write_text("{}", encoding="utf-8")
    vault.index()
    assert [t for t in killed if t.exists()] == []
    assert server.exists()
    vault.close()
