"""The judged data the ranking is tuned on, each query's branch results retrieved once.

A ``Dataset`` holds one indexed vault, its judged queries and their cached retrievals;
``run`` re-fuses them with ``QueryOrchestrator.rank`` (the function every search runs,
graph boost and recency included) under a ``Trial``, so what is tuned is what ships.
Retrieval is done once at the deepest candidate depth tried; a shallower depth is the
same lists cut, exactly what a search with that ``search.candidates`` would fuse.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

import tune_variants as variants
import vaultsearch
from tune_variants import Variant
from vaultsearch.app.evaluation import mrr_at_k, ndcg_at_k, recall_at_k
from vaultsearch.app.vault import Vault
from vaultsearch.search.orchestrator import QueryOrchestrator, Retrieved
from vaultsearch.search.query import parse_query
from vaultsearch.search.ranking import Candidate, FusionSettings, extend
from vaultsearch.store.derived import Query

K = 400
"""Chunks retrieved per branch and query: the deepest depth any trial reads."""
FOLDS = 5
SEED = 11

STORE = Path(__file__).resolve().parent / ".cache" / "tune"
"""Retrievals and per-query scores on disk, so parallel workers (``tune.py --warm``) and
re-runs share them; keyed by the code, the configuration, the index's chunk layout and
the queries, so a stale entry is never read."""

Run = dict[str, list[str]]
Qrels = Mapping[str, Mapping[str, int]]


@dataclass(frozen=True)
class Trial:
    """One configuration: fusion settings, candidate depth, keyword field boosts."""

    settings: FusionSettings
    candidates: int = 100
    boosts: tuple[tuple[str, float], ...] = ()
    """Keyword field boosts that differ from the shipped ones; empty = as shipped."""
    variant: Variant = ()
    """A rewrite of the branch results before fusion (``tune_variants``); empty = none."""

    def describe(self) -> str:
        s = self.settings
        if s.method == "rrf":
            head = f"rrf k={s.rrf_k:g} w_kw={s.weights['keyword']:g}"
            head += f" w_sent={s.weights.get('sentences', 0.0):g}"
        else:
            sem = s.weights["semantic"] + s.weights.get("sentences", 0.0)
            a, w = sem / (sem + s.weights["keyword"]), s.weights.get("sentences", 0.0) / sem
            head = f"convex {s.normalisation} a_sem={a:.2g} w_sent={w:.2g} share={s.chunk_share:g}"
        tail = f" graph={s.graph_share:g}"
        tail += f" lead={s.graph_lead:g}" if s.graph_lead else ""
        if s.hop_weight:
            tail += f" hop={s.hop_weight:g}/{s.hop_top}/{s.hop_margin:g}"
            tail += " anchor" if s.hop_anchor else ""
            tail += " below" if s.hop_below else ""
            tail += " local" if s.hop_local else ""
            tail += " residual" if s.hop_residual else ""
        tail += f" cand={self.candidates}"
        if self.variant:
            tail += " " + ":".join(
                f"{v:g}" if isinstance(v, float) else str(v) for v in self.variant
            )
        return head + tail + "".join(f" {f}={v:g}" for f, v in self.boosts)


@dataclass(frozen=True)
class Scores:
    """Per-query figures of one trial on one dataset, in ``Dataset.ids`` order."""

    ndcg: list[float]
    recall: list[float]
    mrr: list[float]


@dataclass
class Dataset:
    name: str
    orchestrator: QueryOrchestrator
    doc_of: Mapping[str, str]
    """Note path -> judged document id."""
    queries: dict[str, str]
    qrels: Qrels
    retrieved: dict[str, Retrieved]
    top_k: int
    """How many results the evaluation asks for: a ranking holding fewer is extended from
    rankings 4, 16, ... times as deep (``ranking.extend``), as the product does."""
    fold: dict[str, int]
    kind: dict[str, str] = field(default_factory=dict)
    _keyword: dict[tuple[tuple[str, float], ...], dict[str, list[tuple[int, float]]]] = field(
        default_factory=dict
    )
    _memo: dict[tuple[object, ...], Scores] = field(default_factory=dict)
    _print: str = ""
    _vectors: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def from_vault(
        cls, name: str, vault: Vault, queries: Mapping[str, str], qrels: Qrels, top_k: int,
        fold: Mapping[str, int] | None = None, kind: Mapping[str, str] | None = None,
        doc_of: Mapping[str, str] | None = None,
    ) -> Dataset:  # fmt: skip
        orch = vault.orchestrator
        snap = orch.snapshot()
        ids = [q for q in queries if qrels.get(q)]
        layout = sorted((c, snap.notes[n].path) for c, n in snap.note_of_chunk.items())
        key = _digest(
            _code(), repr(orch.config), orch.embedder.cache_key, layout,
            [(q, queries[q]) for q in ids], K,
        )  # fmt: skip
        cached = STORE / f"retrieved-{key}.pkl"
        if cached.is_file():
            retrieved = pickle.loads(cached.read_bytes())
        else:
            retrieved = {q: orch.retrieve(snap, parse_query(queries[q]), "hybrid", K) for q in ids}
            _store(cached, retrieved)
        mapping = doc_of if doc_of is not None else {p: p for p in snap.note_by_path}
        folds = dict(fold) if fold is not None else seeded_folds(ids)
        return cls(
            name, orch, mapping, {q: queries[q] for q in ids}, qrels, retrieved, top_k,
            {q: folds[q] for q in ids}, dict(kind or {}),
        )  # fmt: skip

    @property
    def ids(self) -> list[str]:
        return list(self.retrieved)

    def depth(self, trial: Trial) -> int:
        return min(trial.candidates, K)

    def _keyword_hits(
        self, boosts: tuple[tuple[str, float], ...]
    ) -> dict[str, list[tuple[int, float]]]:
        """The keyword branch re-run with other field boosts (fusion input changes, nothing else)."""
        if boosts not in self._keyword:
            snap = self.orchestrator.snapshot()
            merged = {**dict(snap.settings.boosts), **dict(boosts)}
            out = {}
            for q, r in self.retrieved.items():
                p = parse_query(self.queries[q])
                query = Query(
                    terms=tuple(p.keyword_terms),
                    phrases=tuple(tuple(x) for x in p.phrases),
                    excluded=tuple(p.excluded),
                    expansions=r.expansions,
                    boosts=merged,
                    tie_order=snap.tie_order,
                )
                out[q] = snap.reader("keywords").search(query, K, None)
            self._keyword[boosts] = out
        return self._keyword[boosts]

    def run(self, trial: Trial, branches: Sequence[str] | None = None) -> Run:
        """Each query ranked as a search of ``top_k`` hits ranks it: at the trial's
        depth, then, when that holds fewer notes, extended from deeper levels."""
        depth = self.depth(trial)
        kw = self._keyword_hits(trial.boosts) if trial.boosts else None
        out: Run = {}
        for qid, r in self.retrieved.items():
            lists = dict(r.branches)
            if kw is not None and "keyword" in lists:
                lists["keyword"] = kw[qid]
            if branches is not None:
                lists = {b: lists.get(b, []) for b in branches}
            out[qid] = self.ranked_docs(
                lambda level, q=qid, r=r, lists=lists: self._rank_at(
                    trial, q, r, lists, level, branches
                ),
                depth,
            )
        return out

    def ranked_docs(self, rank_at: Callable[[int], list[Candidate]], depth: int) -> list[str]:
        """The judged document ids of a ranking at ``depth`` (``rank_at``: the query ranked
        at a depth), extended from deeper levels while it holds fewer than ``top_k``
        notes, as the product does (levels 4, 16, ... times as deep, cut at ``K``)."""
        ranked = rank_at(depth)
        level = depth
        while len(ranked) < self.top_k and level < K:
            level = min(level * 4, K)
            grown = extend(ranked, rank_at(level))
            if len(grown) == len(ranked):
                break
            ranked = grown
        snap = self.orchestrator.snapshot()
        return list(
            dict.fromkeys(self.doc_of.get(snap.notes[c.note_id].path, "") for c in ranked[:100])
        )

    def _rank_at(
        self,
        trial: Trial,
        qid: str,
        r: Retrieved,
        lists: dict[str, list[tuple[int, float]]],
        depth: int,
        branches: Sequence[str] | None,
    ) -> list[Candidate]:
        orch, snap = self.orchestrator, self.orchestrator.snapshot()
        mode = "hybrid" if branches is None or len(branches) == 2 else branches[0]
        cut = {b: hits if b == "sentences" else hits[:depth] for b, hits in lists.items()}
        if "sentences" in cut:  # a search at this depth scores the chunks it found
            found = {c for b, hits in cut.items() if b != "sentences" for c, _ in hits}
            cut["sentences"] = [h for h in cut["sentences"] if h[0] in found]
        r = replace(r, branches=cut, completion=_completion(r, lists, depth))
        return variants.apply(
            trial.variant,
            r,
            lambda x: orch.rank(snap, x, mode, settings=trial.settings),
            snap.note_of_chunk,
            self.query_vectors()[qid] if trial.variant[:1] == ("prf",) else np.zeros(0),
            lambda ids: snap.reader("vectors").vectors_of(ids)[1],
            lambda v, k: snap.reader("vectors").nearest(v, k),
        )

    def query_vectors(self) -> dict[str, np.ndarray]:
        """Each query's embedding as ``retrieve`` makes it (cached on disk)."""
        if not self._vectors:
            texts = []
            for q in self.ids:
                p = parse_query(self.queries[q])
                texts.append(p.text or " ".join(p.highlight_terms))
            model = self.orchestrator.embedder.model_id
            disk = STORE / f"queries-{_digest(model, texts)}.pkl"
            if disk.is_file():
                self._vectors = pickle.loads(disk.read_bytes())
            else:
                embed = self.orchestrator.embedder.embed_query
                self._vectors = {
                    q: np.asarray(embed(t)) for q, t in zip(self.ids, texts, strict=True)
                }
                _store(disk, self._vectors)
        return self._vectors

    def scores(self, trial: Trial) -> Scores:
        """Memoised on what can change this dataset's ranking (a vault without links
        ignores the graph shares)."""
        s = trial.settings
        links = bool(len(self.orchestrator.snapshot().reader("graph")))
        hop = (
            (
                s.hop_weight,
                s.hop_top,
                s.hop_margin,
                s.hop_anchor,
                s.hop_below,
                s.hop_local,
                s.hop_residual,
            )
            if s.hop_weight
            else ()
        )
        graph = (s.graph_share, s.graph_lead, hop) if links else (0.0, 0.0)
        key = (
            s.method, tuple(sorted(s.weights.items())), s.rrf_k, s.normalisation,
            s.chunk_share, graph, s.graph_top, s.recency_tiers, self.depth(trial), trial.boosts,
            trial.variant,
        )  # fmt: skip
        if key not in self._memo:
            disk = STORE / f"scores-{_digest(self._fingerprint(), key)}.pkl"
            if disk.is_file():
                self._memo[key] = pickle.loads(disk.read_bytes())
            else:
                self._memo[key] = score_run(self.run(trial), self.qrels, self.ids)
                _store(disk, self._memo[key])
        return self._memo[key]

    def _fingerprint(self) -> str:
        if not self._print:
            qrels = sorted((q, sorted(self.qrels[q].items())) for q in self.ids)
            rewrites = Path(variants.__file__).read_bytes() + Path(__file__).read_bytes()
            self._print = _digest(_code(), rewrites, self.retrieved, qrels, self.top_k, self.doc_of)
        return self._print


