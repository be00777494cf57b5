"""A new sentence split (``SPLIT_VERSION``) costs what it changes: an index split by the
previous version derives again only the sentence units of the note kinds the new one
changed (``SPLIT_KINDS``), in a clone sharing every other segment, instead of a rebuild.

An index of the previous version is made by building with that version's splitter (a
code chunk had no units then, so its one sentence row was its own vector) and its
manifest value: the code that built such indexes, not a stand-in for the code under test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import HANG_GUARD, kill_index_once_cloned, write_files
from tests.test_codeprose import PYTHON
from tests.test_store_reliability import _shared_files, run
from tests.test_watcher import wait_until
from vaultsearch import Vault
from vaultsearch.app.live import LiveIndex, LiveState
from vaultsearch.parsers import sentences
from vaultsearch.store import catalog, manifest
from vaultsearch.store.counts import current_counts
from vaultsearch.store.derived.sentences import read_pending
from vaultsearch.store.layout import IndexLayout
from vaultsearch.store.manifest import MANIFEST_DIGEST, read_manifest, read_state, write_state

NOTES = {
    "Owls.md": "# Owls\n\nOwls hunt at night. They hear mice under the snow.\n",
    "Tea.md": "# Tea\n\nGreen tea is steamed, black tea is oxidised. See [[Owls]].\n",
}
DOCSTRING_QUERY = "how many typos are tolerated in a word depending on its length"


def _split_one(text: str, kind: str) -> list[str]:
    """Version 1's ``unit_texts``: code had no sentence units."""
    return [] if kind == "code" else sentences.sentence_units(text)


@contextmanager
def split_version_one() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(manifest, "SPLIT_VERSION", 1)
        mp.setattr(catalog, "unit_texts", _split_one)
        mp.setattr("vaultsearch.indexing.batch.unit_texts", _split_one)
        yield


def recorded_split(index_dir: Path) -> object:
    found = read_manifest(IndexLayout(index_dir).live.root) or {}
    return found["sentences"]["split"]


def build_with_split_one(root: Path, index_dir: Path) -> None:
    with split_version_one(), Vault.open(root, index_dir=index_dir) as vault:
        vault.index()
    assert recorded_split(index_dir) == 1


def mark_split_one(index_dir: Path) -> None:
    """A manifest saying split 1, its digest recorded as the writer records it."""
    live = IndexLayout(index_dir).live
    data = read_manifest(live.root)
    assert data is not None
    data["sentences"]["split"] = 1
    digest = manifest.write_manifest(live.root, data)
    manifest.write_manifest(index_dir, data)
    write_state(live.root, {**(read_state(live.root) or {}), MANIFEST_DIGEST: digest})


def test_a_markdown_index_only_writes_its_manifest_again(tmp_path: Path, embedder: object) -> None:
    root = write_files(tmp_path / "vault", dict(NOTES))
    index_dir = tmp_path / "index"
    with Vault.open(root, index_dir=index_dir) as vault:
        vault.index()
    mark_split_one(index_dir)
    segments = _shared_files(index_dir)
    args = [str(root), "--index-dir", str(index_dir)]
    code, out = run("index", *args, "--check")
    assert code == 1 and "sentences.split: 1 -> 2" in out and "rebuild" not in out, out
    with Vault.open(root, index_dir=index_dir) as vault:
        assert vault.rebuild_check() is None
    code, out = run("index", *args, "--json")
    summary = json.loads(out)
    assert code == 0 and summary["rebuild_reasons"] == [], summary
    assert summary["chunks_embedded"] == 0 and summary["sentences_embedded"] == 0
    assert _shared_files(index_dir) == segments
    assert recorded_split(index_dir) == 2
    assert run("check", *args)[0] == 0
    assert run("index", *args, "--check")[0] == 0


def _hits(vault: Vault) -> list[tuple[str, float]]:
    return [(h.path, round(h.score, 4)) for h in vault.search(DOCSTRING_QUERY, top_k=5)]


