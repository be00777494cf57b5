"""The QueryOrchestrator: parallel retrieval, fusion, boosts, grouping, snippets.

It reads a committed index generation and follows new ones as a writer commits
them (one stat of the state file per query). It never embeds a candidate: the
only model call at query time is the query itself.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import cast

import numpy as np

from vaultsearch.config import Config
from vaultsearch.embedding import Embedder
from vaultsearch.embedding.endpoint import EndpointError
from vaultsearch.embedding.rerank import Reranker, make_reranker
from vaultsearch.errors import IndexCorruptError, IndexIncompatibleError, QueryError
from vaultsearch.models import Hit, Passage, SearchHits, SourceKind
from vaultsearch.search.boilerplate import WEIGHT as BOILERPLATE
from vaultsearch.search.boilerplate import weigh_down
from vaultsearch.search.chunkscores import ChunkScores
from vaultsearch.search.chunkscores import notes_of as chunk_notes
from vaultsearch.search.codelead import definition_first
from vaultsearch.search.confidence import Evidence, confidence, coverage, idf
from vaultsearch.search.expansion import QueryExpander
from vaultsearch.search.filters import NoteMeta, SearchFilters
from vaultsearch.search.hops import anchor_gifts, hop_gifts, link_sentence
from vaultsearch.search.idlepages import IdleRelease
from vaultsearch.search.query import ParsedQuery, parse_query, words
from vaultsearch.search.ranking import Candidate, Fusion, FusionSettings, complete, extend
from vaultsearch.search.request import KINDS, MAX_TOP_K, MODES
from vaultsearch.search.snapshot import Snapshot
from vaultsearch.search.snippets import make_snippet
from vaultsearch.search.symbolrefs import defined_names, reference_gifts
from vaultsearch.search.typos import (
    PROBED,
    Fix,
    corrected,
    is_word,
    one_edit,
    spelled,
    surface,
    unknown_typos,
)
from vaultsearch.search.typos import sure as is_sure
from vaultsearch.store.catalog import ChunkRow
from vaultsearch.store.derived import DERIVED, DerivedIndex, Query
from vaultsearch.store.fuzzy import MAX_EXPANSIONS, Expansion, osa_distance
from vaultsearch.store.layout import IndexLayout

DEEPEST = 4 * MAX_TOP_K
"""A page longer than the ranking at ``search.candidates`` is extended from rankings 4, 16,
... times as deep, up to this: the levels do not depend on ``top_k`` (only how many are
used), so a longer page always begins with a shorter one."""


def deepened(
    ranked: list[Candidate], deeper: Callable[[int], list[Candidate]], top_k: int, depth: int
) -> list[Candidate]:
    """``ranked``, the ranking from ``depth`` (``search.candidates``) chunks per branch,
    lengthened to ``top_k`` notes from ``deeper`` rankings 4, 16, ... times as deep. Every
    store sizes its branches by this one rule, so the Milvus store ranks the candidates
    the local store ranks: a depth that grew with ``top_k`` gave it other ones."""
    while len(ranked) < top_k and depth < DEEPEST:
        depth *= 4
        grown = extend(ranked, deeper(depth))
        if len(grown) == len(ranked):
            break
        ranked = grown
    return ranked


@dataclass(frozen=True, slots=True)
class Retrieved:
    """One query's branch results, before fusion."""

    branches: dict[str, list[tuple[int, float]]]
    expansions: tuple[Expansion, ...] = ()
    banned: frozenset[int] = frozenset()
    """Notes holding a ``-word``: left out in every mode."""
    text: str = ""
    """The query without its operators, misspelt words corrected (what an exact title or
    alias match compares)."""
    completion: dict[str, Sequence[tuple[int, float]]] = field(default_factory=dict)
    """Per branch, scores of the chunks of notes only the other branch found
    (``ranking.complete``); in hybrid mode, the semantic branch's, else empty."""
    embedded: str = ""
    """The text the semantic branches embedded when it is not the query typed (a
    misspelt word corrected, ``typos``); empty otherwise."""
    vector: np.ndarray | None = None
    """The query vector (None in keyword mode): the hop gift scores links with it."""