def _completion(
    r: Retrieved, lists: Mapping[str, list[tuple[int, float]]], depth: int
) -> dict[str, list[tuple[int, float]]]:
    """What a search at ``depth`` would have completed its branches with: for each
    branch the retrieval completed (the semantic one), the deeper hits the cut left
    out, then the scores the retrieval at ``K`` completed."""
    if not {"keyword", "semantic"} <= set(lists):
        return {}
    return {b: [*lists[b][depth:], *extra] for b, extra in r.completion.items() if b in lists}


def score_run(run: Run, qrels: Qrels, ids: Sequence[str]) -> Scores:
    return Scores(
        [ndcg_at_k(run.get(q, []), qrels[q], 10) for q in ids],
        [recall_at_k(run.get(q, []), qrels[q], 100) for q in ids],
        [mrr_at_k(run.get(q, []), qrels[q], 10) for q in ids],
    )


def seeded_folds(ids: Sequence[str], k: int = FOLDS) -> dict[str, int]:
    """The SciFact folds every earlier tuning run used (sorted ids, shuffled by seed 11)."""
    shuffled = sorted(ids)
    random.Random(SEED).shuffle(shuffled)
    return {q: i % k for i, q in enumerate(shuffled)}


@functools.cache
def _code() -> str:
    """The ranking code as it is now: a cached result of other code is not reused."""
    root = Path(vaultsearch.__file__).parent
    return _digest(*[(p.name, p.read_bytes()) for p in sorted(root.rglob("*.py"))])


