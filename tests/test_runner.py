"""The index runner: one run at a time, progress, cancel within one model call, resume."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from tests.conftest import HANG_GUARD, WriteVault, embeddings, live_catalog
from vaultsearch.app.vault import Vault
from vaultsearch.errors import IndexBusyError
from vaultsearch.indexing.runner import RunSnapshot, progress_log


def _notes(n: int, parts: int = 12) -> dict[str, str | bytes]:
    """Notes whose every chunk text is distinct, so each chunk is one embedding."""
    out: dict[str, str | bytes] = {}
    for i in range(n):
        body = "\n\n".join(
            f"## Part {j} of note {i}\n\n" + f"Owls {i} and rivers {j} talk at night. " * 28
            for j in range(parts)
        )
        out[f"folder/n{i}.md"] = f"# Note {i}\n\n{body}"
    return out


def _cancel_after_first_model_call(vault: Vault) -> list[tuple[str, RunSnapshot]]:
    """Cancel the next run once its first model call is done (a listener runs on the
    indexing thread, so the moment is exact); later runs are left alone."""
    runner = vault.runner()
    events: list[tuple[str, RunSnapshot]] = []

    def listen(event: str, snap: RunSnapshot) -> None:
        events.append((event, snap))
        if event == "progress" and snap.chunks_done > 0 and snap.state == "running":
            runner.cancel()
        if event in ("done", "cancelled", "failed"):
            unsubscribe()

    unsubscribe = runner.subscribe(listen)
    return events


def test_cancel_stops_a_first_build_and_the_next_run_resumes(
    write_vault: WriteVault, embedder: object
) -> None:
    root = write_vault(_notes(4))
    with Vault.open(root) as vault:
        runner = vault.runner()
        events = _cancel_after_first_model_call(vault)
        first = runner.run("update")
        assert first.cancelled
        batch = vault.config.embedding.batch_size
        # the one model call under way when asked (sentences and chunks alike)
        assert first.chunks_embedded + first.sentences_embedded == batch
        snap = runner.snapshot()
        assert snap.state == "cancelled" and snap.finished_at and snap.current_file is None
        assert snap.files_done == 0  # cancelled inside its first batch: no file committed
        assert [e for e, _ in events if e != "progress"] == ["started", "cancelling", "cancelled"]
        assert vault.check().status == "update"  # what was not reached is pending

        second = runner.run("update")
        assert not second.cancelled and second.added == 4
        catalog = live_catalog(vault.index_dir)
        try:
            chunks = catalog.count("chunks")
        finally:
            catalog.close()
        assert second.chunks_embedded == chunks - first.chunks_embedded
        sentences = first.sentences_embedded + second.sentences_embedded
        assert sentences > 0 and embeddings() == chunks + sentences
        assert runner.snapshot().state == "done" and runner.snapshot().percent == 100.0
        assert vault.check().status == "current"

    records = progress_log(vault.index_dir / "progress.jsonl")
    ends = [r["event"] for r in records if r["event"] != "progress"]
    assert ends == ["started", "cancelling", "cancelled", "started", "done"]
    assert records[-1]["summary"]["added"] == 4


def test_progress_reports_files_chunks_and_the_current_file(
    write_vault: WriteVault, embedder: object
) -> None:
    root = write_vault(_notes(3, parts=4))
    with Vault.open(root) as vault:
        seen: list[RunSnapshot] = []
        vault.runner().subscribe(lambda e, s: seen.append(s))
        summary = vault.runner().run("update")
    running = [s for s in seen if s.state == "running" and s.files_total]
    assert running and {s.files_total for s in running} == {3}
    assert {s.current_file for s in running} - {None} <= {f"folder/n{i}.md" for i in range(3)}
    assert any(s.current_file for s in running)
    texts = summary.chunks_embedded + summary.sentences_embedded  # what the model ran on
    assert max(s.chunks_total for s in running) == texts
    percents = [s.percent for s in running]
    assert percents == sorted(percents) and 0 < percents[-1] <= 100
    final = seen[-1].to_dict()
    assert final["state"] == "done" and final["files_done"] == 3 and final["percent"] == 100.0
    assert "current_file" not in final and "error" not in final


def test_a_cancelled_rebuild_keeps_the_live_generation(
    write_vault: WriteVault, embedder: object
) -> None:
    root = write_vault(_notes(3, parts=4))
    with Vault.open(root) as vault:
        vault.runner().run("update")
        before = vault.layout.current()
        for path in root.glob("folder/*.md"):  # new texts, so the rebuild needs the model
            path.write_text(path.read_text() + "\n\nA new closing line.\n")
        _cancel_after_first_model_call(vault)
        summary = vault.runner().run("rebuild")
        assert summary.cancelled
        assert vault.layout.current() == before
        assert len(vault.search("owls rivers", top_k=10)) == 3


def test_a_second_start_is_refused_while_one_runs(
    write_vault: WriteVault, embedder: object
) -> None:
    root = write_vault(_notes(3, parts=6))
    with Vault.open(root) as vault:
        runner = vault.runner()
        release = threading.Event()
        runner.subscribe(lambda e, s: release.wait(HANG_GUARD) if e == "started" else None)
        assert not vault.indexing_now
        runner.start("rebuild")
        try:
            assert vault.indexing_now  # what search answers say, whoever started the run
            with pytest.raises(IndexBusyError, match="already going in this process"):
                runner.start("update")
            with pytest.raises(IndexBusyError):
                runner.run("update", wait=False)
        finally:
            release.set()
        assert runner.wait(HANG_GUARD)
        assert runner.snapshot().state == "done" and not vault.indexing_now


def test_a_writer_in_another_process_refuses_a_start(
    write_vault: WriteVault, embedder: object
) -> None:
    root = write_vault(_notes(1, parts=2))
    with Vault.open(root) as vault:
        lock_path = vault.layout.lock
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        holder = subprocess.Popen(
            [sys.executable, "-c", _HOLD_LOCK, str(lock_path)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            with pytest.raises(IndexBusyError, match="Another vaultsearch process"):
                vault.runner().start("update")
            assert vault.runner().snapshot().state == "idle"
        finally:
            holder.kill()
            holder.wait()
        vault.runner().start("update")
        assert vault.runner().wait(HANG_GUARD) and vault.runner().snapshot().state == "done"
        assert not vault.manager().lock.held  # the run gave back the lock it took


_HOLD_LOCK = """
import sys, time
from pathlib import Path
from vaultsearch.store.lock import WriterLock
lock = WriterLock(Path(sys.argv[1]))
assert lock.acquire()
print("held", flush=True)
time.sleep(3600)  # killed by the test; never gone while it needs the lock held
"""