class QueryOrchestrator:
    def __init__(self, layout: IndexLayout, config: Config, embedder: Embedder) -> None:
        self.layout = layout
        self.config = config
        self.embedder = embedder
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="vaultsearch-query")
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        self._reopen = False
        self._idle = IdleRelease(self._release_pages)
        self._reranker: Reranker | None = None
        self._expander: QueryExpander | None = None
        self.last_timings: dict[str, float] = {}

    # --- index generations ------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """The current generation. A replaced one is not closed here: a search on another
        thread may still be reading it, and it closes itself when the last user drops it."""
        with self._lock:
            snap = self._snapshot
            if snap is None or self._reopen or snap.is_stale():
                snap = Snapshot.open(self.layout, self.config, previous=snap)
                self._snapshot, self._reopen = snap, False
            return snap

    def held(self) -> Snapshot | None:
        """The snapshot already open, if any and still the published one (nothing is
        opened): ``status`` then counts what a search reads, and after a run (a first
        build's steps too) what that run published."""
        snap = self._snapshot
        return None if snap is None or self._reopen or snap.is_stale() else snap

    def refresh(self) -> None:
        """Open the generation again at the next query (new settings, or a run of this
        process): following the one held, so only what changed is read again."""
        with self._lock:
            self._reopen = True

    def _release_pages(self) -> None:
        snap = self._snapshot
        if snap is not None:
            snap.release_pages()

    def close(self) -> None:
        self._idle.close()
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
    ) -> SearchHits:
        try:
            return self._search(query, top_k, mode, filters, explain)
        except (sqlite3.Error, UnicodeDecodeError) as exc:  # a catalog damaged since open
            first = str(exc).splitlines()[0][:160] if str(exc) else ""
            raise IndexCorruptError(
                f"The catalog cannot be read ({type(exc).__name__}: {first}).",
                fix="vaultsearch check --repair",
            ) from exc
        finally:
            self._idle.touch()

    def _search(
        self,
        query: str,
        top_k: int,
        mode: str,
        filters: SearchFilters | None,
        explain: bool,
    ) -> SearchHits:
        if mode not in MODES:
            raise QueryError(f"Unknown search mode {mode!r}; use one of: {', '.join(MODES)}.")
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= MAX_TOP_K:
            raise QueryError(f"top_k must be a whole number from 1 to {MAX_TOP_K}, got {top_k!r}.")
        if not isinstance(query, str):
            raise QueryError("The query must be a string.")
        parsed = parse_query(query)
        filters = (filters or SearchFilters()).with_query(parsed.tags, parsed.paths)
        if parsed.empty and not parsed.text:
            return SearchHits()
        snap = self.snapshot()
        mode, degraded = _mode_left(snap, mode)
        if mode != "keyword" and snap.model and snap.model != self.embedder.model_id:
            raise IndexIncompatibleError(
                f"The index was built with the embedding model '{snap.model}', but the "
                f"configuration asks for '{self.embedder.model_id}'.",
                fix="run 'vaultsearch index' to rebuild with the configured model, "
                "or set embedding.model back; keyword search (--mode keyword) still works",
            )
        allowed_notes = snap.allowed_notes(filters)
        if allowed_notes is not None and not allowed_notes:
            return SearchHits(degraded=degraded)
        notes: list[str] = []
        depth = self.config.search.candidates
        retrieved, ranked, rewrites = self._ranked(snap, parsed, mode, depth, allowed_notes, notes)
        ranked = deepened(
            ranked,
            lambda d: self._ranked(snap, parsed, mode, d, allowed_notes, notes, rerank=False)[1],
            top_k,
            depth,
        )
        if filters.min_score is not None:
            ranked = [c for c in ranked if c.score >= filters.min_score]
        if explain and (rewrites or notes or retrieved.embedded):
            for c in ranked[:top_k]:
                c.explain = replace(
                    c.explain,
                    rewrites=rewrites,
                    notes=tuple(dict.fromkeys(notes)),
                    embedded=retrieved.embedded,
                )
        return SearchHits(self._hits(snap, parsed, retrieved, ranked[:top_k], explain), degraded)

    def _ranked(
        self,
        snap: Snapshot,
        parsed: ParsedQuery,
        mode: str,
        depth: int,
        allowed_notes: set[int] | None,
        notes: list[str],
        rerank: bool = True,
    ) -> tuple[Retrieved, list[Candidate], tuple[str, ...]]:
        """The whole ranking from ``depth`` chunks per branch. The depth is the same for
        every ``top_k``: a deeper retrieval adds candidates and so moves the ones already
        found, and the first hits must not change with how many are asked for. A deeper
        level only lengthens the page past notes already ranked (and reranked), so it
        is not sent to the reranker again."""
        retrieved = self.retrieve(snap, parsed, mode, depth, allowed_notes)
        retrieved, settings, rewrites = self._expand(
            snap, parsed, retrieved, mode, depth, allowed_notes, notes
        )
        candidates = self.rank(snap, retrieved, mode, allowed_notes, settings)
        ranked = self._rerank(snap, retrieved.text, candidates, notes) if rerank else candidates
        return retrieved, ranked, rewrites

    def _expand(
        self,
        snap: Snapshot,
        parsed: ParsedQuery,
        retrieved: Retrieved,
        mode: str,
        k: int,
        allowed_notes: set[int] | None,
        notes: list[str],
    ) -> tuple[Retrieved, FusionSettings | None, tuple[str, ...]]:
        """The query's branches plus those of each expanded query (``semantic@1``, ...),
        weighted ``expand_weight`` of their original, for the one fusion. Keyword mode
        is left literal: it promises notes that contain the words typed. The model is
        asked about the query with its misspelt words corrected (``Retrieved.text``), as
        the query is embedded: a rewrite of a typo carries the typo on."""
        s = self.config.search
        if not s.expand or mode == "keyword" or not parsed.text.strip():
            return retrieved, None, ()
        try:
            expansion = self._load_expander().expand(retrieved.text)
        except EndpointError as exc:
            notes.append(f"query expansion failed, the query was searched alone: {exc.message}")
            return retrieved, None, ()
        base = FusionSettings.from_config(s, mode)
        weights = dict(base.weights)
        branches = dict(retrieved.branches)
        for label, text in expansion.queries():
            variant = parse_query(text)
            if not variant.text.strip():
                continue
            found = self.retrieve(
                snap, variant, "semantic" if label == "p" else mode, k, allowed_notes
            )
            for branch, hits in found.branches.items():
                branches[f"{branch}@{label}"] = hits
                weights[f"{branch}@{label}"] = base.weights.get(branch, 1.0) * s.expand_weight
        settings = replace(base, weights=weights)
        return replace(retrieved, branches=branches), settings, expansion.shown()

    def _load_expander(self) -> QueryExpander:
        if self._expander is None:
            self._expander = QueryExpander(self.config.search)
        return self._expander

    def retrieve(
        self,
        snap: Snapshot,
        parsed: ParsedQuery,
        mode: str,
        k: int,
        allowed_notes: set[int] | None = None,
    ) -> Retrieved:
        """Each branch's top-k chunks: the expensive, cacheable half.

        The derived indexes a mode reads (``DERIVED``, by role): the lexical branches run
        on the pool while this thread embeds the query and runs the dense ones. The
        lexical side finishes first, so once the query vector exists it also scores what
        it found (the re-scorers on its chunks, the completing branches on its notes'
        chunks) under the vector scan: the re-scorers and the completion then add little
        after the two meet (the re-scorers on the dense branches' chunks alone)."""
        timings: dict[str, float] = {}
        allowed = snap.chunks_of_notes(allowed_notes)
        widened: list[Expansion] = []
        weights = FusionSettings.from_config(self.config.search, mode).weights
        used = [c for c in DERIVED if mode in c.modes]
        dense = [c for c in used if c.role == "branch" and _takes_vector(c)]
        lexical = [c for c in used if c.role == "branch" and not _takes_vector(c)]
        lexical = lexical if not parsed.empty else []
        rescorers = [
            c
            for c in used
            if c.role == "rescore"
            and (dense or not _takes_vector(c))
            and len(snap.readers[c.name])
            and bool(weights.get(c.branch, 1.0))
        ]
        completing = [c for c in dense if c.completes] if lexical else []
        query = Query(
            text=parsed.text,
            terms=tuple(parsed.keyword_terms),
            phrases=tuple(tuple(p) for p in parsed.phrases),
            excluded=tuple(parsed.excluded),
            tie_order=snap.tie_order,
        )
        vector: list[np.ndarray] = []
        vector_ready = threading.Event()
        lexical_chunks: list[set[int]] = []

        readable = bool(query.terms) and (bool(lexical) or "keywords" not in snap.damaged)
        expanded = snap.lexicon.expand(query.terms) if readable else []
        expanded = [e for e in expanded if e.kind != "typo" or not is_word(e.word)]
        edits = _one_edit_typos(snap, query.terms, expanded) if readable else {}
        expanded = [e for e in expanded if e.kind != "typo" or e.word not in edits] + [
            Expansion(w, f.term, "typo")
            for w, found in edits.items()
            for f in found[:MAX_EXPANSIONS]
        ]
        typed = parsed.text or " ".join(parsed.highlight_terms)
        fixes = _typo_fixes(snap, expanded) if dense or lexical else {}
        embedded = corrected(typed, fixes) if dense else typed
        sure = {
            w: f
            for w, f in fixes.items()
            if osa_distance(w, f, 1) <= 1 and (w not in edits or is_sure(edits[w]))
        }
        expanded += snap.lexicon.expand(list(sure.values())) if sure else []

        def lexical_side() -> tuple[dict[str, list[tuple[int, float]]], _Scored]:
            t = time.perf_counter()
            widened.extend(expanded)
            # A word no chunk holds matches nothing as typed: its one-edit fix is searched
            # as a word of the query, in every field, instead of its weaker widenings.
            q = replace(
                query,
                terms=(*query.terms, *_fixed_terms(query.terms, sure)),
                expansions=tuple(e for e in widened if e.word not in sure),
            )
            out = {}
            for c in lexical:
                out[c.branch] = snap.readers[c.name].search(q, k, allowed)
                timings[f"{c.branch}_start"], timings[f"{c.branch}_end"] = t, time.perf_counter()
                t = time.perf_counter()
            scored = _Scored()
            if dense:
                # what this side re-scores once the vector exists: the dense side then
                # leaves those chunks to it (a chunk is re-scored alike either side)
                lexical_chunks.append({cid for hits in out.values() for cid, _ in hits})
                vector_ready.wait()
                if vector:
                    found = replace(q, vector=vector[0])
                    scored = _score_found(snap, out, found, completing, rescorers)
            return out, scored

        job = self._pool.submit(lexical_side) if lexical and dense else None
        results: dict[str, list[tuple[int, float]]] = {}
        scored = _Scored()
        if dense:
            t = time.perf_counter()
            try:
                query_vector = self.embedder.embed_query(embedded)
                _same_dimension(query_vector, snap, dense)
                vector.append(query_vector)
            finally:
                vector_ready.set()  # the lexical side waits for it, also when embedding fails
            query = replace(query, vector=vector[0])
            for c in dense:
                results[c.branch] = snap.readers[c.name].search(query, k, allowed)
                timings[f"{c.branch}_start"], timings[f"{c.branch}_end"] = t, time.perf_counter()
                t = time.perf_counter()
        candidates = [cid for c in dense for cid, _ in results[c.branch]] if vector else []
        early: dict[str, dict[int, float]] = {}
        if job is not None and vector:
            # the dense branches' chunks are re-scored here while the lexical side still
            # scores its own: the two sides meet with only the fusion left to do. Those
            # the lexical side found too (30 of 100 a query at a million chunks) it
            # re-scores already, when its hits are known by now.
            theirs = lexical_chunks[0] if lexical_chunks else set()
            mine = [cid for cid in candidates if cid not in theirs]
            early = {c.branch: _rescored(snap, c, query, mine) for c in rescorers}
        if job is not None:
            found, scored = job.result()
            results.update(found)
        elif lexical:
            results.update(lexical_side()[0])
        t = time.perf_counter()
        completion = {}
        if job is not None:
            completion = {
                c.branch: scored.completion(snap, c, results[c.branch]) for c in completing
            }
        if vector:
            for c in rescorers:
                results[c.branch] = scored.rescore(
                    snap, c, candidates, query, early.get(c.branch, {})
                )
        timings["after_branches"] = time.perf_counter() - t
        banned = frozenset(snap.notes_containing(parsed.excluded)) if parsed.excluded else None
        self.last_timings = timings
        return Retrieved(
            results,
            tuple(widened),
            banned or frozenset(),
            corrected(parsed.text, fixes),
            completion,
            embedded if embedded != typed else "",
            vector[0] if vector else None,
        )

    def rank(
        self,
        snap: Snapshot,
        retrieved: Retrieved,
        mode: str,
        allowed_notes: set[int] | None = None,
        settings: FusionSettings | None = None,
    ) -> list[Candidate]:
        """Fused, graph-boosted, recency-weighted notes, boilerplate weighed down: the
        cheap half, pure given its inputs (the tuning bench calls it with other settings
        on cached retrievals)."""
        settings = settings or FusionSettings.from_config(self.config.search, mode)
        branches = weigh_down(retrieved.branches, snap.boilerplate)
        if retrieved.completion:
            notes_of = chunk_notes(snap.note_of_chunk)
            extra = {
                b: ChunkScores.of(hits, notes_of).weighed_down(snap.boilerplate_ids, BOILERPLATE)
                for b, hits in retrieved.completion.items()
            }
            if settings.chunk_share == 0:
                extra = _shown_chunks(extra, branches, snap, self.config.search.max_chunks_per_note)
            branches = complete(branches, extra, snap.note_of_chunk)
        neighbours = _neighbours(snap)
        fusion = Fusion(
            branches,
            snap,
            settings,
            time.time(),
            neighbours=neighbours,
            allowed=allowed_notes,
            banned=retrieved.banned,
            expansions=tuple(str(e) for e in retrieved.expansions),
            name=retrieved.text,
        )
        ranked = fusion.ranked()
        refs = _reference_gifts(snap, ranked, settings)
        hops: dict[int, tuple[float, str]] = {}
        if settings.hop_weight > 0 and neighbours is not None:
            if settings.hop_anchor:
                hops = _anchor_gifts(snap, retrieved, ranked, settings)
            elif retrieved.vector is not None:
                hops = _hop_gifts(snap, retrieved, ranked, neighbours, settings)
        return fusion.ranked(hops, refs) if hops or refs else ranked

    def _rerank(
        self, snap: Snapshot, text: str, candidates: list[Candidate], notes: list[str]
    ) -> list[Candidate]:
        """The top ``rerank_top`` notes by ``rerank_weight`` x the reranker's relevance
        plus the rest x their fused score over the best one, all above the notes not
        reranked, whose order and scores stay. An endpoint that fails leaves the fused
        order, said in explain: a search that worked without the reranker still does.
        ``text``: the query with its misspelt words corrected, as it was embedded."""
        s = self.config.search
        if not s.reranking or not candidates:
            return candidates
        model = self._load_reranker()
        head, tail = candidates[: s.rerank_top], candidates[s.rerank_top :]
        rows = snap.chunk_rows([c.chunks[0] for c in head])
        try:
            scores = model.relevance(text, [rows[c.chunks[0]].text for c in head])
        except EndpointError as exc:
            notes.append(f"reranking failed, the fused order was kept: {exc.message}")
            return candidates
        ceiling = candidates[0].score  # the best fused score: every reranked hit goes above
        w = s.rerank_weight
        for c, score in zip(head, scores, strict=True):
            share = c.score / ceiling if ceiling > 0 else 0.0
            new = ceiling + w * score + (1.0 - w) * share
            c.explain = replace(
                c.explain, rerank_added=new - c.explain.total, reranker=model.name, relevance=score
            )
            c.score = c.explain.total
        head.sort(key=lambda c: (-c.score, snap.notes[c.note_id].path))
        return head + tail

    def _load_reranker(self) -> Reranker:
        if self._reranker is None:
            self._reranker = make_reranker(self.config.search)
        return self._reranker

    def _hits(
        self,
        snap: Snapshot,
        parsed: ParsedQuery,
        retrieved: Retrieved,
        ranked: list[Candidate],
        explain: bool,
    ) -> list[Hit]:
        limit = self.config.search.max_chunks_per_note
        code = {c.note_id for c in ranked if snap.notes[c.note_id].kind == "code"}
        wanted = [
            cid for c in ranked for cid in (c.chunks if c.note_id in code else c.chunks[:limit])
        ]
        rows = snap.chunk_rows(wanted)
        terms = parsed.highlight_terms
        stemmer = snap.stem
        widened = frozenset(e.term for e in retrieved.expansions)
        weights = self._term_weights(snap, parsed, retrieved)
        floor = min((s for _, s in retrieved.branches.get("semantic", [])), default=None)
        meta_keys = {k.lower() for k in (*self.config.keyword.frontmatter_fields, "aliases")}
        hits = []
        for c in ranked:
            note = snap.notes[c.note_id]
            groups = merge_chunks(
                definition_first([rows[i] for i in c.chunks if i in rows])[:limit]
            )
            if not groups:
                continue
            best = groups[0]
            snippet = make_snippet(best.text, terms, stemmer=stemmer, also=widened)
            found = {stemmer(w) for w in set(words(_described(note, best.text, meta_keys)))}
            sem = next((p.raw for p in c.explain.branches if p.branch == "semantic"), floor)
            evidence = Evidence(sem, coverage(weights, found))
            conf = confidence(evidence)
            info = None
            if explain:
                more = tuple(
                    Passage(" > ".join(g.heading_path), g.start_line, g.end_line)
                    for g in groups[1:]
                )
                info = replace(
                    c.explain,
                    confidence=conf,
                    cosine=evidence.cosine,
                    coverage=evidence.coverage,
                    more=more,
                )
            hits.append(
                Hit(
                    path=note.path,
                    title=note.title,
                    heading_path=" > ".join(best.heading_path),
                    start_line=best.start_line,
                    end_line=best.end_line,
                    snippet=snippet.text,
                    score=c.score,
                    chunk_id=best.id,
                    explain=info,
                    highlights=snippet.highlights,
                    confidence=conf,
                    source=note.source,
                    kind=_kind(note.kind),
                    language=note.language,
                    qualified_name=best.qualified_name,
                    node_type=best.node_type,
                    page=best.page,
                )
            )
        return hits

    def _term_weights(
        self, snap: Snapshot, parsed: ParsedQuery, retrieved: Retrieved
    ) -> dict[str, float]:
        """Each content word's idf (its stem as the index has it); a widened word counts
        as found when its expansion is, so ``canvs`` is as covered as ``canvas``."""
        out: dict[str, float] = {}
        words_ = list(parsed.keyword_terms) + [w for p in parsed.phrases for w in p]
        for w in dict.fromkeys(words_):
            stem = snap.stem(w)
            df, docs = snap.lexicon.doc_freq(stem)
            if df == 0:
                subs = [e for e in retrieved.expansions if e.word == w.lower()]
                if subs:
                    stem, (df, docs) = subs[0].term, snap.lexicon.doc_freq(subs[0].term)
            out[stem] = idf(df, max(docs, 1))
        return out


