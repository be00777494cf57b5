"""The read side: a search over Milvus alone, no vault files and no local index.

Milvus retrieves each branch (BM25 over the analysed terms, the dense vectors, the best
sentence of each retrieved chunk, the cosines that complete a note only the keyword
branch found) with the filters as one boolean expression, and vaultsearch fuses them
with the same ``ranking.fuse`` the local store runs: convex fusion with the configured
weights, graph boost from the stored neighbours, recency. Milvus's own
``hybrid_search`` (RRF over dense + BM25) is ``fusion="milvus-rrf"``: one round trip,
no sentence branch and no boosts.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vaultsearch.config import Config
from vaultsearch.embedding import Embedder
from vaultsearch.errors import IndexIncompatibleError, QueryError
from vaultsearch.models import Hit, SearchHits
from vaultsearch.search.confidence import Evidence, confidence, coverage
from vaultsearch.search.filters import NoteMeta, Scope, SearchFilters
from vaultsearch.search.milvus_expressions import expression, ids_in, literal
from vaultsearch.search.orchestrator import (
    MAX_TOP_K,
    MODES,
    _described,
    _kind,
    deepened,
    merge_chunks,
)
from vaultsearch.search.query import parse_query, words
from vaultsearch.search.ranking import Candidate, FusionSettings, complete, fuse
from vaultsearch.search.request import SearchRequest, check_shape
from vaultsearch.search.snippets import make_snippet
from vaultsearch.store.catalog import ChunkRow
from vaultsearch.store.milvus.client import connect, engine_errors
from vaultsearch.store.milvus.live import live_manifest, load
from vaultsearch.store.milvus.schema import CHUNK_OUTPUT, SHOWN, analysed, collection, run_ids
from vaultsearch.store.milvus.target import MilvusTarget
from vaultsearch.store.ties import wider_read

MAX_LIMIT = 16_384
"""Milvus's largest ``limit`` (topk)."""


@dataclass
class _View:
    """What ``fuse`` reads (``ranking.FusionView``), for the notes this query met."""

    notes: dict[int, NoteMeta] = field(default_factory=dict)
    note_of_chunk: dict[int, int] = field(default_factory=dict)
    note_by_path: dict[str, int] = field(default_factory=dict)
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    first: dict[int, int] = field(default_factory=dict)
    listed: dict[int, set[int]] = field(default_factory=dict)
    """Per note, the chunks its row lists: the only ones of its rows a search uses."""

    def is_listed(self, chunk: int) -> bool:
        return chunk in self.listed.get(self.note_of_chunk.get(chunk, -1), ())

    def known(self, branches: dict[str, list[tuple[int, float]]]) -> dict[str, Any]:
        """Only the chunks their note's row lists: a push writes a note's new chunks
        before the row that lists them and deletes its old ones a push later, so
        between the two steps a branch may find either, and the note is shown as one
        version, the one its row names (``writer._sync``)."""
        return {b: [(c, s) for c, s in hits if self.is_listed(c)] for b, hits in branches.items()}

    def first_chunks(self, note_id: int) -> list[int]:
        return [self.first[note_id]] if note_id in self.first else []

    def take(self, hits: Any, absolute: bool = False) -> list[tuple[int, float]]:
        """Each hit's (chunk id, score) and its note; ``absolute`` for BM25, whose
        distances Milvus reports signed. A hit carries only its note id: its note's
        fields come once per note from the notes collection, and a chunk's text only
        for the hits shown (``MilvusReader._fill_rows``)."""
        out = []
        for hit in hits:
            cid = int(hit["id"])
            self.note_of_chunk[cid] = int(hit["entity"]["note_id"])
            score = float(hit["distance"])
            out.append((cid, abs(score) if absolute else score))
        return out

    def add_note(self, nid: int, meta: Mapping[str, Any], chunks: Iterable[Any]) -> None:
        self.listed[nid] = set(run_ids(chunks or ()))
        self.notes[nid] = NoteMeta(
            nid, meta["path"], meta["title"], tuple(meta.get("tags") or ()),
            meta.get("frontmatter") or {}, float(meta["date"]), meta.get("source") or "",
            meta.get("kind") or "note", meta.get("language") or "",
        )  # fmt: skip
        self.note_by_path[meta["path"]] = nid


