"""A lexical sentence branch ("sentence words"), measured only (issue 27): does the best
single sentence's BM25 of the query's keyword terms, as a fourth fused branch, rank
better held out than the shipped three?

The shipped sentence branch gives each retrieved chunk the cosine of its best sentence.
SciFact claims usually restate one sentence of an abstract, so a chunk whose one
sentence holds most of the query's rare words may be stronger evidence than BM25 over
the whole ~1,000-character chunk. For every query, each chunk the shipped search found
(keyword and semantic candidates at the trial's depth, the set the sentence branch
scores) gets the BM25 of its best sentence unit (``parsers/sentences.unit_texts``, a
chunk with no unit counting as one: the sentence branch's stand-in), over the query's
keyword terms analysed as the keyword index analyses them (stemmed, folded, each term
once), k1 = 1.2, b = 0.75 over the mean unit length of the whole index. IDF either from
the keyword index (``idf=chunk``: BM25 idf over chunk document frequencies, what the
keyword branch uses) or from the units themselves (``idf=sent``: counted over every
unit of the catalog). The branch enters ``QueryOrchestrator.rank`` as one more branch
(tm2c2 per branch as ``ranking.Fusion`` does every branch), its weight taken from the
keyword share (``kw``) or added on top (``top``: the others scaled by 1 - w).

Joint 5-fold CV over SciFact train and both judged vault sets (``tune_cv``), shipped
ranking included as a trial, per fold; paired bootstrap of the held-out choice against
the shipped ranking; SciFact split by whether a held-out claim's relevant abstract is
relevant to a training claim (``query_map_cv.seen_split``).

Run: ``nice -n 10 .venv/bin/python bench/sentence_words_cv.py``; prints Markdown,
writes nothing but its caches (bench/.cache/tune).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import pickle
import statistics
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from query_map_cv import seen_split
from query_map_data import Judged
from tune import SCIFACT, load, trial_of
from tune_cv import cross_validate, paired_cells
from tune_data import FOLDS, STORE, Dataset, Scores, Trial, _completion, _digest, score_run
from vaultsearch.config import Config
from vaultsearch.parsers.sentences import unit_texts
from vaultsearch.search.orchestrator import Retrieved
from vaultsearch.search.query import parse_query
from vaultsearch.search.ranking import Candidate, FusionSettings

Hits = list[tuple[int, float]]
K1, B = 1.2, 0.75
BRANCH = "sentwords"
WEIGHTS = (0.05, 0.1, 0.2, 0.3)
"""Fixed before any held-out figure was seen (the brief's 0.05-0.3)."""


@dataclass(frozen=True)
class Units:
    """Every chunk's sentence units as analysed term counts, and the index-wide figures
    BM25 needs."""

    terms: dict[int, list[Counter[str]]]
    mean_len: float
    df: Counter[str]
    """Units holding each term."""
    count: int


def units_of(ds: Dataset, titled: bool = False) -> Units:
    """``titled``: each unit counted with its note's title words too, as the keyword
    branch's ``text`` field holds the title beside the chunk."""
    snap = ds.orchestrator.snapshot()
    analyse = snap.lexicon.analyzer.analyze
    ids = sorted(snap.note_of_chunk)
    terms: dict[int, list[Counter[str]]] = {}
    df: Counter[str] = Counter()
    lengths = 0
    for s in range(0, len(ids), 2000):
        for cid, row in snap.chunk_rows(ids[s : s + 2000]).items():
            note = snap.notes[snap.note_of_chunk[cid]]
            units = unit_texts(row.text, note.kind) or [row.text]
            counted = [Counter(analyse(u)) for u in units]
            if titled and note.title:
                title = Counter(analyse(note.title))
                counted = [c + title for c in counted]
            terms[cid] = counted
            for c in counted:
                df.update(c.keys())
                lengths += sum(c.values())
    count = sum(len(u) for u in terms.values())
    return Units(terms, lengths / max(count, 1), df, count)


def query_terms(ds: Dataset, qid: str) -> list[str]:
    analyse = ds.orchestrator.snapshot().lexicon.analyzer.analyze
    parsed = parse_query(ds.queries[qid])
    return list(dict.fromkeys(t for w in parsed.keyword_terms for t in analyse(w.lower())))


def idfs(ds: Dataset, units: Units, terms: Sequence[str], source: str) -> dict[str, float]:
    out = {}
    for t in terms:
        if source in ("chunk", "title"):
            df, n = ds.orchestrator.snapshot().lexicon.doc_freq(t)
        else:
            df, n = units.df.get(t, 0), units.count
        if df:
            out[t] = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return out


def best_sentence(counts: Sequence[Counter[str]], idf: Mapping[str, float], mean: float) -> float:
    best = 0.0
    for c in counts:
        length = sum(c.values())
        norm = K1 * (1 - B + B * length / mean)
        s = sum(w * c[t] * (K1 + 1) / (c[t] + norm) for t, w in idf.items() if c.get(t))
        best = max(best, s)
    return best


def branch_hits(ds: Dataset, units: Units, source: str) -> dict[str, list[tuple[int, float]]]:
    """Per query, every chunk either branch retrieved at ``K`` with a positive best
    sentence score, best first (ties by chunk id)."""
    out = {}
    for qid, r in ds.retrieved.items():
        terms = query_terms(ds, qid)
        idf = idfs(ds, units, terms, source)
        found = {c for b in ("keyword", "semantic") for c, _ in r.branches.get(b, [])}
        hits = [(c, best_sentence(units.terms.get(c, []), idf, units.mean_len)) for c in found]
        out[qid] = sorted(((c, s) for c, s in hits if s > 0), key=lambda x: (-x[1], x[0]))
    return out


class WithWords:
    """A ``Dataset`` as ``cross_validate`` reads it, scoring a ``("sentwords", idf, mode,
    w)`` trial with the extra branch and any other trial as the dataset does."""

    def __init__(self, ds: Dataset) -> None:
        self.ds, self.name, self.fold, self.kind = ds, ds.name, ds.fold, ds.kind
        self.hits: dict[str, dict[str, list[tuple[int, float]]]] = {}
        self._units: dict[bool, Units] = {}
        self._memo: dict[str, Scores] = {}

    @property
    def ids(self) -> list[str]:
        return self.ds.ids

    def units(self, titled: bool) -> Units:
        if titled not in self._units:
            t = time.time()
            u = self._units[titled] = units_of(self.ds, titled)
            print(f"{self.name}: {u.count} units, mean {u.mean_len:.1f} terms, titled "
                  f"{titled} ({time.time() - t:.0f} s)", file=sys.stderr, flush=True)  # fmt: skip
        return self._units[titled]

    def scores(self, trial: Trial) -> Scores:
        if trial.variant[:1] != (BRANCH,):
            return self.ds.scores(trial)
        key = repr(trial)
        if key not in self._memo:
            me = Path(__file__).read_bytes()
            disk = STORE / f"sentwords-{_digest(self.ds._fingerprint(), me, trial)}.pkl"
            if disk.is_file():
                self._memo[key] = pickle.loads(disk.read_bytes())
            else:
                source = str(trial.variant[1])
                if source not in self.hits:
                    units = self.units(source == "title")
                    self.hits[source] = branch_hits(self.ds, units, source)
                self._memo[key] = score_run(self.run(trial), self.ds.qrels, self.ids)
                disk.parent.mkdir(parents=True, exist_ok=True)
                tmp = disk.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_bytes(pickle.dumps(self._memo[key], protocol=5))
                tmp.replace(disk)
        return self._memo[key]

    def run(self, trial: Trial) -> dict[str, list[str]]:
        """``Dataset.run`` with the extra branch: same depth, same extension levels."""
        ds = self.ds
        _, source, mode, w = trial.variant
        base = dict(trial.settings.weights)
        total = sum(base.values())
        w = float(w)
        if mode == "top":
            weights = {**base, BRANCH: w * total / (1 - w)}
        elif mode == "alone":  # diagnostics: one branch over the same candidates
            weights = {**dict.fromkeys(base, 0.0), BRANCH: 1.0}
        elif mode == "kwalone":
            weights = {**dict.fromkeys(base, 0.0), "keyword": 1.0, BRANCH: 0.0}
        else:
            weights = {**base, "keyword": base["keyword"] - w * total, BRANCH: w * total}
        settings = replace(trial.settings, weights=weights)
        depth = ds.depth(trial)
        words = self.hits[str(source)]
        out = {}
        for qid, r in ds.retrieved.items():
            out[qid] = ds.ranked_docs(
                lambda level, r=r, hits=words[qid]: self._rank_at(settings, r, hits, level),
                depth,
            )
        return out

    def _rank_at(
        self, settings: FusionSettings, r: Retrieved, words: Hits, depth: int
    ) -> list[Candidate]:
        """``Dataset._rank_at`` (no variant, hybrid) with the word branch cut as the
        sentence branch is: to the chunks the two retrieving branches found at ``depth``."""
        orch = self.ds.orchestrator
        snap = orch.snapshot()
        lists = dict(r.branches)
        cut = {b: hits if b == "sentences" else hits[:depth] for b, hits in lists.items()}
        found = {c for b, hits in cut.items() if b != "sentences" for c, _ in hits}
        cut["sentences"] = [h for h in cut.get("sentences", []) if h[0] in found]
        cut[BRANCH] = [h for h in words if h[0] in found]
        x = replace(r, branches=cut, completion=_completion(r, lists, depth))
        return orch.rank(snap, x, "hybrid", settings=settings)


def grid(shipped: Trial) -> list[Trial]:
    out = [shipped]
    for mode in ("top", "kw"):
        for w in WEIGHTS:
            out.append(replace(shipped, variant=(BRANCH, "chunk", mode, w)))
    for mode in ("top", "kw"):
        for w in (0.1, 0.2):
            out.append(replace(shipped, variant=(BRANCH, "sent", mode, w)))
    for w in (0.05, 0.1):  # added after the first run: units with their note's title
        out.append(replace(shipped, variant=(BRANCH, "title", "kw", w)))
    return out


def label(t: Trial) -> str:
    return ":".join(str(v) for v in t.variant[1:]) or "shipped"


def fold_means(s: WithWords, values: Sequence[float]) -> list[float]:
    return [
        statistics.fmean(values[j] for j, q in enumerate(s.ids) if s.fold[q] == f)
        for f in range(FOLDS)
    ]


def judged(ds: WithWords) -> Judged:
    """What ``seen_split`` reads: each query's relevant notes (by judged id) and fold."""
    qrels = ds.ds.qrels
    pos = [sorted(d for d, g in qrels[q].items() if g > 0) for q in ds.ids]
    fold = np.array([ds.fold[q] for q in ds.ids])
    return Judged(list(ds.ids), np.zeros((len(ds.ids), 0)), pos, fold)  # type: ignore[arg-type]


def load_avg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", default="", help="comma-separated dataset names (default all)")
    args = parser.parse_args()
    config = Config()
    shipped = trial_of(config.search)
    t0 = time.time()
    print(f"load average at start: {load_avg()}", file=sys.stderr, flush=True)
    with contextlib.ExitStack() as stack:
        datasets, _ = load(config, stack)
        if args.sets:
            datasets = [d for d in datasets if d.name in args.sets.split(",")]
        sets = [WithWords(d) for d in datasets]
        print(f"loaded in {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
        zero = replace(shipped, variant=(BRANCH, "chunk", "kw", 0.0))
        for s in sets:  # the rewritten path at weight 0 must be the shipped ranking exactly
            assert s.scores(zero).ndcg == s.ds.scores(shipped).ndcg, f"{s.name}: path differs"
        print(f"weight-0 check passed ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
        trials = grid(shipped)
        for t in trials:
            for s in sets:
                s.scores(t)
            print(f"{t.describe()} ({time.time() - t0:.0f} s, load {load_avg()})",
                  file=sys.stderr, flush=True)  # fmt: skip
        cv = cross_validate(sets, trials)  # type: ignore[arg-type]
        names = [s.name for s in sets]
        print(f"Shipped: {shipped.describe()}; load average at the end {load_avg()}.\n")
        print("Whole sets, every trial, nDCG@10 (not held out):\n")
        print("| trial | " + " | ".join(names) + " |")
        print("| --- | " + " | ".join("---:" for _ in names) + " |")
        for t in trials:
            cells = " | ".join(f"{statistics.fmean(s.scores(t).ndcg):.4f}" for s in sets)
            print(f"| {label(t)} | {cells} |")
        print("\nOne branch alone over the same candidates (graph boost on), nDCG@10:\n")
        print("| branch | " + " | ".join(names) + " |")
        print("| --- | " + " | ".join("---:" for _ in names) + " |")
        for src in ("chunk", "sent", "title"):
            t = replace(shipped, variant=(BRANCH, src, "alone", 1.0))
            cells = " | ".join(f"{statistics.fmean(s.scores(t).ndcg):.4f}" for s in sets)
            print(f"| best sentence BM25, idf/units {src} | {cells} |")
        t = replace(shipped, variant=(BRANCH, "chunk", "kwalone", 1.0))
        cells = " | ".join(f"{statistics.fmean(s.scores(t).ndcg):.4f}" for s in sets)
        print(f"| keyword branch (chunk BM25) | {cells} |")
        print("\nJoint CV held out, per fold (trial chosen on the other four folds of all sets):\n")
        print("| fold | chosen | " + " | ".join(f"{n} shipped / CV" for n in names) + " |")
        print("| ---: | --- | " + " | ".join("---" for _ in names) + " |")
        olds = {s.name: fold_means(s, s.scores(shipped).ndcg) for s in sets}
        for f, r in enumerate(cv.folds):
            cells = [f"{olds[s.name][f]:.4f} / {r.ndcg[s.name]:.4f}" for s in sets]
            print(f"| {f + 1} | {label(cv.chosen[f])} | " + " | ".join(cells) + " |")
        print("\n| set | held-out CV - shipped [95% CI] | wins / losses, sign p |")
        print("| --- | --- | --- |")
        for s in sets:
            print(f"| {s.name} | {paired_cells(cv.held_out[s.name], s.scores(shipped).ndcg)} |")
        sci = [s for s in sets if s.name == SCIFACT]
        for s in sci:
            print("\n- " + seen_split("SciFact train, joint CV choice", judged(s),
                                       cv.held_out[s.name], s.scores(shipped).ndcg))  # fmt: skip
            alone = cross_validate([s], trials)  # type: ignore[list-item]
            print("\nSciFact train alone, CV per fold (shipped / CV-chosen):\n")
            print("| fold | chosen | shipped | CV held out |")
            print("| ---: | --- | ---: | ---: |")
            for f, r in enumerate(alone.folds):
                print(f"| {f + 1} | {label(alone.chosen[f])} | {olds[s.name][f]:.4f} | "
                      f"{r.ndcg[s.name]:.4f} |")  # fmt: skip
            print("\n- all: " + paired_cells(alone.held_out[s.name], s.scores(shipped).ndcg, "; "))
            print("- " + seen_split("SciFact train alone, CV choice", judged(s),
                                    alone.held_out[s.name], s.scores(shipped).ndcg))  # fmt: skip
        fixed = [t for t in trials if t.variant]
        print("\nEach fixed trial against shipped, paired, whole sets:\n")
        print("| trial | " + " | ".join(names) + " |")
        print("| --- | " + " | ".join("---" for _ in names) + " |")
        for t in fixed:
            cells = " | ".join(
                paired_cells(s.scores(t).ndcg, s.scores(shipped).ndcg, "; ") for s in sets
            )
            print(f"| {label(t)} | {cells} |")
        for s in sci:
            print("\nSciFact train per fold, each fixed trial (shipped first):\n")
            print("| trial | " + " | ".join(f"fold {f + 1}" for f in range(FOLDS)) + " |")
            print("| --- | " + " | ".join("---:" for _ in range(FOLDS)) + " |")
            for t in trials:
                cells = " | ".join(f"{v:.4f}" for v in fold_means(s, s.scores(t).ndcg))
                print(f"| {label(t)} | {cells} |")
            print()
            for t in fixed:
                print("- " + seen_split(f"SciFact, fixed {label(t)}", judged(s),
                                        s.scores(t).ndcg, s.scores(shipped).ndcg))  # fmt: skip
    print(f"\n({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
