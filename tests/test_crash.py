"""A writer killed with SIGKILL mid-build keeps what it published; a rerun completes it."""

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
from vaultsearch.indexing.manager import FIRST_BATCH
from vaultsearch.store.layout import IndexLayout
from vaultsearch.store.manifest import read_state

N = 120  # a first build publishes its first 32 files at once: the kill lands in the rest


def _many_notes(n: int) -> dict[str, str | bytes]:
    return {
        f"folder{i % 7}/note {i:04d}.md": (
            f"# Note {i}\n\nThis note is about the {WORDS[i % 10]} and the {WORDS[(i * 3) % 10]}.\n"
            f"It links to [[note {(i + 1) % n:04d}]].\n\n## Details\n\nDetail number {i} "
            f"mentions {WORDS[(i * 7) % 10]} twice: {WORDS[(i * 7) % 10]}.\n"
        )
        for i in range(n)
    }


def _published_notes(index_dir: Path) -> int:
    current = IndexLayout(index_dir).current()
    state = read_state(current.root) if current is not None else None
    return int((state or {}).get("notes", 0))


def test_sigkill_mid_first_build_keeps_what_it_published(tmp_path: Path, embedder: object) -> None:
    """The first build is killed after its first published step: those notes stay
    searchable (chunk vectors and keywords, sentence vectors pending), and the rerun
    parses only the rest and embeds only what the killed run had not."""
    root = write_files(tmp_path / "vault", _many_notes(N))
    index_dir = tmp_path / "index"
    proc = subprocess.Popen(
        [sys.executable, "-m", "vaultsearch.cli", "index", str(root), "--index-dir",
         str(index_dir), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 600  # a hang guard only
    while _published_notes(index_dir) == 0 and proc.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert proc.poll() is None, "the writer finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    kept = _published_notes(index_dir)
    assert FIRST_BATCH <= kept < N
    cached = embeddings()
    vault = Vault.open(root, index_dir=index_dir)
    status = vault.status()
    assert status["notes"] == kept and status["notes_awaiting_sentences"] == kept
    assert f"{kept} notes awaiting sentence vectors" in status["counts_line"]
    problems = vault.manager().verify().problems
    assert problems and all(p.startswith("files: ") for p in problems), problems
    for path in sorted(vault.orchestrator.snapshot().note_by_path)[:5]:
        number = int(Path(path).stem.split()[-1])
        hits = vault.search(f"Detail number {number} mentions", mode="hybrid")
        assert hits and hits[0].path == path
    vault.close()

    vault = Vault.open(root, index_dir=index_dir)
    summary = vault.index()
    assert summary.added == N - kept, "the published notes were parsed again"
    assert embeddings() == cached + summary.chunks_embedded + summary.sentences_embedded
    assert summary.chunks_written == 2 * (N - kept), "the published notes' chunks were redone"
    assert summary.chunks_embedded <= summary.chunks_written
    report = vault.manager().verify()
    assert report.ok, report.problems
    status = vault.status()
    assert status["notes"] == N and status["notes_awaiting_sentences"] == 0
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