@dataclass(slots=True)
class _Scored:
    """What the lexical side scored with the query vector while the dense branches ran."""

    cosines: dict[str, ChunkScores] = field(default_factory=dict)
    """Per completing branch, every chunk of the notes the lexical branches found, scored,
    with its note."""
    rescored: dict[str, dict[int, float]] = field(default_factory=dict)
    """Per re-scorer, the lexical branches' chunks it scores."""

    def completion(
        self, snap: Snapshot, index: type[DerivedIndex], found: list[tuple[int, float]]
    ) -> Sequence[tuple[int, float]]:
        """The exact score of every chunk of the notes only the lexical branches found: a
        note the semantic top-k missed is not rated below every unrelated note.

        Only this direction is completed. The reverse (the BM25 score of notes only the
        semantic branch found, one more keyword query limited to their chunks) cost
        about 2 ms a query and moved nDCG@10 by -0.0001 on SciFact train and +0.0033
        and +0.0003 on the judged vaults: those notes' BM25 is small beside the top."""
        seen = snap.notes_of(cid for cid, _ in found)
        scores = self.cosines.get(index.branch)
        return [] if scores is None else scores.without_notes(seen)

    def rescore(
        self,
        snap: Snapshot,
        index: type[DerivedIndex],
        found: list[int],
        query: Query,
        known: dict[int, float] | None = None,
    ) -> list[tuple[int, float]]:
        """Each retrieved chunk with the re-scorer's score (for the sentence vectors: its
        best sentence's cosine), best first (ties by chunk id): a branch that only
        re-scores what the others found.

        Only the retrieved chunks, not every chunk of their notes: the best of a long
        note's hundreds of sentences is high by chance alone, and scoring them all put
        changelogs above the answer on dendron-site (nDCG@10 0.7563 against 0.7585).
        ``known``: scores of ``found`` already taken (a chunk's score does not depend on
        which others are scored with it)."""
        best = dict(self.rescored.get(index.branch, {}))
        known = known or {}
        rest = [cid for cid in found if cid not in best and cid not in known]
        best.update((cid, known[cid]) for cid in found if cid not in best and cid in known)
        best.update(_rescored(snap, index, query, rest))
        return sorted(best.items(), key=lambda x: (-x[1], x[0]))