def _digest(*parts: object) -> str:
    return hashlib.sha256(pickle.dumps(parts, protocol=5)).hexdigest()[:24]


def _store(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(pickle.dumps(value, protocol=5))
    tmp.replace(path)


def cached_unit_vectors(label: str, texts: Sequence[str], embedder: Any) -> np.ndarray:
    """Unit vectors of ``texts`` by the bundled model, cached in bench/.cache under
    ``label`` and a digest of the model's cache key and the texts, so a baseline re-run
    embeds nothing and another model never reads the vectors of the last one."""
    from _report import CACHE

    key = "\0".join([embedder.cache_key, *texts])
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
    cache = CACHE / f"{label.replace(' ', '-')}-{digest}.npy"
    if cache.is_file():
        vectors = np.load(cache)
    else:
        vectors = np.concatenate(
            [embedder.embed_texts(texts[s : s + 64]) for s in range(0, len(texts), 64)]
        )
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.save(cache, vectors)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def scifact_train(config: Any, *, sentences: bool = True) -> tuple[Vault, Dataset, Any]:
    """SciFact train as a built vault (its catalog cached under bench/.cache, one per
    sentence setting) with its judged claims, and the config it was built with: the one
    way the cross-validation scripts open it."""
    from _report import CACHE, SHARED, require
    from vaultsearch.app.beir import prepare_vault
    from vaultsearch.app.evaluation import load_qrels, load_queries

    data = require(SHARED / "scifact")
    work = CACHE / "scifact-eval"
    if not sentences:
        config = replace(
            config,
            embedding=replace(config.embedding, sentences=False),
            search=replace(config.search, sentence_weight=0.0),
        )
        work = CACHE / "scifact-eval-nosent"
    vault, doc_of = prepare_vault(data / "corpus.jsonl", work, config)
    vault.index()
    ds = Dataset.from_vault(
        "SciFact train", vault, load_queries(data / "queries.jsonl"),
        load_qrels(data / "qrels" / "train.tsv"), 100, doc_of=doc_of,
    )  # fmt: skip
    return vault, ds, config