def test_a_mixed_index_embeds_only_its_code_sentences(tmp_path: Path, embedder: object) -> None:
    root = write_files(tmp_path / "vault", {**NOTES, "fuzzy.py": PYTHON})
    index_dir = tmp_path / "index"
    build_with_split_one(root, index_dir)
    with Vault.open(root, index_dir=index_dir) as vault:
        before = vault.search(DOCSTRING_QUERY, mode="semantic", explain=True)
        sentences_before = vault.manager().check()
    old = next(h for h in before if h.path == "fuzzy.py")
    assert old.explain is not None
    branches = {p.branch: p.raw for p in old.explain.branches}
    assert branches["sentences"] == pytest.approx(branches["semantic"], abs=2e-3)
    assert "sentences.split: 1 -> 2" in " ".join(sentences_before.reasons)
    segments = _shared_files(index_dir)
    with Vault.open(root, index_dir=index_dir) as vault:
        held = current_counts(IndexLayout(index_dir))
        summary = vault.index()
        after = current_counts(IndexLayout(index_dir))
        assert vault.manager().verify().ok
        got = _hits(vault)
        hit = next(
            h
            for h in vault.search(DOCSTRING_QUERY, mode="semantic", explain=True)
            if h.path == "fuzzy.py"
        )
    assert summary.rebuild_reasons == [] and summary.chunks_embedded == 0
    assert summary.sentences_embedded == 3  # the docstring's two sentences and a comment
    assert held is not None and after is not None
    assert after.sentences == held.sentences - 1 + 3  # the code chunk's one row became three
    others = {f for f in segments if not f[0].startswith("sentences-")}
    assert others and others <= _shared_files(index_dir)  # chunk vectors, keywords: the same files
    assert recorded_split(index_dir) == 2
    assert hit.explain is not None
    assert {p.branch: p.raw for p in hit.explain.branches}["sentences"] > branches["sentences"]
    fresh = tmp_path / "fresh"
    with Vault.open(root, index_dir=fresh) as vault:
        vault.index()
        assert _hits(vault) == got


def test_a_kill_mid_way_leaves_the_previous_generation_served(
    tmp_path: Path, embedder: object
) -> None:
    """Killed as soon as its new generation folder exists: the split-1 generation is
    still served, or the re-split one whole; the next run finishes either way."""
    root = write_files(tmp_path / "vault", {**NOTES, "fuzzy.py": PYTHON})
    index_dir = tmp_path / "index"
    build_with_split_one(root, index_dir)
    layout = IndexLayout(index_dir)
    before = layout.live.name
    kill_index_once_cloned(root, index_dir)
    live = layout.live
    if live.name == before:
        assert recorded_split(index_dir) == 1
    else:  # killed after publishing the re-split clone: whole, its code chunks pending
        assert recorded_split(index_dir) == 2 and len(read_pending(live)) <= 1
    with Vault.open(root, index_dir=index_dir) as vault:
        summary = vault.index()
        assert summary.rebuild_reasons == [] and summary.chunks_embedded == 0
        assert vault.manager().verify().ok
        assert vault.check().status == "current"
    assert recorded_split(index_dir) == 2 and not read_pending(layout.live)


def test_the_start_up_update_of_watch_and_the_mcp_server_splits_again(
    tmp_path: Path, embedder: object
) -> None:
    """``watch`` and the MCP server update through a ``LiveIndex``, which leaves stage 2
    to steps of its own: the re-split chunks are filled by them, nothing rebuilt."""
    root = write_files(tmp_path / "vault", {**NOTES, "fuzzy.py": PYTHON})
    index_dir = tmp_path / "index"
    build_with_split_one(root, index_dir)
    runs: list[dict[str, Any]] = []

    def on_change(kind: str, state: LiveState) -> None:
        if kind == "run":
            runs.append(state.last_summary or {"error": state.last_error})

    with Vault.open(root, index_dir=index_dir) as vault:
        live = LiveIndex(vault, on_change=on_change)
        live.start()
        try:
            assert wait_until(lambda: bool(runs) and live.wait_idle(0.1)), "start-up update"
            assert live.wait_idle(HANG_GUARD)
        finally:
            live.stop()
    assert runs and all("error" not in r and r["rebuild_reasons"] == [] for r in runs), runs
    assert sum(r["chunks_embedded"] for r in runs) == 0
    assert recorded_split(index_dir) == 2 and not read_pending(IndexLayout(index_dir).live)
