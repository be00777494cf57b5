"""Hostile files beside normal notes: every one indexed, or skipped with a recorded reason.

The fast cases of bench/reliability_inputs.py, all in one vault so the suite pays for
one index run. A regression that opens a FIFO would hang here, so the special files
are in this test on purpose: `make test` stopping is the signal.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.hostile_files import (
    CASES,
    NORMAL_WORDS,
    catalog_view,
    outcome_ok,
    run_case_outcome,
    write_normal_notes,
)
from vaultsearch import Vault
from vaultsearch.config import config_from_dict
from vaultsearch.embedding import Embedder

ROOT = Path(__file__).resolve().parents[1]
FAST = [c for c in CASES if not c.slow and not c.non_root]


def test_hostile_files_beside_normal_notes(tmp_path: Path, embedder: Embedder) -> None:
    root, index_dir = tmp_path / "vault", tmp_path / "index"
    root.mkdir()
    write_normal_notes(root)
    for case in FAST:
        case.make(root)
    config = config_from_dict({"chunking": {"max_chunks_per_note": 8}})
    vault = Vault.open(root, index_dir=index_dir, config=config)

    summary = vault.index()
    notes, failures = catalog_view(index_dir)
    wrong = []
    for case in FAST:
        outcome, reason = run_case_outcome(notes, failures, case)
        if not outcome_ok(case, outcome):
            wrong.append(f"{case.name}: {outcome} ({reason}), expected {case.expect}")
        if outcome == "failed":
            assert reason and summary.failed[case.path] == reason
    assert wrong == []
    assert len(FAST) >= 70

    for word, path in NORMAL_WORDS.items():
        assert path in [h.path for h in vault.search(word, mode="keyword", top_k=50)], word
    for case in FAST:
        if case.word:
            found = [h.path for h in vault.search(case.word, mode="keyword", top_k=50)]
            assert case.path in found, case.name

    assert vault.check().status == "current"  # `index --check` reads the same files
    report = vault.manager().verify()
    assert report.ok, report.problems
    again = vault.index()
    assert (again.added, again.updated, again.removed, again.failed) == (0, 0, 0, {})
    assert vault.status()["failed"] == failures


def test_pdf_bombs_are_skipped_with_their_budget_and_the_batch_goes_on(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Small PDFs whose pages share one huge content stream, beside normal notes and a
    normal PDF: each bomb is skipped with a reason naming the budget it broke, the rest
    is indexed and searchable, and the next run does not parse the bombs again. Each
    run has one small budget; the other is a hang guard, so which budget a bomb meets
    does not depend on the machine's speed. Whose fault the time bomb is does: a
    machine too busy to give it half a core for its 3 s makes it ours
    (``fault.of_timeout``), and the next run reads it again, to fail once more."""
    from tests.pdfs import make_pdf, shared_stream_pdf

    root, index_dir = tmp_path / "vault", tmp_path / "index"
    root.mkdir()
    write_normal_notes(root)
    (root / "energy.pdf").write_bytes(make_pdf([["Photovoltaic cells and sunlight."]]))
    (root / "decode-bomb.pdf").write_bytes(shared_stream_pdf(100, 70))
    small_memory = config_from_dict({"index": {"parse_memory_mb": 64, "parse_timeout": 600}})
    summary = Vault.open(root, index_dir=index_dir, config=small_memory).index()
    assert list(summary.failed) == ["decode-bomb.pdf"] and summary.added == 4
    assert "index.parse_memory_mb (64 MB)" in summary.failed["decode-bomb.pdf"]

    (root / "time-bomb.pdf").write_bytes(shared_stream_pdf(100, 10, own_resources=True))
    short_time = config_from_dict({"index": {"parse_timeout": 3}})
    vault = Vault.open(root, index_dir=index_dir, config=short_time)
    summary = vault.index()
    assert list(summary.failed) == ["time-bomb.pdf"] and summary.added == 0
    assert "index.parse_timeout (3 s)" in summary.failed["time-bomb.pdf"]

    notes, failures = catalog_view(index_dir)
    assert notes == {*NORMAL_WORDS.values(), "energy.pdf"}
    assert set(failures) == {"decode-bomb.pdf", "time-bomb.pdf"}
    for word, path in {**NORMAL_WORDS, "photovoltaic": "energy.pdf"}.items():
        assert [h.path for h in vault.search(word, mode="keyword")] == [path]
    again = vault.index()
    assert (again.added, again.updated) == (0, 0)
    assert set(summary.to_retry) <= {"time-bomb.pdf"}
    assert set(again.failed) == set(summary.to_retry)
    assert set(vault.status()["failed"]) == set(failures)
    if not summary.to_retry:
        assert vault.status()["failed"] == failures