def _rescored(
    snap: Snapshot, index: type[DerivedIndex], query: Query, chunk_ids: list[int]
) -> dict[int, float]:
    """The re-scorer's score of each chunk; a chunk it holds nothing for yet (a build
    still adding sentence vectors) takes its ``stand_in``'s score, as a chunk with no
    sentence has its own vector for one, so it is not ranked below the chunks already
    done. A complete index holds every chunk: the stand-in is then never read."""
    scores = dict(snap.readers[index.name].search(query, len(chunk_ids), chunk_ids))
    stand_in = getattr(index, "stand_in", None)
    lacking = [c for c in chunk_ids if c not in scores]
    if stand_in and lacking and stand_in not in snap.damaged:
        scores.update(snap.readers[stand_in].score(query, lacking))
    return scores


def _score_found(
    snap: Snapshot,
    lexical: dict[str, list[tuple[int, float]]],
    query: Query,
    completing: list[type[DerivedIndex]],
    rescorers: list[type[DerivedIndex]],
) -> _Scored:
    found = list(dict.fromkeys(cid for hits in lexical.values() for cid, _ in hits))
    chunks = snap.chunks_of_notes(snap.notes_of(found)) if completing else None
    cosines = {}
    for c in completing:
        if chunks is not None and len(chunks):
            ids, scores = snap.readers[c.name].scores(query, chunks)
            cosines[c.branch] = ChunkScores(ids, scores, snap.note_of_chunk.many(ids))
    rescored = {c.branch: _rescored(snap, c, query, found) for c in rescorers}
    return _Scored(cosines, rescored)


