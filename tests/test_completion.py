"""A note only the keyword branch found gets its exact cosine, not a semantic zero.

Real model, real FAISS and Tantivy: the retrieval depth is cut to a few chunks so
that each branch misses notes the other finds, and every completed cosine is checked
against what the semantic branch gives the same note when it searches deep enough.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import write_files
from vaultsearch import Vault
from vaultsearch.search.boilerplate import weigh_down
from vaultsearch.search.orchestrator import _neighbours
from vaultsearch.search.query import parse_query
from vaultsearch.search.ranking import FusionSettings, complete, fuse
from vaultsearch.store.vectors import SegmentedVectors

TOPICS = [
    "sourdough bread needs a lively starter and a long cold proof",
    "the bicycle chain wants oil every few hundred kilometres",
    "tax returns are due at the end of the fiscal year",
    "octopuses have three hearts and blue blood",
    "the garden shed roof leaks when it rains hard",
    "jazz chords stack sevenths and ninths over the root",
    "a mortgage rate is fixed for the first five years",
    "volcanoes form where tectonic plates pull apart",
    "the kettle descaler is white vinegar and water",
    "chess openings trade a pawn for quick development",
    "migrating geese fly in a V to save energy",
    "the laptop battery swells when kept at full charge",
]
QUERY = "chain oil, chess pawn, geese"
"""Three notes' words: at depth 2 each branch reaches a note the other does not."""


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> Vault:
    files: dict[str, str | bytes] = {
        f"n{i:02d}.md": f"# Note {i}\n\n{text.capitalize()}.\n" for i, text in enumerate(TOPICS)
    }
    v = Vault.open(write_files(tmp_path_factory.mktemp("completion") / "vault", files))
    v.index()
    return v


def _parts(vault: Vault, depth: int) -> dict[str, dict[str, float]]:
    """Each candidate note's raw score per branch, from a hybrid retrieval at ``depth``."""
    orch = vault.orchestrator
    snap = orch.snapshot()
    retrieved = orch.retrieve(snap, parse_query(QUERY), "hybrid", depth)
    out: dict[str, dict[str, float]] = {}
    for c in orch.rank(snap, retrieved, "hybrid"):
        out[snap.notes[c.note_id].path] = {p.branch: p.raw for p in c.explain.branches}
    return out


def _alone(vault: Vault, mode: str) -> dict[str, float]:
    hits = vault.search(QUERY, mode=mode, top_k=100, explain=True)
    return {h.path: h.explain.branches[0].raw for h in hits if h.explain is not None}


def test_completed_cosines_equal_a_deep_search(vault: Vault) -> None:
    semantic, keyword = _alone(vault, "semantic"), _alone(vault, "keyword")
    shallow = _parts(vault, 2)
    for path, parts in shallow.items():
        assert parts["semantic"] == pytest.approx(semantic[path], abs=1e-5), path
        if "keyword" in parts:
            assert parts["keyword"] == pytest.approx(keyword[path], rel=1e-5), path
    # the shallow cut really left the semantic branch short of a keyword-only note
    orch = vault.orchestrator
    snap = orch.snapshot()
    r = orch.retrieve(snap, parse_query(QUERY), "hybrid", 2)
    assert r.completion.get("semantic") and set(r.completion) == {"semantic"}, r.completion


def test_completion_adds_no_candidates(vault: Vault) -> None:
    orch = vault.orchestrator
    snap = orch.snapshot()
    r = orch.retrieve(snap, parse_query(QUERY), "hybrid", 2)
    found = {snap.note_of_chunk[c] for hits in r.branches.values() for c, _ in hits}
    assert {c.note_id for c in orch.rank(snap, r, "hybrid")} == found


def test_single_branch_modes_are_not_completed(vault: Vault) -> None:
    orch = vault.orchestrator
    snap = orch.snapshot()
    for mode in ("keyword", "semantic"):
        assert orch.retrieve(snap, parse_query(QUERY), mode, 2).completion == {}


def test_complete_merges_only_missing_notes() -> None:
    note_of = {1: 10, 2: 20, 3: 30, 4: 30, 5: 40}
    branches = {"keyword": [(1, 9.0)], "semantic": [(2, 0.8), (1, 0.7)]}
    extra = {
        "keyword": [(2, 4.0), (5, 8.0)],  # note 40 was found by no branch: ignored
        "semantic": [(1, 0.1), (3, 0.5)],  # note 10 is already in the semantic list
    }
    out = complete(branches, extra, note_of)
    assert out["keyword"] == [(1, 9.0), (2, 4.0)]
    assert out["semantic"] == [(2, 0.8), (1, 0.7)]
    assert complete(branches, {}, note_of) == branches


def test_vector_scores_are_cosines_and_skip_unknown_ids() -> None:
    index = SegmentedVectors.from_arrays(
        [10, 20], np.array([[2.0, 0.0, 0.0], [0.0, 3.0, 4.0]], dtype=np.float32)
    )
    query = np.array([0.0, 3.0, 4.0], dtype=np.float32)  # unnormalised on purpose
    assert index.score(query, [20, 10]) == [(20, pytest.approx(1.0)), (10, pytest.approx(0.0))]
    assert index.score(query, [99, 20, 20]) == [(20, pytest.approx(1.0))]
    assert index.score(query, [99]) == [] and index.score(query, []) == []


