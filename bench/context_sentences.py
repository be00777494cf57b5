"""Issue 27: would contextual sentence vectors lift SciFact train per fold without
losing on our judged vaults? (``context_vectors`` says what each variant embeds.)

Each variant's vectors are computed from the shipped build's chunks, then a vault is
built per set and variant the ordinary way, its embedder wrapped so that those texts
get those vectors (``Mapped``, with a cache key of its own: neither the index nor the
per-user cache can mix them with bare ones; the per-user cache is off for the builds).
Every other text, queries included, goes to the bundled model as shipped. The shipped
and variant indexes are then ranked by the same ``Dataset.scores(trial_of(...))`` as
``scifact_folds.py``: nothing is learned from judgments except the mix's α, chosen per
fold on the other four.

Run: ``nice -n 15 .venv/bin/python bench/context_sentences.py [--variants ...]``
(vectors and builds are cached under bench/.cache/ctxsent); prints Markdown.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import context_vectors as cv
from _report import CACHE, SHARED, require
from judged_set import VAULTS, fold_of, load_judged
from tune import trial_of
from tune_data import FOLDS, Dataset, scifact_train
from vault_quality import judged_vault
from vaultsearch.app.evaluation import load_qrels, load_queries
from vaultsearch.app.vault import Vault
from vaultsearch.config import Config
from vaultsearch.embedding import Embedder

WORK = CACHE / "ctxsent"
SCIFACT = "SciFact train"
VARIANTS = ("control", "prefix", "late256", "late512")
MIXED = ("late256", "prefix")
ALPHAS = (0.25, 0.5, 1.0)


class Mapped:
    """The bundled embedder, but the texts of ``vectors`` get those vectors."""

    def __init__(self, base: Embedder, vectors: dict[str, np.ndarray], label: str) -> None:
        self._base, self._vectors, self.label = base, vectors, label
        self.misses = 0

    @property
    def cache_key(self) -> str:
        return f"{self._base.cache_key}+ctx-{self.label}"

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), self._base.dimension), dtype=np.float32)
        need = [i for i, t in enumerate(texts) if t not in self._vectors]
        for i, t in enumerate(texts):
            if t in self._vectors:
                out[i] = self._vectors[t]
        if need:
            self.misses += len(need)
            out[need] = self._base.embed_texts([texts[i] for i in need])
        return out

    def __getattr__(self, name: str) -> object:
        return getattr(self._base, name)


def catalog_of(name: str) -> Path:
    if name == SCIFACT:
        (found,) = (CACHE / "scifact-eval" / "index" / "catalogs").glob("*.sqlite")
        return found
    return CACHE / f"judged-{name}" / "catalog.sqlite"


def slug(name: str) -> str:
    return "scifact" if name == SCIFACT else name


def variant_vectors(
    name: str, variant: str, base: Embedder, counts: dict[tuple[str, str], cv.Counts]
) -> dict[str, np.ndarray]:
    """{text: vector} of every chunk (its ``embed_text``) and every unit the variant
    gives a contextual vector; cached in bench/.cache/ctxsent."""
    path = WORK / f"{slug(name)}-{variant}.npz"
    stats = WORK / f"{slug(name)}-{variant}.counts"
    if path.is_file() and stats.is_file():
        counts[name, variant] = cv.read_counts(stats.read_text())
        return cv.load(path)
    rows = cv.chunk_rows(catalog_of(name))
    c = cv.Counts()
    if variant == "control":  # the shipped vectors through the same path: must equal shipped
        out = {**_chunk_vectors(name, base, counts), **variant_vectors(name, "bare", base, counts)}
        return out
    if variant.startswith("mix"):
        alpha = float(variant[3:].split("-")[0])
        ctx = variant_vectors(name, variant.split("-", 1)[1], base, counts)
        bare = variant_vectors(name, "bare", base, counts)
        out = {r.prefix + r.text: ctx[r.prefix + r.text] for r in rows}
        for u, b in bare.items():
            m = b + alpha * ctx[u] if u in ctx else b
            out[u] = m / np.linalg.norm(m)
        c.units = len(bare)
    elif variant == "bare":
        gen = None
        if name == SCIFACT:
            index = CACHE / "scifact-eval" / "index"
            gen = index / "generations" / (index / "CURRENT").read_text().strip()
        out = cv.bare_vectors(catalog_of(name), base.cache_key, gen)
        c.units = len(out)
    elif variant == "prefix":
        out = dict(_chunk_vectors(name, base, counts))
        out.update(cv.prefixed(rows, base.embed_texts, c))
    else:
        chunks, units = cv.late(rows, base._load(), int(variant[4:]), c)
        if variant == "late256":
            out = {r.prefix + r.text: chunks[r.embed_hash] for r in rows}
        else:
            out = dict(_chunk_vectors(name, base, counts))
        out.update(units)
    cv.save(path, out)
    stats.write_text(json.dumps(asdict(c)))
    counts[name, variant] = c
    return out


def _chunk_vectors(name: str, base: Embedder, counts: dict) -> dict[str, np.ndarray]:
    """The shipped chunk vectors (one 256-token run each, what ``late256`` computes)."""
    late = variant_vectors(name, "late256", base, counts)
    rows = cv.chunk_rows(catalog_of(name))
    return {r.prefix + r.text: late[r.prefix + r.text] for r in rows}


def variant_dataset(
    name: str,
    variant: str,
    vectors: dict[str, np.ndarray],
    base: Embedder,
    stack: contextlib.ExitStack,
) -> tuple[Dataset, int]:
    """The set indexed with the variant's vectors, and how many texts went to the model."""
    work = WORK / f"{slug(name)}-{variant}"
    config = Config()
    config = replace(config, embedding=replace(config.embedding, cache_dir="off"))
    source = CACHE / "scifact-eval" / "vault" if name == SCIFACT else SHARED / "vaults" / name
    if not (work / "vault").is_dir():
        shutil.copytree(source, work / "vault.tmp")
        (work / "vault.tmp").rename(work / "vault")
    vault = Vault.open(work / "vault", index_dir=work / "index", config=config)
    stack.callback(vault.close)
    mapped = Mapped(base, vectors, variant)
    vault.embedder = mapped  # type: ignore[assignment]
    vault.index()
    record = work / "misses.json"  # the build's count (a re-run builds nothing)
    if not record.is_file() or mapped.misses:
        record.write_text(json.dumps(mapped.misses))
    misses = int(json.loads(record.read_text()))
    if name == SCIFACT:
        data = SHARED / "scifact"
        doc_of = json.loads((CACHE / "scifact-eval" / "doc_ids.json").read_text())
        ds = Dataset.from_vault(
            SCIFACT, vault, load_queries(data / "queries.jsonl"),
            load_qrels(data / "qrels" / "train.tsv"), 100, doc_of=doc_of,
        )  # fmt: skip
    else:
        ds = _judged_dataset(name, vault)
    return ds, misses