def _hop_gifts(
    snap: Snapshot,
    retrieved: Retrieved,
    ranked: list[Candidate],
    neighbours: Callable[[str], Iterable[str]],
    settings: FusionSettings,
) -> dict[int, tuple[float, str]]:
    """``hops.hop_gifts`` with the chunk vectors of the index that completes the
    semantic branch (the one whose cosines ``retrieved`` holds)."""
    index = next((c for c in DERIVED if c.role == "branch" and c.completes), None)
    if index is None or not len(snap.readers[index.name]):
        return {}
    reader = snap.readers[index.name]
    query = Query(vector=retrieved.vector)
    best = max((s for _, s in retrieved.branches.get(index.branch, ())), default=0.0)
    return hop_gifts(
        ranked,
        snap,
        neighbours,
        lambda nid: [int(c) for c in snap.chunks_by_note.get(nid, ())],
        lambda ids: reader.score(query, ids),
        best,
        settings,
    )


def _reference_gifts(
    snap: Snapshot, ranked: list[Candidate], settings: FusionSettings
) -> dict[int, tuple[float, str]]:
    """``symbolrefs.reference_gifts`` with the ranked code files' definition names (read
    once a generation) and each giver's scoring chunks, from the catalog."""
    if settings.ref_weight <= 0:
        return {}

    def defines(note_ids: list[int]) -> dict[int, frozenset[str]]:
        return defined_names(note_ids, snap.defined, snap.catalog.definitions_of)

    def passages(c: Candidate) -> list[str]:
        ids = dict.fromkeys(p.chunk_id for p in c.explain.branches)
        return [row.text for row in snap.chunk_rows(ids).values()]

    return reference_gifts(ranked, snap, defines, passages, settings)


