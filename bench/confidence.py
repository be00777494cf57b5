"""Calibrating hit confidence: a logistic model over (cosine, coverage), fitted and checked
by 5-fold cross-validation over queries.

Positive examples are SciFact train hits judged relevant; negatives are the other top-10
hits, plus the top-10 hits of queries the corpus cannot answer (everyday topics asked of
a corpus of biomedical abstracts). The coefficients printed here are the ones in
``src/vaultsearch/search/confidence.py``; the report gives, on held-out folds, the
calibration (Brier score, expected calibration error) and how often "no note matches
well" is said for unanswerable queries and wrongly said for answerable ones.

Run: `make bench-confidence` (needs the index that `make bench-quality` builds and caches).
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import CACHE, SHARED, require, write_section
from vaultsearch.app.beir import prepare_vault
from vaultsearch.app.evaluation import load_qrels, load_queries
from vaultsearch.config import Config
from vaultsearch.search.confidence import WEAK, WITH_COSINE, WORDS_ONLY, Evidence, confidence

SEED = 7
TOP = 10

_TOPICS = [
    ["pizza", "dough", "recipe", "oven", "sourdough", "bake"],
    ["bike", "tire", "puncture", "repair", "chain", "gears"],
    ["football", "league", "transfer", "goalkeeper", "season", "penalty"],
    ["holiday", "flights", "hotel", "beach", "luggage", "visa"],
    ["guitar", "chords", "strings", "tuning", "amplifier", "song"],
    ["mortgage", "interest", "rate", "bank", "loan", "payment"],
    ["garden", "tomatoes", "compost", "watering", "seeds", "soil"],
    ["laptop", "keyboard", "battery", "charger", "screen", "warranty"],
    ["chess", "opening", "endgame", "rook", "tournament", "rating"],
    ["wedding", "dress", "venue", "invitations", "cake", "music"],
]


def no_answer_queries(n: int) -> dict[str, str]:
    """Everyday questions: SciFact holds biomedical abstracts and none of these."""
    rng = random.Random(SEED)
    out = {}
    for i in range(n):
        words = rng.sample(rng.choice(_TOPICS), rng.randint(2, 4))
        lead = rng.choice(["", "how to ", "best ", "what is the ", "cheap "])
        out[f"none-{i}"] = lead + " ".join(words)
    return out


def features(vault, queries, qrels, doc_of, mode):  # type: ignore[no-untyped-def]
    rows = []  # (query id, cosine, coverage, label, rank)
    for qid, text in queries.items():
        for rank, h in enumerate(vault.search(text, top_k=TOP, mode=mode, explain=True), 1):
            ex = h.explain
            label = int(qrels.get(qid, {}).get(doc_of.get(h.path, ""), 0) > 0)
            rows.append((qid, ex.cosine, ex.coverage, label, rank))
    return rows


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1e-3) -> np.ndarray:
    """Logistic regression by Newton's method (a few parameters, no library needed)."""
    x1 = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(x1.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-(x1 @ w)))
        grad = x1.T @ (p - y) + l2 * w
        hess = (x1 * (p * (1 - p))[:, None]).T @ x1 + l2 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def coefficients(w: np.ndarray, with_cosine: bool) -> tuple[float, float, float]:
    return (
        (float(w[0]), float(w[1]), float(w[2])) if with_cosine else (float(w[0]), 0.0, float(w[1]))
    )