def _judged_dataset(name: str, vault: Vault) -> Dataset:
    judged = [q for q in load_judged(name) if q.answered]
    return Dataset.from_vault(
        name, vault, {q.id: q.query for q in judged}, {q.id: q.judgments for q in judged}, 10,
        fold={q.id: fold_of(q.id, FOLDS) for q in judged}, kind={q.id: q.kind for q in judged},
    )  # fmt: skip


def shipped_datasets(stack: contextlib.ExitStack, sets: Sequence[str]) -> dict[str, Dataset]:
    out = {}
    if SCIFACT in sets:
        vault, out[SCIFACT], _ = scifact_train(Config())
        stack.callback(vault.close)
    tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="vs-ctx-")))
    for name in (n for n in VAULTS if n in sets):
        v = stack.enter_context(judged_vault(name, tmp, Config()))
        out[name] = _judged_dataset(name, v)
    return out


def bootstrap(deltas: Sequence[float], n: int = 10_000, seed: int = 7) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    d = np.asarray(deltas)
    means = d[rng.integers(0, len(d), size=(n, len(d)))].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def fold_means(ds: Dataset, values: Sequence[float]) -> list[float]:
    return [
        statistics.fmean(v for q, v in zip(ds.ids, values, strict=True) if ds.fold[q] == f)
        for f in range(FOLDS)
    ]