def _anchor_gifts(
    snap: Snapshot, retrieved: Retrieved, ranked: list[Candidate], settings: FusionSettings
) -> dict[int, tuple[float, str]]:
    """``hops.anchor_gifts`` with each query word's idf and each top note's links read
    from the catalog (its links' lines, the line's text from its chunks)."""
    weights: dict[str, float] = {}
    for w in parse_query(retrieved.text).keyword_terms:
        stem = snap.stem(w)
        df, docs = snap.lexicon.doc_freq(stem)
        weights[stem] = idf(df, max(docs, 1))

    def anchors(note_id: int) -> list[tuple[str, str, int]]:
        lines: dict[int, str] = {}
        for row in snap.chunk_rows(int(c) for c in snap.chunks_by_note.get(note_id, ())).values():
            for i, text in enumerate(row.text.split("\n")):
                if len(text) > len(lines.get(row.start_line + i, "")):
                    lines[row.start_line + i] = text
        return [
            (
                link.target_path,
                link_sentence(lines.get(link.line, ""), (link.label or "", link.target)),
                link.line,
            )
            for link in snap.catalog.links_of([note_id])
            if link.target_path
        ]

    def matched(c: Candidate) -> list[tuple[int, int, str]]:
        rows = snap.chunk_rows({p.chunk_id for p in c.explain.branches})
        return [(r.start_line, r.end_line, r.text) for r in rows.values()]

    return anchor_gifts(ranked, snap, anchors, snap.stem, weights, settings, matched)


