"""Does the embedded prefix (note title and heading path before each chunk) help?

The index embeds ``title / heading path / chunk text`` (``chunker._embed_text``). Here
every chunk of each tuning dataset is embedded again as its bare text with the same
model, searched exactly (cosine over all chunks, as the flat FAISS index does), and both
variants are fused by ``QueryOrchestrator.rank`` with the shipped settings: the
semantic branch alone and hybrid, per dataset, paired per query.

Run: `make bench-prefix` (after `make bench-tune` has cached the indexes; embedding
the bare chunks takes minutes once, then they are cached in bench/.cache/).
"""

from __future__ import annotations

import contextlib
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section
from tune import load, trial_of
from tune_cv import paired_cells
from tune_data import Dataset, K, cached_unit_vectors, score_run
from vaultsearch.config import Config


def bare_chunk_branch(ds: Dataset) -> dict[str, list[tuple[int, float]]]:
    """Each query's top-K chunks by cosine against the chunks' bare text."""
    snap = ds.orchestrator.snapshot()
    ids = sorted(snap.note_of_chunk)
    rows = snap.chunk_rows(ids)
    texts = [rows[i].text for i in ids]
    embedder = ds.orchestrator.embedder
    vectors = cached_unit_vectors(f"bare-chunks-{ds.name}", texts, embedder)
    out = {}
    for qid in ds.ids:
        r = ds.retrieved[qid]
        q = embedder.embed_query(r.text or ds.queries[qid])
        scores = vectors @ (q / np.linalg.norm(q))
        top = np.argsort(-scores)[:K]
        out[qid] = [(ids[i], float(scores[i])) for i in top]
    return out


def main() -> None:
    config = Config()
    # Both sides fused without completion: the bare side has no cosines of its own for
    # the notes only the keyword branch found.
    trial = replace(trial_of(config.search), variant=("uncompleted",))
    lines = [
        "| dataset | system | with prefix nDCG@10 / R@100 | bare chunk nDCG@10 / R@100 | delta nDCG@10 [95% CI] | wins / losses, p |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    with contextlib.ExitStack() as stack:
        datasets, _ = load(config, stack)
        for ds in datasets:
            bare = bare_chunk_branch(ds)
            alt = replace(
                ds,
                retrieved={
                    q: replace(r, branches={**r.branches, "semantic": bare[q]})
                    for q, r in ds.retrieved.items()
                },
                _keyword={},
                _memo={},
            )
            for label, branches in (("semantic", ["semantic"]), ("hybrid", None)):
                a = score_run(ds.run(trial, branches), ds.qrels, ds.ids)
                b = score_run(alt.run(trial, branches), ds.qrels, ds.ids)
                lines.append(
                    f"| {ds.name} | {label} "
                    f"| {statistics.fmean(a.ndcg):.4f} / {statistics.fmean(a.recall):.4f} "
                    f"| {statistics.fmean(b.ndcg):.4f} / {statistics.fmean(b.recall):.4f} "
                    f"| {paired_cells(a.ndcg, b.ndcg)} |"
                )
    body = (
        "Every chunk embedded twice with the bundled model: as indexed (note title, heading "
        "path, then the chunk) and as its bare text; exact cosine search over all chunks, "
        f"fused with the shipped settings ({trial.describe()}: without completion on both "
        "sides). Delta = with prefix - bare, "
        "paired per query (bootstrap 95% interval, sign test).\n\n" + "\n".join(lines)
    )
    write_section("prefix", "Embedded prefix check", body)


if __name__ == "__main__":
    main()