def test_a_failed_query_embedding_leaves_no_keyword_job_waiting(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keyword job waits for the query vector to score what it found: a failed
    embedding must release it too, or each failed hybrid query would hold a pool worker."""
    from vaultsearch.errors import ModelLoadError

    def broken(text: str) -> np.ndarray:
        raise ModelLoadError("the model file is gone")

    monkeypatch.setattr(vault.orchestrator.embedder, "embed_query", broken)
    for _ in range(3):  # more failures than the pool has workers
        with pytest.raises(ModelLoadError):
            vault.search(QUERY)
    monkeypatch.undo()
    assert vault.search(QUERY)


def test_identical_vectors_score_the_same_wherever_they_sit() -> None:
    """BLAS's matrix-vector product rounded a repeated row differently by its position, so
    identical notes fused 1e-7 apart; every height of stack gives one value here."""
    from vaultsearch.store.vectors import dot_rows

    rng = np.random.default_rng(3)
    row, query = (
        rng.standard_normal(384, dtype=np.float32),
        rng.standard_normal(384, dtype=np.float32),
    )
    for n in range(1, 60):
        assert len(set(dot_rows(np.tile(row, (n, 1)), query).tolist())) == 1, n
    index = SegmentedVectors.from_arrays(np.arange(40), np.tile(row, (40, 1)))
    assert len({s for _, s in index.score(query, range(40))}) == 1


def test_the_completion_fused_ranks_as_every_completed_chunk_fused(
    tmp_path: Path, embedder: object
) -> None:
    """Fusion is handed of each note's completed chunks only those that can move a
    ranking (``_shown_chunks``): the same notes, scores and shown chunks as fusing every
    completed chunk. Long notes of many sections, so that the keyword side finds notes
    with far more chunks than a hit shows."""
    files: dict[str, str | bytes] = {
        f"long{i}.md": f"# Long {i}\n\n"
        + "\n\n".join(
            f"## Part {j}\n\n{TOPICS[(i + j) % len(TOPICS)].capitalize()}. "
            + ("Chess and geese. " if j % 4 == i % 4 else "")
            + " ".join(TOPICS[(i * j + 3) % len(TOPICS)].split()[::-1])
            for j in range(14)
        )
        for i in range(8)
    }
    v = Vault.open(write_files(tmp_path / "vault", files))
    try:
        v.index()
        orch = v.orchestrator
        snap = orch.snapshot()
        limit = orch.config.search.max_chunks_per_note
        settings = FusionSettings.from_config(orch.config.search, "hybrid")
        for query in (QUERY, "chess geese", "geese flying in a V", "oil the chain"):
            r = orch.retrieve(snap, parse_query(query), "hybrid", 2)
            per_note = Counter(snap.note_of_chunk[c] for c, _ in r.completion.get("semantic", ()))
            assert per_note and max(per_note.values()) > limit, query
            branches = complete(
                weigh_down(r.branches, snap.boilerplate),
                weigh_down(r.completion, snap.boilerplate),
                snap.note_of_chunk,
            )
            whole = fuse(branches, snap, settings, time.time(), neighbours=_neighbours(snap))
            got = orch.rank(snap, r, "hybrid")
            assert [(c.note_id, c.score, c.chunks[:limit]) for c in got] == [
                (c.note_id, c.score, c.chunks[:limit]) for c in whole
            ], query
    finally:
        v.close()


def test_each_retrieved_chunk_is_re_scored_once(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sentence re-scorer scores each retrieved chunk once a retrieval: the dense
    side leaves the chunks the keyword side found to it, which re-scores them anyway.
    The embedding waits for the keyword search here, as it finishes first on a real
    index."""
    import threading

    from vaultsearch.store.derived.keywords import GuardedReader
    from vaultsearch.store.derived.sentences import SentenceVectors

    orch = vault.orchestrator
    snap = orch.snapshot()
    rescored: list[int] = []
    keyword_done = threading.Event()
    search, embed, keyword = SentenceVectors.search, orch.embedder.embed_query, GuardedReader.search

    def recorded_search(self: SentenceVectors, query: object, k: int, allowed: object) -> object:
        rescored.extend(np.asarray(allowed).tolist())
        return search(self, query, k, allowed)  # type: ignore[arg-type]

    def keyword_first(self: GuardedReader, *args: object) -> object:
        try:
            return keyword(self, *args)  # type: ignore[arg-type]
        finally:
            keyword_done.set()

    def embed_after(text: str) -> np.ndarray:
        keyword_done.wait()
        return embed(text)

    monkeypatch.setattr(SentenceVectors, "search", recorded_search)
    monkeypatch.setattr(GuardedReader, "search", keyword_first)
    monkeypatch.setattr(orch.embedder, "embed_query", embed_after)
    r = orch.retrieve(snap, parse_query(QUERY), "hybrid", 2)
    both = {c for c, _ in r.branches["semantic"]} & {c for c, _ in r.branches["keyword"]}
    assert both  # a chunk both branches found: it was re-scored on both sides before
    assert len(rescored) == len(set(rescored))
    found = {c for b in ("semantic", "keyword") for c, _ in r.branches[b]}
    assert {c for c, _ in r.branches["sentences"]} <= found <= set(rescored)