def test_a_nul_padded_note_survives_an_edit(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    note = root / "padded.md"
    note.write_bytes(b"# Padded\n\nmangoes\n" + b"\x00" * 3000)
    vault = Vault.open(root, index_dir=tmp_path / "index")
    vault.index()
    with note.open("ab") as fh:  # an editor appends after the padding it did not show
        fh.write(b"\nA new line about papayas.\n")
    st = note.stat()
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    summary = vault.index()
    assert summary.updated == 1 and summary.failed == {}
    assert [h.path for h in vault.search("papayas", mode="keyword")] == ["padded.md"]


def test_the_chunk_cap_merges_tiny_sections(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    (root / "many.md").write_text("".join(f"# H{i}\nx\n" for i in range(3000)), "utf-8")
    config = config_from_dict({"chunking": {"max_chunks_per_note": 100}})
    vault = Vault.open(root, index_dir=tmp_path / "index", config=config)
    summary = vault.index()
    assert summary.added == 1 and summary.chunks_written <= 100
    status = vault.status()
    assert status["chunks"] == summary.chunks_written


def test_read_note_reads_a_huge_file_only_up_to_the_limit(tmp_path: Path) -> None:
    from vaultsearch.app.browse import Browser

    root = tmp_path / "vault"
    root.mkdir()
    (root / "huge.md").write_text("# Huge\n\n" + "a line of text\n" * 400_000, "utf-8")
    config = config_from_dict({"vault": {"max_file_size": 100_000}})
    vault = Vault.open(root, index_dir=tmp_path / "index", config=config)
    read = Browser(vault).read_note("huge.md", start_line=1, end_line=3)
    assert read.slice.text.splitlines()[0].endswith("# Huge")
    assert read.partial is not None and "Only the first 99,998 bytes" in read.partial
    assert read.slice.total_lines < 10_000


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="unreadable files need root to become another user (setpriv)",
)
def test_unreadable_files_and_folders_as_another_user() -> None:
    """Root reads everything, so the index runs as nobody (uid 65534) in its own process,
    in a folder it can reach (pytest's tmp_path is private to root)."""
    tmp_path = Path(tempfile.mkdtemp(prefix="vaultsearch-nobody-"))
    try:
        run_as_nobody(tmp_path)
    finally:
        for path in tmp_path.rglob("*"):
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(tmp_path)


def run_as_nobody(tmp_path: Path) -> None:
    root, index_dir = tmp_path / "vault", tmp_path / "index"
    root.mkdir()
    write_normal_notes(root)
    cases = [c for c in CASES if c.non_root]
    tmp_path.chmod(0o755)
    for path in [root, *root.rglob("*")]:
        path.chmod(0o777 if path.is_dir() else 0o666)
    for case in cases:
        case.make(root)
    for folder in (index_dir, tmp_path / "home"):
        folder.mkdir()
        folder.chmod(0o777)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "HOME": str(tmp_path / "home"),
        "HF_HUB_OFFLINE": "1",
    }
    argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable]
    cmd = [*argv, "-m", "vaultsearch.cli", "index", str(root), "--index-dir", str(index_dir)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    notes, failures = catalog_view(index_dir)
    for case in cases:
        outcome, reason = run_case_outcome(notes, failures, case)
        assert outcome_ok(case, outcome) and reason, (case.name, outcome, reason)
        assert "denied" in (reason or "").lower()
    assert set(NORMAL_WORDS.values()) <= notes