def cv_alpha(ds: Dataset, by_alpha: dict[str, list[float]]) -> tuple[list[str], list[float]]:
    """Per fold, the mix chosen on the other four folds' queries, and its held-out
    per-query nDCG@10 (each query scored by its own fold's choice)."""
    chosen, held = [], [0.0] * len(ds.ids)
    for f in range(FOLDS):
        train = [j for j, q in enumerate(ds.ids) if ds.fold[q] != f]
        best = max(by_alpha, key=lambda a: statistics.fmean(by_alpha[a][j] for j in train))
        chosen.append(best)
        for j, q in enumerate(ds.ids):
            if ds.fold[q] == f:
                held[j] = by_alpha[best][j]
    return chosen, held


def cpu_per_chunk(name: str, base: Embedder, n: int = 150) -> tuple[float, float, float, int]:
    """CPU seconds per chunk, interleaved chunk by chunk on one thread: (shipped: the
    chunk's run and one run per bare unit; late256: the chunk's one run and pooling;
    prefix: the chunk's run and one run per prefixed unit), and units per chunk x n."""
    backend = base._load()
    rows = cv.chunk_rows(catalog_of(name))
    sample = random.Random(3).sample(rows, min(n, len(rows)))
    lc = cv.LateChunker(backend, 256)
    spent = [0.0, 0.0, 0.0]
    units = 0
    for r in sample:
        us = cv.unit_texts(r.text, r.kind)
        units += len(us)
        for k, texts in (
            (0, [r.embed_text, *us]),
            (2, [r.embed_text, *(r.prefix + u for u in us)]),
        ):
            t0 = time.process_time()
            for t in texts:
                backend.embed_query(t)
            spent[k] += time.process_time() - t0
        t0 = time.process_time()
        lc.chunk(r, cv.Counts())
        spent[1] += time.process_time() - t0
    return spent[0] / len(sample), spent[1] / len(sample), spent[2] / len(sample), units


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    parser.add_argument(
        "--mix",
        nargs="*",
        default=list(MIXED),
        help="contextual variants to mix with the bare vectors",
    )
    parser.add_argument("--cpu", type=int, default=150, help="chunks per set in the CPU sample")
    parser.add_argument("--sets", nargs="*", default=[SCIFACT, *VAULTS])
    args = parser.parse_args()
    require(SHARED / "scifact")
    base = Embedder.shared(Config().embedding)
    counts: dict[tuple[str, str], cv.Counts] = {}
    variants = list(args.variants)
    variants += [f"mix{a:g}-{m}" for m in args.mix for a in ALPHAS]
    scores: dict[str, dict[str, list[float]]] = {}
    misses: dict[tuple[str, str], int] = {}
    with contextlib.ExitStack() as stack:
        shipped = shipped_datasets(stack, args.sets)
        trial = trial_of(Config().search)
        sets = list(shipped)
        for name in sets:
            scores[name] = {"shipped": shipped[name].scores(trial).ndcg}
            for variant in variants:
                vectors = variant_vectors(name, variant, base, counts)
                ds, misses[name, variant] = variant_dataset(name, variant, vectors, base, stack)
                assert ds.ids == shipped[name].ids
                scores[name][variant] = ds.scores(trial).ndcg
                print(f"<!-- {name} {variant}: {statistics.fmean(scores[name][variant]):.4f} -->",
                      file=sys.stderr, flush=True)  # fmt: skip
    print(report(shipped, scores, variants, counts, misses, args.mix))
    if args.cpu:
        print(cpu_table([s for s in shipped if s in args.sets], base, args.cpu))


