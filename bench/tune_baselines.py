"""Each branch of ours against its plain counterpart, on the same queries in the same run.

Keyword against ``plain_baselines.PlainBM25`` (a default Tantivy English-stemmed BM25
over title + body, one document per note); semantic (a note scored by its best chunk)
against one vector per whole note (title + body, cut at the model's window) and against
MiniLM over plain 150-word chunks max-pooled per note; hybrid against a plain RRF (k=60)
of that BM25 and those chunks. The plain systems read the files, not our index, so our
parser and chunker cannot flatter them.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import CACHE
from plain_baselines import PlainBM25, PlainChunkVectors, PlainNote, bundled_minilm, rrf
from tune_cv import paired_cells
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


def plain_runs(
    notes: Sequence[PlainNote], ds: Dataset, encode: Callable[[list[str]], np.ndarray]
) -> dict[str, Run]:
    """Plain BM25, plain MiniLM chunks (vectors cached under bench/.cache) and their RRF."""
    bm25 = PlainBM25(notes)
    cache = CACHE / f"plain-chunks-{ds.name.replace(' ', '-')}.npz"
    chunks = PlainChunkVectors(notes, encode, cache)
    keyword = {qid: bm25.search(ds.queries[qid]) for qid in ds.ids}
    semantic = {qid: chunks.search(ds.queries[qid]) for qid in ds.ids}
    return {
        "bm25": {q: [p for p, _ in hits] for q, hits in keyword.items()},
        "chunks": {q: [p for p, _ in hits] for q, hits in semantic.items()},
        "rrf": {q: [p for p, _ in rrf(keyword[q], semantic[q])] for q in ds.ids},
    }


def baseline_rows(
    datasets: Sequence[Dataset], trial: Trial, notes: Mapping[str, Sequence[PlainNote]]
) -> str:
    names = [d.name for d in datasets]
    lines = [
        "| system | " + " | ".join(names) + " |",
        "| --- | " + " | ".join("---:" for _ in names) + " |",
    ]
    share = replace(trial, settings=replace(trial.settings, chunk_share=0.1))
    encode = bundled_minilm()
    plain = {d.name: plain_runs(notes[d.name], d, encode) for d in datasets}
    systems = {
        "keyword branch (ours)": lambda d: d.run(trial, ["keyword"]),
        "plain Tantivy BM25 (en_stem, title + body)": lambda d: plain[d.name]["bm25"],
        "semantic branch (ours, best chunk)": lambda d: d.run(trial, ["semantic"]),
        "semantic mode (ours, best chunk + best sentence)": lambda d: d.run(
            trial, ["semantic", "sentences"]
        ),
        "semantic branch, best chunk + 0.1 x rest": lambda d: d.run(share, ["semantic"]),
        "whole-note MiniLM vectors": lambda d: whole_note_vectors(d.name, notes[d.name], d),
        "plain MiniLM, 150-word chunks max-pooled": lambda d: plain[d.name]["chunks"],
        "hybrid (ours)": lambda d: d.run(trial),
        "plain RRF (k=60) of plain BM25 and plain chunks": lambda d: plain[d.name]["rrf"],
    }
    scores = {
        label: {d.name: score_run(system(d), d.qrels, d.ids) for d in datasets}
        for label, system in systems.items()
    }
    for label, by_set in scores.items():
        cells = [
            f"{statistics.fmean(by_set[n].ndcg):.4f} / {statistics.fmean(by_set[n].recall):.4f}"
            for n in names
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    pairs = (
        ("keyword branch (ours)", "plain Tantivy BM25 (en_stem, title + body)"),
        ("semantic branch (ours, best chunk)", "whole-note MiniLM vectors"),
        ("semantic branch (ours, best chunk)", "plain MiniLM, 150-word chunks max-pooled"),
        ("semantic mode (ours, best chunk + best sentence)", "whole-note MiniLM vectors"),
        (
            "semantic mode (ours, best chunk + best sentence)",
            "plain MiniLM, 150-word chunks max-pooled",
        ),
        ("hybrid (ours)", "plain RRF (k=60) of plain BM25 and plain chunks"),
    )
    lines += [
        "",
        "Ours minus its plain counterpart, nDCG@10 per query, paired:",
        "",
        "| ours | plain | dataset | mean delta [95% CI] | wins / losses, sign test p |",
        "| --- | --- | --- | --- | --- |",
    ]
    for ours, base in pairs:
        for n in names:
            cells = paired_cells(scores[ours][n].ndcg, scores[base][n].ndcg)
            lines.append(f"| {ours} | {base} | {n} | {cells} |")
    return "\n".join(lines)