def _shown_chunks(
    extra: dict[str, ChunkScores],
    branches: dict[str, list[tuple[int, float]]],
    snap: Snapshot,
    limit: int,
) -> dict[str, ChunkScores]:
    """The completing scores that can change a ranking: with no ``chunk_share`` a note's
    branch score is its best chunk's, and a hit shows the note's first ``limit`` chunks
    by fused chunk score, so of each note's chunks only the other branches also scored
    matter, and the best ``limit`` others (with any as close as rounding, and all of a
    code note's, which shows every chunk). The completion scores every chunk of a note
    the keyword side found (up to ~5,000 a query at a million chunks), and fusing them
    all cost more than the rest of the fusion."""
    scored = {cid for hits in branches.values() for cid, _ in hits}
    notes = snap.notes

    def is_code(nid: int) -> bool:
        return notes[nid].kind == "code"

    return {b: hits.shown(scored, limit, is_code, ROUNDING) for b, hits in extra.items()}


ROUNDING = 1e-6
"""Scores this close may fuse to the same chunk score (normalising divides them), and
tied chunks are ordered by id: ``_shown_chunks`` keeps them all."""


def _takes_vector(index: type[DerivedIndex]) -> bool:
    """A branch read in semantic mode searches by the query vector."""
    return "semantic" in index.modes


def _neighbours(snap: Snapshot) -> Callable[[str], Iterable[str]] | None:
    """The boosts' neighbours of a note, or None when no boost holds a link."""
    boosts = [r for c in DERIVED if c.role == "boost" and len(r := snap.readers[c.name])]
    if len(boosts) == 1:
        return cast(Callable[[str], Iterable[str]], boosts[0].neighbours)
    if not boosts:
        return None
    return lambda path: list(dict.fromkeys(n for b in boosts for n in b.neighbours(path)))


def _one_edit_typos(
    snap: Snapshot, terms: Sequence[str], expanded: list[Expansion]
) -> dict[str, list[Fix]]:
    """Each query word no chunk holds, with the words one edit from it as typed whose
    stems the index holds (``typos.one_edit``): they replace the keyword side's widenings
    of its stem. A word that begins index terms (``refact``) is taken as cut short, not
    misspelt, and a word a title, alias or heading holds is the user's own. The letters of
    an identifier are words too (``exclued`` in ``nav_exclued_children``)."""
    cut_short = {e.word for e in expanded if e.kind == "prefix"}
    lexicon = snap.lexicon

    def df(term: str) -> int:
        return lexicon.doc_freq(term)[0]

    out = {}
    parts = (p for w in terms for p in re.findall(r"[^\W\d_]+", w.lower()))
    for word in dict.fromkeys(parts):
        if word in cut_short or is_word(word) or df(snap.stem(word)):
            continue
        if lexicon.chunks_matching([word]):
            continue
        if found := one_edit(word, df, snap.stem, lexicon.most_begun):
            out[word] = found
    return out