def ece(p: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    edges = np.linspace(0, 1, bins + 1)
    total = 0.0
    for lo, hi in itertools.pairwise(edges):
        m = (p >= lo) & (p < hi if hi < 1 else p <= hi)
        if m.any():
            total += m.sum() / len(p) * abs(p[m].mean() - y[m].mean())
    return total


def evaluate_mode(rows, with_cosine: bool):  # type: ignore[no-untyped-def]
    qids = sorted({r[0] for r in rows})
    random.Random(SEED).shuffle(qids)
    folds = [set(qids[i::5]) for i in range(5)]
    probs = np.zeros(len(rows))
    for held in folds:
        train = [r for r in rows if r[0] not in held]
        x = np.array([[r[1], r[2]] if with_cosine else [r[2]] for r in train], dtype=float)
        w = fit(x, np.array([r[3] for r in train], dtype=float))
        c = coefficients(w, with_cosine)
        for i, r in enumerate(rows):
            if r[0] in held:
                e = Evidence(r[1] if with_cosine else None, r[2])
                probs[i] = confidence(e, c, c)
    y = np.array([r[3] for r in rows], dtype=float)
    top = {r[0]: (probs[i], r[3]) for i, r in enumerate(rows) if r[4] == 1}
    none = [p for q, (p, _) in top.items() if q.startswith("none-")]
    right = [p for q, (p, lab) in top.items() if not q.startswith("none-") and lab]
    x_all = np.array([[r[1], r[2]] if with_cosine else [r[2]] for r in rows], dtype=float)
    final = coefficients(fit(x_all, y), with_cosine)
    return {
        "brier": float(np.mean((probs - y) ** 2)),
        "ece": ece(probs, y),
        "base_rate": float(y.mean()),
        "weak_on_none": statistics.fmean(p < WEAK for p in none),
        "weak_on_right": statistics.fmean(p < WEAK for p in right),
        "sweep": [
            (t, statistics.fmean(p < t for p in none), statistics.fmean(p < t for p in right))
            for t in (0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5)
        ],
        "coef": final,
        "n": len(rows),
        "none": len(none),
        "right": len(right),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--limit", type=int, default=400, help="SciFact queries used")
    args = parser.parse_args()
    data = require(SHARED / "scifact")
    work = CACHE / "scifact-eval"
    require(work / "index" / "CURRENT")
    vault, doc_of = prepare_vault(data / "corpus.jsonl", work, Config())
    vault.index()
    qrels = load_qrels(data / "qrels" / "train.tsv")
    texts = load_queries(data / "queries.jsonl")
    ids = sorted(q for q in texts if q in qrels)
    random.Random(SEED).shuffle(ids)
    queries = {q: texts[q] for q in ids[: args.limit]} | no_answer_queries(60)
    lines, sweeps = [], []
    for mode, with_cos, shipped in (("hybrid", True, WITH_COSINE), ("keyword", False, WORDS_ONLY)):
        r = evaluate_mode(features(vault, queries, qrels, doc_of, mode), with_cos)
        a, b, c = r["coef"]
        lines.append(
            f"| {mode} | {r['n']} | {r['base_rate']:.3f} | {r['brier']:.4f} | {r['ece']:.4f} "
            f"| {r['weak_on_none']:.2f} ({r['none']}) | {r['weak_on_right']:.2f} ({r['right']}) "
            f"| ({a:.2f}, {b:.2f}, {c:.2f}) | {shipped} |"
        )
        print(mode, r, flush=True)
        sweeps += [
            f"| {mode} | {t:g} | {none:.2f} | {right:.2f} |" for t, none, right in r["sweep"]
        ]
    body = f"""
Hits: the top {TOP} of {args.limit} SciFact train queries (relevant = judged relevant) and of
60 everyday queries SciFact cannot answer ("how to bike tire repair", "best pizza dough").
Features: cosine of the best chunk, idf-weighted coverage of the query's content words.
Figures on held-out folds (5-fold by query); the coefficients are fitted on all of it.

| mode | hits | share relevant | Brier | ECE | "no note matches well" said: no-answer queries | said wrongly: top hit relevant | fitted (a, b_cos, c_cov) | shipped |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |
{chr(10).join(lines)}

Where to draw the line (held-out probabilities of each query's top hit): share of no-answer
queries told "no note matches well", and share of queries whose top hit is relevant told
so wrongly, by threshold:

| mode | threshold | said, no answer | said wrongly |
| --- | ---: | ---: | ---: |
{chr(10).join(sweeps)}
"""
    if args.no_write:
        print(body)
    else:
        write_section("confidence", "Confidence calibration", body)


if __name__ == "__main__":
    main()
