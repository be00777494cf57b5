"""Chunk size for embedding, checked on SciFact train before anything re-embeds a vault.

28% of SciFact's indexed chunks (title, heading path and 1,000 characters) are longer
than MiniLM's 256-token window, so their ends are never seen by the model. Each size
here is a full index of SciFact built with ``chunking.size``/``overlap`` (its own
folder in bench/.cache/, embedded once), scored through ``QueryOrchestrator.rank``: the
semantic branch alone, hybrid with the shipped settings, and a 5-fold CV of the
semantic weight so a size is not judged by a weight tuned for another. Paired against
the shipped size per query.

Run: `make bench-chunking` (minutes per size on first run; then cached).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import CACHE, SHARED, require, write_section
from tune import SCIFACT, SENTENCE_SHARE, shares, trial_of
from tune_cv import cross_validate, paired_cells
from tune_data import Dataset, Trial, score_run
from vaultsearch.app.beir import prepare_vault
from vaultsearch.app.evaluation import load_qrels, load_queries
from vaultsearch.config import ChunkingConfig, Config


def dataset(size: int, overlap: int, stack: contextlib.ExitStack) -> tuple[Dataset, int]:
    data = require(SHARED / "scifact")
    config = replace(Config(), chunking=ChunkingConfig(size=size, overlap=overlap))
    shipped = Config().chunking
    same = (size, overlap) == (shipped.size, shipped.overlap)
    work = CACHE / ("scifact-eval" if same else f"scifact-chunks-{size}-{overlap}")
    vault, doc_of = prepare_vault(data / "corpus.jsonl", work, config)
    vault.index()
    stack.callback(vault.close)
    ds = Dataset.from_vault(
        SCIFACT, vault, load_queries(data / "queries.jsonl"),
        load_qrels(data / "qrels" / "train.tsv"), 100, doc_of=doc_of,
    )  # fmt: skip
    return ds, int(vault.status()["chunks"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000:100,800:100,600:100")
    args = parser.parse_args()
    sizes = [tuple(int(x) for x in s.split(":")) for s in args.sizes.split(",")]
    shipped = trial_of(Config().search)
    grid = [
        Trial(replace(shipped.settings, weights=shares(a, SENTENCE_SHARE)), 100)
        for a in (0.5, 0.6, 0.7)
    ]
    lines = [
        "| size / overlap | chunks | semantic nDCG@10 / R@100 | hybrid (shipped) nDCG@10 / R@100 | hybrid 5-fold CV per fold | CV mean | hybrid delta vs shipped size [95% CI], wins / losses, p |",
        "| --- | ---: | --- | --- | --- | ---: | --- |",
    ]
    base: list[float] | None = None
    with contextlib.ExitStack() as stack:
        for size, overlap in sizes:
            ds, chunks = dataset(size, overlap, stack)
            sem = score_run(ds.run(shipped, ["semantic"]), ds.qrels, ds.ids)
            hyb = ds.scores(shipped)
            cv = cross_validate([ds], grid)
            if base is None:
                base, delta = hyb.ndcg, "(reference)"
            else:
                delta = paired_cells(hyb.ndcg, base, sep=", ")
            folds = " / ".join(f"{f.ndcg[SCIFACT]:.4f}" for f in cv.folds)
            lines.append(
                f"| {size} / {overlap} | {chunks} "
                f"| {statistics.fmean(sem.ndcg):.4f} / {statistics.fmean(sem.recall):.4f} "
                f"| {statistics.fmean(hyb.ndcg):.4f} / {statistics.fmean(hyb.recall):.4f} "
                f"| {folds} | {cv.mean(SCIFACT)[0]:.4f} | {delta} |"
            )
            print(lines[-1], flush=True)
    body = (
        f"SciFact train, 809 queries; shipped fusion {shipped.describe()}; the CV picks the "
        "semantic weight (0.5 / 0.6 / 0.7) on four folds and reports the fifth (seed-11 "
        "folds). The first row is the shipped chunking.\n\n" + "\n".join(lines)
    )
    write_section("chunking", "Chunk size for embedding", body)


if __name__ == "__main__":
    main()