def _fixed_terms(terms: Sequence[str], sure: dict[str, str]) -> list[str]:
    """Each query term holding a surely misspelt word, corrected: the fixed identifier
    (``nav_exclude_children``) is searched whole, as the typed one would have been."""
    if not sure:
        return []
    return list(dict.fromkeys(f for t in terms if (f := corrected(t, sure)) != t))


def _typo_fixes(snap: Snapshot, expanded: list[Expansion]) -> dict[str, str]:
    """Each query word no chunk holds, with the vault's word for the close index term
    the keyword side widened it to, read from the chunks that hold that term."""
    if not any(e.kind == "typo" for e in expanded):
        return {}
    lexicon = snap.lexicon
    stems = unknown_typos(expanded, lambda t: lexicon.doc_freq(t)[0], snap.stem)
    stems = {w: t for w, t in stems.items() if not lexicon.chunks_matching([w])}
    keywords = next(snap.readers[c.name] for c in DERIVED if c.analyses)
    fixes = {}
    for word, term in stems.items():
        probe = Query(text=word, terms=(word,), expansions=(Expansion(word, term, "typo"),))
        rows = snap.chunk_rows(c for c, _ in keywords.search(probe, PROBED, None))
        texts = [r.text for r in rows.values()]
        if found := spelled(word, term, snap.stem, texts) or surface(word, term, texts, snap.stem):
            fixes[word] = found
    return fixes


def _same_dimension(vector: np.ndarray, snap: Snapshot, dense: list[type[DerivedIndex]]) -> None:
    """A model server can change the model behind a name; its vectors then no longer fit
    the index, which must say so rather than fail inside FAISS."""
    for c in dense:
        dim = snap.readers[c.name].dim
        if vector.shape[0] != dim:
            raise IndexIncompatibleError(
                f"The embedding model answered {vector.shape[0]}-dimensional query vectors, "
                f"but the index holds {dim}-dimensional ones.",
                fix="run 'vaultsearch index' to rebuild with the model now served, or serve "
                "the model the index was built with; keyword search (--mode keyword) still "
                "works",
            )


def _mode_left(snap: Snapshot, mode: str) -> tuple[str, str | None]:
    """The mode a search can run on this snapshot, and the sentence saying what it went
    without: hybrid falls back to the branches that can be read; a mode whose only
    branches are damaged fails, as a semantic search must not answer with nothing found."""
    needed = [c for c in DERIVED if c.role == "branch" and mode in c.modes]
    lost = [c for c in needed if c.name in snap.damaged]
    if lost and (mode != "hybrid" or len(lost) == len(needed)):
        first = lost[0]
        raise IndexCorruptError(
            f"{first.label.capitalize()} cannot be used ({snap.damaged[first.name]}), so "
            f"{mode} search cannot run.",
            fix="vaultsearch check --repair"
            + ("" if mode == "hybrid" else f" (--mode {_fallback(first)} works meanwhile)"),
        )
    said = []
    if lost:
        first = lost[0]
        mode = _fallback(first)
        said.append(
            f"{first.label} cannot be used ({snap.damaged[first.name]}): {mode}-only results"
        )
    for c in DERIVED:
        if c.role != "branch" and mode in c.modes and c.name in snap.damaged:
            said.append(f"{c.label} cannot be used ({snap.damaged[c.name]})")
    if not said:
        return mode, None
    return mode, "Degraded search: " + "; ".join(said) + "; run 'vaultsearch check --repair'."


def _fallback(index: type[DerivedIndex]) -> str:
    """The single mode left when this branch is lost: the one that does not read it."""
    return "keyword" if _takes_vector(index) else "semantic"


def _kind(kind: str) -> SourceKind:
    return cast(SourceKind, kind) if kind in KINDS else "note"


def _described(note: NoteMeta, text: str, keys: set[str]) -> str:
    """The passage with the note's title, aliases and descriptions: where a query's words
    count as found for confidence, as they count for keyword search."""
    extra = [
        " ".join(map(str, v)) if isinstance(v, list) else str(v)
        for k, v in note.frontmatter.items()
        if str(k).lower() in keys
    ]
    return " ".join([note.title, text, *extra])


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
                groups[i] = replace(
                    g,
                    start_line=min(g.start_line, ch.start_line),
                    end_line=max(g.end_line, ch.end_line),
                    start_char=min(g.start_char, ch.start_char),
                    end_char=max(g.end_char, ch.end_char),
                )
                break
        else:
            groups.append(ch)
    return groups