def report(shipped, scores, variants, counts, misses, mix) -> str:  # type: ignore[no-untyped-def]
    out = []
    for name, by in scores.items():
        ds = shipped[name]
        cols = list(by)
        chosen = {}
        for m in mix:
            mixes = {v: by[v] for v in cols if v.startswith("mix") and v.endswith(f"-{m}")}
            chosen[m], held = cv_alpha(ds, mixes)
            by = {**by, f"mix-{m} (α by CV)": held}
            cols.append(f"mix-{m} (α by CV)")
        out.append(f"\n**{name}** ({len(ds.ids)} queries), nDCG@10 per fold:\n")
        out.append("| fold | queries | " + " | ".join(cols) + " |")
        out.append("|---:|---:|" + "---:|" * len(cols))
        per = {c: fold_means(ds, by[c]) for c in cols}
        for f in range(FOLDS):
            nq = sum(ds.fold[q] == f for q in ds.ids)
            cells = " | ".join(f"{per[c][f]:.4f}" for c in cols)
            out.append(f"| {f + 1} | {nq} | {cells} |")
        out.append("| all | " + str(len(ds.ids)) + " | "
                   + " | ".join(f"**{statistics.fmean(by[c]):.4f}**" for c in cols) + " |")  # fmt: skip
        for m, picks in chosen.items():
            alphas = ", ".join(p[3:].split("-")[0] for p in picks)
            out.append(f"\nmix-{m}: α chosen per fold on the other four folds: {alphas}.")
        out.append("\n| variant | delta nDCG@10 vs shipped [95% paired bootstrap CI] | per-fold deltas | wins / losses |")  # fmt: skip
        out.append("|---|---|---|---|")
        for c in cols[1:]:
            d = [a - b for a, b in zip(by[c], by["shipped"], strict=True)]
            lo, hi = bootstrap(d)
            pf = " / ".join(f"{x - y:+.4f}" for x, y in zip(per[c], per["shipped"], strict=True))
            w, lo_n = sum(x > 1e-9 for x in d), sum(x < -1e-9 for x in d)
            out.append(f"| {c} | {statistics.fmean(d):+.4f} [{lo:+.4f}, {hi:+.4f}] | {pf} | {w} / {lo_n} |")  # fmt: skip
    out.append("\nVectors made (per set and variant): units, duplicate unit texts, units kept bare "
               "(late: not found / past the window), chunks over 256 tokens, texts the build sent to the model:\n")  # fmt: skip
    out.append("| set | variant | chunks | units | duplicates | not found | past window | concat ≠ whole | chunks > 256 tokens | build misses |")  # fmt: skip
    out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (name, variant), c in counts.items():
        if variant == "bare":
            continue
        out.append(f"| {name} | {variant} | {c.chunks} | {c.units} | {c.duplicate_units} | {c.not_found} | "
                   f"{c.past_window} | {c.concat_differs} | {c.long_chunks} | {misses.get((name, variant), '–')} |")  # fmt: skip
    return "\n".join(out)


def cpu_table(sets: Sequence[str], base: Embedder, n: int) -> str:
    head = (
        "| set | chunks | units / chunk | shipped (chunk + bare units) | late256 (one run) "
        "| ratio | prefix (chunk + prefixed units) |"
    )
    out = [
        "\nEmbedding CPU per chunk (process time, one thread, interleaved chunk by chunk):\n",
        head,
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in sets:
        a, b, c, units = cpu_per_chunk(name, base, n)
        out.append(f"| {name} | {n} | {units / n:.1f} | {1000 * a:.1f} ms | {1000 * b:.1f} ms | {a / b:.1f}× | {1000 * c:.1f} ms |")  # fmt: skip
    return "\n".join(out)


if __name__ == "__main__":
    main()
