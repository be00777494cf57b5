"""A first build in two stages: chunk vectors, keywords and links published first,
sentence vectors after; status says how many notes wait for the second stage, a search
answers meanwhile, and a build killed in the second stage resumes it, embedding only
what is missing."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import HANG_GUARD, embeddings, write_files
from tests.corpus import WORDS
from tests.test_rest import serve
from vaultsearch import Vault
from vaultsearch.app.live import LiveIndex
from vaultsearch.config import Config
from vaultsearch.indexing.runner import RunSnapshot
from vaultsearch.server.http.rest import ControlContext, rest_app
from vaultsearch.store.derived.sentences import read_pending
from vaultsearch.store.layout import IndexLayout
from vaultsearch.store.manifest import read_state

TOPICS = ["falcons", "glaciers", "violins", "orchards", "lighthouses", "volcanoes"]


def _with_index(config: Config, **settings: object) -> Config:
    return dataclasses.replace(config, index=dataclasses.replace(config.index, **settings))


def _notes(n: int) -> dict[str, str | bytes]:
    """Notes of a few sentences each, every one with a sentence found nowhere else."""
    return {
        f"topic{i % 6}/note {i:04d}.md": (
            f"# Note {i} on {TOPICS[i % 6]}\n\n"
            f"This note is about {TOPICS[i % 6]} and the {WORDS[i % 10]}. "
            f"Its keeper counts {i} {WORDS[(i * 3) % 10]} every morning. "
            f"The second paragraph mentions the {WORDS[(i * 7) % 10]} beside the river. "
            f"Visitors ask about record number {i} often.\n\n"
            f"See [[note {(i + 1) % n:04d}]] for more about {TOPICS[(i + 1) % 6]}.\n"
        )
        for i in range(n)
    }


def _state(index_dir: Path) -> dict[str, int]:
    current = IndexLayout(index_dir).current()
    return (read_state(current.root) or {}) if current is not None else {}


@pytest.mark.parametrize("first_batch", [32, 50])
def test_index_first_batch_decides_whether_a_build_runs_in_two_stages(
    tmp_path: Path, embedder: object, monkeypatch: pytest.MonkeyPatch, first_batch: int
) -> None:
    """40 notes: more than the default 32 embed their sentences in a second stage, not
    more than a first batch of 50 embed them as they go."""
    monkeypatch.setenv("VAULTSEARCH_INDEX_FIRST_BATCH", str(first_batch))
    root = write_files(tmp_path / "vault", _notes(40))
    with Vault.open(root, index_dir=tmp_path / "index") as vault:
        vault.manager().defer_sentences = True
        first = vault.index()
        awaiting = vault.status()["notes_awaiting_sentences"]
    assert (first.sentences_embedded == 0, awaiting) == (
        (True, 40) if first_batch < 40 else (False, 0)
    )


def test_stage_one_is_searchable_and_status_counts_the_stages(
    tmp_path: Path, embedder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = 40
    root = write_files(tmp_path / "vault", _notes(n))
    with Vault.open(root) as vault:
        manager = vault.manager()
        manager.defer_sentences = True  # as a LiveIndex does: stage 2 is left for later
        first = vault.index()
        assert first.sentences_embedded == 0 and first.chunks_embedded == n
        status = vault.status()
        assert status["notes"] == n and status["notes_awaiting_sentences"] == n
        assert manager.verify().ok, manager.verify().problems
        check = vault.check()
        assert check.status == "update"
        assert check.reasons == [f"{n} chunks wait for their sentence vectors (a build's stage 2)"]

        hits = vault.search("how many does the keeper count every morning, record 17")
        assert hits and hits[0].path == "topic5/note 0017.md"

        manager.use_config(_with_index(manager.config, fill_notes=10))
        step = manager.fill_sentences(steps=1)
        assert step.sentences_embedded > 0 and step.chunks_embedded == 0
        status = vault.status()
        assert status["notes_awaiting_sentences"] == n - 10
        assert manager.verify().ok, manager.verify().problems

        snap = vault.orchestrator.snapshot()
        waiting = sorted(
            snap.notes[snap.note_of_chunk[c]].path
            for c in read_pending(IndexLayout(vault.index_dir).live)
        )
        assert len(waiting) == n - 10
        number = int(Path(waiting[-1]).stem.split()[-1])
        explained = vault.search(f"visitors ask about record number {number}", explain=True)
        assert explained[0].path == waiting[-1]
        explain = explained[0].explain
        assert explain is not None
        parts = {p.branch: p for p in explain.branches}
        # a note still waiting for its sentences is scored by its chunk's own vector there
        assert parts["sentences"].raw == pytest.approx(parts["semantic"].raw, abs=1e-3)

        with serve(rest_app(ControlContext.for_vault(vault))) as url:
            body = json.loads(_get(url + "/status"))
        assert body["notes_awaiting_sentences"] == n - 10

        rest = manager.fill_sentences()
        assert rest.chunks_embedded == 0
        assert vault.status()["notes_awaiting_sentences"] == 0
        assert manager.fill_sentences().sentences_embedded == 0
        assert vault.check().status == "current"
        assert manager.verify().ok, manager.verify().problems
        assert _state(vault.index_dir)["sentences"] == vault.status()["sentences"] > n


def _get(url: str) -> str:
    import httpx

    return httpx.get(url, timeout=HANG_GUARD).text


def test_a_build_killed_in_stage_two_resumes_it_embedding_only_what_is_missing(
    tmp_path: Path, embedder: object
) -> None:
    n = 150
    root = write_files(tmp_path / "vault", _notes(n))
    index_dir = tmp_path / "index"
    proc = subprocess.Popen(
        [sys.executable, "-m", "vaultsearch.cli", "index", str(root), "--index-dir",
         str(index_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 900  # a hang guard only
    while proc.poll() is None:
        assert time.monotonic() < deadline
        state = _state(index_dir)
        if state.get("notes") == n and 0 < state.get("sentences_pending_notes", 0) < n:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the build ended before its second stage could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    _, err = proc.communicate()
    assert "stage 1: " in err and "stage 2: " in err

    state = _state(index_dir)
    waiting = state["sentences_pending_notes"]
    assert 0 < waiting < n and state["sentences"] > 0
    cached = embeddings()
    with Vault.open(root, index_dir=index_dir) as vault:
        assert vault.status()["notes_awaiting_sentences"] == waiting
        hits = vault.search("how many does the keeper count every morning, record 140")
        assert hits and hits[0].path == "topic2/note 0140.md"
        summary = vault.index()
        assert summary.added == summary.updated == summary.chunks_embedded == 0
        assert summary.sentences_embedded > 0
        assert embeddings() == cached + summary.sentences_embedded, "a text was embedded twice"
        assert vault.status()["notes_awaiting_sentences"] == 0
        report = vault.manager().verify()
        assert report.ok, report.problems


def test_a_live_index_adds_the_sentences_after_its_update_in_steps(
    tmp_path: Path, embedder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = 40
    root = write_files(tmp_path / "vault", _notes(n))
    monkeypatch.setenv("VAULTSEARCH_INDEX_FILL_NOTES", "16")
    with Vault.open(root) as vault:
        runs: list[tuple[str, str | None, int]] = []

        def seen(event: str, snap: RunSnapshot) -> None:
            if event in ("done", "cancelled", "failed"):
                runs.append((event, snap.kind, vault.manager().sentences_pending()))

        unsubscribe = vault.runner().subscribe(seen)
        live = LiveIndex(vault)
        live.start()
        try:
            assert live.wait_idle(900)  # a hang guard only
        finally:
            live.stop()
            unsubscribe()
        assert runs[0][:2] == ("done", "update") and runs[0][2] == n
        steps = runs[1:]
        assert [kind for _, kind, _ in steps] == ["sentences"] * len(steps) and len(steps) >= 2
        assert [left for _, _, left in steps] == sorted(
            {left for _, _, left in steps}, reverse=True
        )
        assert steps[-1][2] == 0
        assert vault.status()["notes_awaiting_sentences"] == 0
        assert vault.manager().verify().ok
