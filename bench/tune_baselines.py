"""Each branch of ours against its plain counterpart, on the same queries in the same run.

Keyword against ``plain_baselines.PlainBM25`` (a default Tantivy English-stemmed BM25
over title + body, one document per note); semantic (a note scored by its best chunk)
against one vector per whole note (title + body, cut at the model's window). Both plain
systems read the files, not our index, so our parser and chunker cannot flatter them.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plain_baselines import PlainBM25, PlainNote
from tune_data import Dataset, Run, Trial, cached_unit_vectors, score_run


def whole_note_vectors(name: str, notes: Sequence[PlainNote], ds: Dataset) -> Run:
    """Cosine top 100 over one vector per note; vectors cached by the notes' text."""
    texts = [f"{n.title}\n{n.body}" for n in notes]
    embedder = ds.orchestrator.embedder
    vectors = cached_unit_vectors(f"whole-note-{name}", texts, embedder)
    run: Run = {}
    for qid in ds.ids:
        q = embedder.embed_query(ds.queries[qid])
        top = np.argsort(-(vectors @ (q / np.linalg.norm(q))))[:100]
        run[qid] = [notes[i].path for i in top]
    return run


def plain_bm25(notes: Sequence[PlainNote], ds: Dataset) -> Run:
    bm25 = PlainBM25(notes)
    return {qid: [p for p, _ in bm25.search(ds.queries[qid])] for qid in ds.ids}


def baseline_rows(
    datasets: Sequence[Dataset], trial: Trial, notes: Mapping[str, Sequence[PlainNote]]
) -> str:
    names = [d.name for d in datasets]
    lines = [
        "| system | " + " | ".join(names) + " |",
        "| --- | " + " | ".join("---:" for _ in names) + " |",
    ]
    share = replace(trial, settings=replace(trial.settings, chunk_share=0.1))
    systems = {
        "keyword branch (ours)": lambda d: d.run(trial, ["keyword"]),
        "plain Tantivy BM25 (en_stem, title + body)": lambda d: plain_bm25(notes[d.name], d),
        "semantic branch (ours, best chunk)": lambda d: d.run(trial, ["semantic"]),
        "semantic branch, best chunk + 0.1 x rest": lambda d: d.run(share, ["semantic"]),
        "whole-note MiniLM vectors": lambda d: whole_note_vectors(d.name, notes[d.name], d),
    }
    for label, system in systems.items():
        cells = []
        for d in datasets:
            s = score_run(system(d), d.qrels, d.ids)
            cells.append(f"{statistics.fmean(s.ndcg):.4f} / {statistics.fmean(s.recall):.4f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
