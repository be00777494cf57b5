"""The QueryOrchestrator: parallel retrieval, fusion, boosts, grouping, snippets.

It reads a committed index generation and follows new ones as a writer commits
them (one stat of the state file per query). It never embeds a candidate: the
only model call at query time is the query itself.
"""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from vaultsearch.config import Config
from vaultsearch.embedding import Embedder, PairScorer, load_reranker
from vaultsearch.errors import IndexIncompatibleError, QueryError
from vaultsearch.models import Hit
from vaultsearch.search.filters import SearchFilters
from vaultsearch.search.fusion import (
    GraphBoost,
    graph_boost,
    rank_items,
    recency_multiplier,
    tied_ranks,
    weighted_rrf,
)
from vaultsearch.search.query import ParsedQuery, parse_query
from vaultsearch.search.snapshot import Snapshot
from vaultsearch.search.snippets import make_snippet
from vaultsearch.store.catalog import ChunkRow
from vaultsearch.store.graph import neighbours
from vaultsearch.store.layout import IndexLayout

MODES = ("hybrid", "keyword", "semantic")
MAX_TOP_K = 1000


@dataclass(slots=True)
class _Candidate:
    note_id: int
    chunks: list[int]
    score: float
    explain: dict[str, Any]


class QueryOrchestrator:
    def __init__(self, layout: IndexLayout, config: Config, embedder: Embedder) -> None:
        self.layout = layout
        self.config = config
        self.embedder = embedder
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="vaultsearch-query")
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        self._reranker: PairScorer | None = None
        self.last_timings: dict[str, float] = {}

    # --- index generations ------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """The current generation. A replaced one is not closed here: a search on another
        thread may still be reading it, and it closes itself when the last user drops it."""
        with self._lock:
            snap = self._snapshot
            if snap is None or snap.is_stale():
                snap = Snapshot.open(self.layout, self.config)
                self._snapshot = snap
            return snap

    def refresh(self) -> None:
        with self._lock:
            self._snapshot = None

    def close(self) -> None:
        with self._lock:
            if self._snapshot is not None:
                self._snapshot.close()
            self._snapshot = None
        self._pool.shutdown(wait=False, cancel_futures=True)

    # --- search -----------------------------------------------------------------
    def search(
        self,
        query: str,
        top_k: int = 10,
        mode: str = "hybrid",
        filters: SearchFilters | None = None,
        explain: bool = False,
    ) -> list[Hit]:
        if mode not in MODES:
            raise QueryError(f"Unknown search mode {mode!r}; use one of: {', '.join(MODES)}.")
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= MAX_TOP_K:
            raise QueryError(f"top_k must be a whole number from 1 to {MAX_TOP_K}, got {top_k!r}.")
        if not isinstance(query, str):
            raise QueryError("The query must be a string.")
        parsed = parse_query(query)
        filters = (filters or SearchFilters()).with_query(parsed.tags, parsed.paths)
        if parsed.empty and not parsed.text:
            return []
        snap = self.snapshot()
        if mode != "keyword" and snap.model and snap.model != self.embedder.model_id:
            raise IndexIncompatibleError(
                f"The index was built with the embedding model '{snap.model}', but the "
                f"configuration asks for '{self.embedder.model_id}'.",
                fix="run 'vaultsearch index' to rebuild with the configured model, "
                "or set embedding.model back; keyword search (--mode keyword) still works",
            )
        allowed_notes = snap.allowed_notes(filters)
        if allowed_notes is not None and not allowed_notes:
            return []
        allowed = snap.chunks_of_notes(allowed_notes)
        per_strategy = max(self.config.search.candidates, top_k * 4)
        rankings, raw = self._retrieve(snap, parsed, mode, per_strategy, allowed)
        candidates = self._fuse(snap, rankings, raw, explain, allowed_notes, parsed.excluded)
        ranked = self._rerank(snap, parsed, candidates)
        if filters.min_score is not None:
            ranked = [c for c in ranked if c.score >= filters.min_score]
        return self._hits(snap, parsed, ranked[:top_k], explain)

    def _retrieve(
        self,
        snap: Snapshot,
        parsed: ParsedQuery,
        mode: str,
        k: int,
        allowed: np.ndarray | None,
    ) -> tuple[dict[str, dict[int, int]], dict[str, dict[int, float]]]:
        timings: dict[str, float] = {}

        def semantic() -> list[tuple[int, float]]:
            t = time.perf_counter()
            text = parsed.text or " ".join(parsed.highlight_terms)
            vec = self.embedder.embed_query(text)
            out = snap.vectors.search(vec, k, allowed)
            timings["semantic_start"], timings["semantic_end"] = t, time.perf_counter()
            return out

        def keyword() -> list[tuple[int, float]]:
            t = time.perf_counter()
            out = snap.keywords.search(
                parsed.terms, parsed.phrases, parsed.excluded, snap.boosts, k, allowed
            )
            timings["keyword_start"], timings["keyword_end"] = t, time.perf_counter()
            return out

        jobs = {}
        if mode in ("hybrid", "semantic"):
            jobs["semantic"] = self._pool.submit(semantic)
        if mode in ("hybrid", "keyword") and not parsed.empty:
            jobs["keyword"] = self._pool.submit(keyword)
        results = {name: f.result() for name, f in jobs.items()}
        if "semantic" in results and parsed.excluded:
            banned = snap.chunks_containing(parsed.excluded, [c for c, _ in results["semantic"]])
            results["semantic"] = [(c, s) for c, s in results["semantic"] if c not in banned]
        self.last_timings = timings
        rankings = {name: tied_ranks(res) for name, res in results.items()}
        raw = {name: dict(res) for name, res in results.items()}
        return rankings, raw

    def _fuse(
        self,
        snap: Snapshot,
        rankings: dict[str, dict[int, int]],
        raw: dict[str, dict[int, float]],
        explain: bool,
        allowed_notes: set[int] | None,
        excluded: tuple[str, ...] = (),
    ) -> list[_Candidate]:
        s = self.config.search
        weights = {"keyword": s.keyword_weight, "semantic": s.semantic_weight}
        chunk_scores = weighted_rrf(rankings, weights, s.rrf_k)
        note_scores: dict[int, float] = {}
        note_chunks: dict[int, list[int]] = {}
        for cid in rank_items(chunk_scores):
            nid = snap.note_of_chunk.get(cid)
            if nid is None:
                continue
            note_chunks.setdefault(nid, []).append(cid)
            note_scores.setdefault(nid, chunk_scores[cid])
        boosts: dict[str, GraphBoost] = {}
        if s.graph_boost and s.graph_share > 0 and snap.has_links:
            path_scores = {snap.notes[n].path: v for n, v in note_scores.items()}
            boosted, boosts = graph_boost(
                path_scores, lambda p: neighbours(snap.graph, p), s.graph_top, s.graph_share
            )
            for path, value in boosted.items():
                nid = snap.note_by_path.get(path)
                if nid is None or (allowed_notes is not None and nid not in allowed_notes):
                    continue
                if nid not in note_scores and excluded and snap.note_contains(nid, excluded):
                    continue  # a linked note must obey -word like a retrieved one
                note_scores[nid] = value
        now = time.time()
        candidates = []
        for nid, score in note_scores.items():
            mult = (
                recency_multiplier((now - snap.notes[nid].date) / 86400, s.recency_tiers)
                if s.recency
                else 1.0
            )
            info: dict[str, Any] = {}
            if explain:
                best = note_chunks.get(nid, [None])[0]
                for name, ranks in rankings.items():
                    if best in ranks:
                        info[name] = {"rank": ranks[best], "score": round(raw[name][best], 6)}
                info["rrf"] = round(chunk_scores.get(best, 0.0), 6) if best else 0.0
                boost = boosts.get(snap.notes[nid].path)
                if boost is not None:
                    info["graph_boost"] = {"from": boost.source, "added": round(boost.added, 6)}
                info["recency"] = mult
            chunks = note_chunks.get(nid) or snap.first_chunks(nid)
            if not chunks:
                continue
            candidates.append(_Candidate(nid, chunks, score * mult, info))
        candidates.sort(key=lambda c: (-c.score, snap.notes[c.note_id].path))
        return candidates

    def _rerank(
        self, snap: Snapshot, parsed: ParsedQuery, candidates: list[_Candidate]
    ) -> list[_Candidate]:
        s = self.config.search
        if not s.reranker or not candidates:
            return candidates
        model = self._load_reranker()
        head, tail = candidates[: s.rerank_top], candidates[s.rerank_top :]
        rows = snap.chunk_rows([c.chunks[0] for c in head])
        pairs = [(parsed.text, rows[c.chunks[0]].text) for c in head]
        scores = model.predict(pairs)
        for c, score in zip(head, scores, strict=True):
            c.explain["rerank"] = round(score, 6)
            c.explain["fused"] = round(c.score, 6)
            # 1 + sigmoid keeps reranked hits above every fused score (those stay below 1)
            c.score = 1.0 + 1.0 / (1.0 + math.exp(-score))
        head.sort(key=lambda c: (-c.score, snap.notes[c.note_id].path))
        return head + tail

    def _load_reranker(self) -> PairScorer:
        if self._reranker is None:
            self._reranker = load_reranker(self.config.search.reranker)
        return self._reranker

    def _hits(
        self, snap: Snapshot, parsed: ParsedQuery, ranked: list[_Candidate], explain: bool
    ) -> list[Hit]:
        limit = self.config.search.max_chunks_per_note
        wanted = [cid for c in ranked for cid in c.chunks[:limit]]
        rows = snap.chunk_rows(wanted)
        terms = parsed.highlight_terms
        hits = []
        for c in ranked:
            note = snap.notes[c.note_id]
            groups = merge_chunks([rows[i] for i in c.chunks[:limit] if i in rows])
            if not groups:
                continue
            best = groups[0]
            info = dict(c.explain) if explain else None
            if info is not None and len(groups) > 1:
                info["more"] = [
                    {
                        "heading_path": " > ".join(g.heading_path),
                        "lines": [g.start_line, g.end_line],
                    }
                    for g in groups[1:]
                ]
            hits.append(
                Hit(
                    path=note.path,
                    title=note.title,
                    heading_path=" > ".join(best.heading_path),
                    start_line=best.start_line,
                    end_line=best.end_line,
                    snippet=make_snippet(best.text, terms),
                    score=c.score,
                    chunk_id=best.id,
                    explain=info,
                )
            )
        return hits


def merge_chunks(chunks: list[ChunkRow]) -> list[ChunkRow]:
    """Merge chunks of one note whose line ranges overlap or touch (split sections,
    overlap windows), keeping the best-ranked one's place first."""
    groups: list[ChunkRow] = []
    for ch in chunks:
        for i, g in enumerate(groups):
            if (
                ch.start_line <= g.end_line + 1
                and g.start_line <= ch.end_line + 1
                and (ch.heading_path == g.heading_path)
            ):
                groups[i] = ChunkRow(
                    g.id, g.note_id, g.ordinal, g.heading_path,
                    min(g.start_line, ch.start_line), max(g.end_line, ch.end_line),
                    min(g.start_char, ch.start_char), max(g.end_char, ch.end_char),
                    g.text,
                    g.embed_hash,
                )  # fmt: skip
                break
        else:
            groups.append(ch)
    return groups