class MilvusReader:
    def __init__(self, target: MilvusTarget, config: Config, embedder: Embedder) -> None:
        self.target = target
        self.config = config
        self.embedder = embedder
        self.client = connect(target)
        self.last_timings: dict[str, float] = {}

    @classmethod
    def open(
        cls,
        uri: str,
        collection: str = "",
        token: str = "",
        config: str | os.PathLike[str] | Config | None = None,
    ) -> MilvusReader:
        """A reader from the URI alone: the Python counterpart of ``--store-uri``."""
        from vaultsearch.config import load_config

        cfg = load_config(config)
        return cls(MilvusTarget.build(uri, token, collection), cfg, Embedder.shared(cfg.embedding))

    def manifest(self) -> dict[str, Any]:
        """Resolved at every query: a writer's alias switch is seen at the next one."""
        with engine_errors(self.target):
            manifest = live_manifest(self.client, self.target)
            load(self.client, manifest["generation"])
        return manifest

    def _check_model(self, manifest: dict[str, Any]) -> None:
        embedding = manifest.get("embedding") or {}
        if embedding.get("key") != self.embedder.cache_key:
            raise IndexIncompatibleError(
                f"The Milvus store {self.target.shown()} was built with the embedding model "
                f"'{embedding.get('key')}', and this client embeds with "
                f"'{self.embedder.cache_key}'.",
                fix=f"set embedding.model = '{embedding.get('model')}' (same runtime and "
                "weights) to search it; keyword search (--mode keyword) works meanwhile",
            )

    # --- search -------------------------------------------------------------------
    def answer(self, request: SearchRequest) -> SearchHits:
        """One ``SearchRequest`` against the store, its filters as the local search
        takes them: what the CLI and the MCP server over a store both run."""
        r = check_shape(request)
        scope = Scope.build(r.sources, r.kinds, r.path_prefix, r.files)
        filters = SearchFilters.build(
            tags=r.tags, folders=r.folders, after=r.after, before=r.before,
            where=r.where, min_score=r.min_score, scope=scope,
        )  # fmt: skip
        return self.search(r.query, top_k=r.top_k, mode=r.mode, filters=filters)

    def search(
        self,
        query: str,
        top_k: int = 10,
        mode: str = "hybrid",
        filters: SearchFilters | None = None,
        fusion: str = "vaultsearch",
    ) -> SearchHits:
        if mode not in MODES:
            raise QueryError(f"Unknown search mode {mode!r}; use one of: {', '.join(MODES)}.")
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= MAX_TOP_K:
            raise QueryError(f"top_k must be a whole number from 1 to {MAX_TOP_K}, got {top_k!r}.")
        parsed = parse_query(query)
        filters = (filters or SearchFilters()).with_query(parsed.tags, parsed.paths)
        if parsed.empty and not parsed.text:
            return SearchHits()
        manifest = self.manifest()
        if mode != "keyword":
            self._check_model(manifest)
        gen = manifest["generation"]
        stemming = bool((manifest.get("keyword") or {}).get("stemming", True))
        expr = expression(filters)
        depth = min(self.config.search.candidates, MAX_LIMIT)
        view = _View()
        timings: dict[str, float] = {}
        t = time.perf_counter()
        with engine_errors(self.target, collection(gen, "chunks")):
            terms = " ".join(
                analysed(w, stemming)
                for w in (*parsed.keyword_terms, *(w for p in parsed.phrases for w in p))
            ).strip()
            keyword_on = mode in ("hybrid", "keyword") and bool(terms)
            vector = None
            if mode in ("hybrid", "semantic"):
                vector = self.embedder.embed_query(parsed.text or " ".join(parsed.highlight_terms))
                if vector.shape[0] != int((manifest.get("embedding") or {}).get("dimension", 0)):
                    raise IndexIncompatibleError(
                        f"The embedding model answered {vector.shape[0]}-dimensional vectors, "
                        "but the Milvus store holds vectors of another dimension.",
                        fix="search with the model the store was built with",
                    )
            settings = FusionSettings.from_config(self.config.search, mode)
            if fusion == "milvus-rrf":
                settings = FusionSettings(method="rrf", weights={"hybrid": 1.0})
            sentences = bool(manifest.get("sentences") and self.config.search.sentence_weight)

            def ranked_at(k: int) -> tuple[dict[str, list[tuple[int, float]]], list[Candidate]]:
                branches: dict[str, list[tuple[int, float]]] = {}
                extra: dict[str, list[tuple[int, float]]] = {}
                if fusion == "milvus-rrf" and keyword_on and vector is not None:
                    branches["hybrid"] = self._milvus_rrf(gen, terms, vector, k, expr, view)
                else:
                    if keyword_on:
                        branches["keyword"] = self._ann(gen, "sparse", terms, k, expr, view)
                    if vector is not None:
                        dense = self._ann(gen, "dense", vector.tolist(), k, expr, view)
                        branches["semantic"] = dense
                        if "keyword" in branches:
                            extra["semantic"] = self._completion(gen, branches, vector, view)
                        if sentences:
                            found = list({c for b in branches.values() for c, _ in b})
                            branches["sentences"] = self._sentences(gen, found, vector)
                graph = self._notes(gen, view, expr, settings.graph_share > 0)
                banned = self._banned(gen, parsed.excluded, view, stemming)
                branches, extra = view.known(branches), view.known(extra)
                if extra:
                    branches = complete(branches, extra, view.note_of_chunk)
                return branches, fuse(
                    branches, view, settings, time.time(),
                    neighbours=(lambda p: graph.get(p, [])) if graph else None,
                    banned=banned, name=parsed.text,
                )  # fmt: skip

            branches, ranked = ranked_at(depth)
            timings["rank"] = time.perf_counter() - t
            ranked = deepened(ranked, lambda d: ranked_at(min(d, MAX_LIMIT))[1], top_k, depth)
            if filters.min_score is not None:
                ranked = [c for c in ranked if c.score >= filters.min_score]
            ranked = ranked[:top_k]
            limit = self.config.search.max_chunks_per_note
            self._fill_rows(gen, [i for c in ranked for i in c.chunks[:limit]], view)
        self.last_timings = timings
        return SearchHits(self._hits(parsed, view, ranked, branches), _syncing(manifest))

    def _ann(
        self, gen: str, field_: str, data: Any, k: int, expr: str, view: _View
    ) -> list[tuple[int, float]]:
        """The top ``k`` by the dense or the sparse (BM25) field. Both tie whole runs of
        chunks (a note's copies, identical notes: the same text gives the same vector and
        the same BM25; a lone word in chunks of one length), and which of a tie at the cut
        the engine keeps depends on where it stored them: so each side reads as the local
        indexes do (``store/ties.py``): the sparse side twice ``k``, the dense side
        ``k + 1`` (as a vector segment is read), four times more while the last read
        still ties the k-th (up to ``MAX_LIMIT``), and the tie is cut by chunk id (note
        paths reach this reader only after the branches)."""
        sparse = field_ == "sparse"
        limit: int | None = min(2 * k if sparse else k + 1, MAX_LIMIT)
        while limit is not None:
            res = self.client.search(
                collection(gen, "chunks"), data=[data], anns_field=field_, limit=limit,
                filter=expr, output_fields=["note_id"],
            )  # fmt: skip
            hits = view.take(res[0], absolute=sparse)
            scores = sorted((s for _, s in hits), reverse=True)
            limit = wider_read(scores, k, limit, MAX_LIMIT)
        return sorted(hits, key=lambda h: (-h[1], h[0]))[:k]

    def _milvus_rrf(
        self, gen: str, terms: str, vector: np.ndarray, k: int, expr: str, view: _View
    ) -> list[tuple[int, float]]:
        from vaultsearch.store.milvus.client import milvus_module

        m = milvus_module()
        reqs = [
            m.AnnSearchRequest(
                data=[vector.tolist()], anns_field="dense", param={}, limit=k, expr=expr or None
            ),
            m.AnnSearchRequest(
                data=[terms], anns_field="sparse", param={}, limit=k, expr=expr or None
            ),
        ]
        res = self.client.hybrid_search(
            collection(gen, "chunks"), reqs, ranker=m.RRFRanker(self.config.search.rrf_k),
            limit=k, output_fields=["note_id"],
        )  # fmt: skip
        return view.take(res[0])

    def _completion(
        self,
        gen: str,
        branches: dict[str, list[tuple[int, float]]],
        vector: np.ndarray,
        view: _View,
    ) -> list[tuple[int, float]]:
        """Cosines of every chunk of the notes only the keyword branch found."""
        seen = {view.note_of_chunk[c] for c, _ in branches.get("semantic", [])}
        only = sorted({view.note_of_chunk[c] for c, _ in branches["keyword"]} - seen)
        if not only:
            return []
        res = self.client.search(
            collection(gen, "chunks"), data=[vector.tolist()], anns_field="dense",
            limit=MAX_LIMIT, filter=ids_in("note_id", only), output_fields=["note_id"],
        )  # fmt: skip
        return view.take(res[0])

    def _sentences(
        self, gen: str, chunks: list[int], vector: np.ndarray
    ) -> list[tuple[int, float]]:
        if not chunks:
            return []
        res = self.client.search(
            collection(gen, "sentences"), data=[vector.tolist()], anns_field="dense",
            limit=MAX_LIMIT, filter=ids_in("chunk_id", sorted(chunks)), output_fields=["chunk_id"],
        )  # fmt: skip
        best: dict[int, float] = {}
        for hit in res[0]:
            cid, score = int(hit["entity"]["chunk_id"]), float(hit["distance"])
            if score > best.get(cid, -2.0):
                best[cid] = score
        return sorted(best.items(), key=lambda x: (-x[1], x[0]))

    def _banned(self, gen: str, excluded: Iterable[str], view: _View, stemming: bool) -> set[int]:
        """Notes among the candidates holding a ``-word``, as the local keyword match."""
        stems = [s for w in excluded for s in analysed(w, stemming).split()]
        notes = sorted(set(view.note_of_chunk.values()))
        if not stems or not notes:
            return set()
        expr = (
            ids_in("note_id", notes)
            + " and "
            + " or ".join(f"TEXT_MATCH(terms, {literal([s])[1:-1]})" for s in stems)
        )
        rows = self.client.query(
            collection(gen, "chunks"), filter=f"({expr})", output_fields=["id", "note_id"]
        )
        return {
            int(r["note_id"])
            for r in rows
            if int(r["id"]) in view.listed.get(int(r["note_id"]), ())
        }

    def _notes(self, gen: str, view: _View, expr: str, graph: bool) -> dict[str, list[str]]:
        """The candidates' notes from the notes collection, one row a note, and with
        ``graph`` their neighbours (returned by path); the neighbours the filters allow
        enter the view with their first chunk (a neighbour the query did not retrieve
        can still be boosted)."""
        ids = sorted(set(view.note_of_chunk.values()))
        if not ids:
            return {}
        fields = ["id", "note", "chunks", *(["neighbours"] if graph else [])]
        rows = self.client.query(
            collection(gen, "notes"), filter=ids_in("id", ids), output_fields=fields
        )
        for r in rows:
            view.add_note(int(r["id"]), r["note"], r["chunks"])
        if not graph:
            return {}
        out = {r["note"]["path"]: list(r["neighbours"] or []) for r in rows}
        wanted = sorted({p for ns in out.values() for p in ns} - set(view.note_by_path))
        for start in range(0, len(wanted), 1000):
            found = self.client.query(
                collection(gen, "notes"), filter=f"path in {literal(wanted[start : start + 1000])}",
                output_fields=["id", "note", "first_chunk", "chunks"],
            )  # fmt: skip
            first = {int(r["first_chunk"]): r for r in found if int(r["first_chunk"]) > 0}
            if first and expr:  # the filters are fields of the chunk rows
                where = f"({ids_in('id', sorted(first))}) and ({expr})"
                allowed = self.client.query(
                    collection(gen, "chunks"), filter=where, output_fields=["note_id"]
                )
                first = {int(a["id"]): first[int(a["id"])] for a in allowed}
            for cid, r in first.items():
                view.add_note(int(r["id"]), r["note"], r["chunks"])
                view.note_of_chunk[cid] = int(r["id"])
                view.first[int(r["id"])] = cid
        return out

    def _fill_rows(self, gen: str, ids: list[int], view: _View) -> None:
        """What the hits shown need: their chunks' text, lines and headings."""
        ids = sorted(set(ids) - set(view.rows))
        if ids:
            for r in self.client.query(collection(gen, "chunks"), filter=ids_in("id", ids),
                                       output_fields=list(SHOWN)):  # fmt: skip
                view.rows[int(r["id"])] = r

    def _hits(
        self, parsed: Any, view: _View, ranked: list[Any], branches: dict[str, Any]
    ) -> list[Hit]:
        """As the local orchestrator's hits; confidence weighs every query word alike
        (Milvus does not expose document frequencies)."""
        limit = self.config.search.max_chunks_per_note
        terms = parsed.highlight_terms
        floor = min((s for _, s in branches.get("semantic", [])), default=None)
        stemmer = _stem
        weights = {
            stemmer(w): 1.0
            for w in (*parsed.keyword_terms, *(w for p in parsed.phrases for w in p))
        }
        meta_keys = {k.lower() for k in (*self.config.keyword.frontmatter_fields, "aliases")}
        hits = []
        for c in ranked:
            note = view.notes[c.note_id]
            groups = merge_chunks(
                [_chunk(view.rows[i]) for i in c.chunks[:limit] if i in view.rows]
            )
            if not groups:
                continue
            best = groups[0]
            row = view.rows[best.id]
            snippet = make_snippet(best.text, terms, stemmer=stemmer)
            found = {stemmer(w) for w in set(words(_described(note, best.text, meta_keys)))}
            sem = next((p.raw for p in c.explain.branches if p.branch == "semantic"), floor)
            conf = confidence(Evidence(sem, coverage(weights, found)))
            hits.append(
                Hit(
                    path=note.path, title=note.title, heading_path=" > ".join(best.heading_path),
                    start_line=best.start_line, end_line=best.end_line, snippet=snippet.text,
                    score=c.score, chunk_id=best.id, explain=None, highlights=snippet.highlights,
                    confidence=conf, source=note.source, kind=_kind(note.kind),
                    language=note.language, qualified_name=row.get("qualified_name") or "",
                    node_type=row.get("node_type") or "", page=int(row.get("page") or 0),
                )
            )  # fmt: skip
        return hits

    # --- get and status -----------------------------------------------------------
    def get(self, path: str) -> dict[str, Any]:
        """A note's chunks in order, as Milvus holds them: its text without the file."""
        manifest = self.manifest()
        gen = manifest["generation"]
        with engine_errors(self.target):
            notes = self.client.query(
                collection(gen, "notes"), filter=f"path == {literal([path])[1:-1]}",
                output_fields=["chunks"],
            )  # fmt: skip
            listed = run_ids(notes[0]["chunks"] or []) if notes else []
            rows = self.client.query(
                collection(gen, "chunks"), filter=ids_in("id", listed),
                output_fields=list(CHUNK_OUTPUT),
            ) if listed else []  # fmt: skip
        if not rows:
            raise QueryError(f"The Milvus store {self.target.shown()} has no note {path!r}.")
        rows.sort(key=lambda r: (r["ordinal"], r["id"]))
        first = rows[0]
        return {
            "path": path, "title": first["title"], "tags": list(first["tags"] or []),
            "frontmatter": first["frontmatter"], "source": first["source"], "kind": first["kind"],
            "chunks": [
                {"heading_path": " > ".join(json.loads(r["heading_path"])),
                 "start_line": r["start_line"], "end_line": r["end_line"], "text": r["text"]}
                for r in rows
            ],
        }  # fmt: skip

    def status(self) -> dict[str, Any]:
        manifest = self.manifest()
        embedding = manifest.get("embedding") or {}
        return {
            "store": "milvus",
            "uri": self.target.uri,
            "collection": self.target.prefix,
            "generation": manifest["generation"],
            **(manifest.get("counts") or {}),
            "model": embedding.get("model"),
            "fingerprint": embedding.get("key"),
            "dimension": embedding.get("dimension"),
            "schema_version": manifest.get("schema_version"),
            "chunking": manifest.get("chunking"),
            "last_indexed": manifest.get("updated"),
            **({"syncing_since": manifest["syncing"]} if manifest.get("syncing") else {}),
        }

    def close(self) -> None:
        self.client.close()


def _syncing(manifest: Mapping[str, Any]) -> str | None:
    """The sentence a reader gets while a push's upserts are unfinished (``writer._sync``)."""
    since = manifest.get("syncing")
    if not since:
        return None
    return (
        f"A push into this Milvus store started at {since} has not finished (it runs, or "
        "its writer was stopped): some notes may show their previous version until a "
        "push completes."
    )


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """A word as the BM25 terms hold it, so highlights agree with keyword search."""
    return analysed(word).split(" ")[0] or word.lower()


def _chunk(row: Mapping[str, Any]) -> ChunkRow:
    return ChunkRow(
        int(row["id"]), int(row["note_id"]), int(row["ordinal"]),
        tuple(json.loads(row["heading_path"])),
        int(row["start_line"]), int(row["end_line"]), int(row["start_char"]), int(row["end_char"]),
        row["text"], row["embed_hash"], row.get("qualified_name") or "", row.get("node_type") or "",
        int(row.get("page") or 0),
    )  # fmt: skip
