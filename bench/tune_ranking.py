"""Issue 27's ranking changes measured on the judged vault queries, each against the
ranking without it, in one run on the same cached retrievals (``tune_data``).

- top_k: on how many queries the top 10 of ``top_k=10`` and ``top_k=50`` differ when the
  depth grows with ``top_k`` (as before: ``max(candidates, 4 x top_k)`` chunks) and when
  it is fixed (now; a longer page is extended at its end);
- boilerplate: how many chunks are boilerplate, and the share of top-10 slots whose
  best passage is one, with and without the weighing down;
- typos: nDCG@10 of every answered query with one adjacent-letter swap in its longest
  word, against the query as written, per mode, with and without the correction before
  embedding (``search.typos``);
- boilerplate on a vault that has it (``--footer``): the judged vault with the same
  footer section appended to every note, nDCG@10 and the top-10 slots whose shown
  passage is the footer, with the footer counted in full and weighed down;
- multi-hop: nDCG@10 per kind with and without a larger gift from the best note to its
  links (``graph_lead``), and a 5-fold CV of the graph share alone against share and
  lead together (per fold, held out).

Run: ``nice -n 5 .venv/bin/python bench/tune_ranking.py [vault ...]`` (default: the
judged vaults whose shared copy is here); prints Markdown, writes nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import CACHE, SHARED
from judged_set import VAULTS, fold_of, load_judged
from tune import trial_of
from tune_cv import cross_validate, paired_cells
from tune_data import FOLDS, Dataset, Trial
from vault_quality import judged_vault, run_queries
from vaultsearch import Vault
from vaultsearch.app.evaluation import ndcg_at_k
from vaultsearch.config import load_config
from vaultsearch.search import boilerplate, orchestrator

SHARES = (0.0, 0.05, 0.1, 0.2)
LEADS = (0.0, 0.2, 0.3, 0.5, 0.7)
SHIPPED = 0.1
"""``search.graph_share``."""


def load(name: str, work: Path, stack: contextlib.ExitStack) -> Dataset:
    judged = [q for q in load_judged(name) if q.answered]
    vault = stack.enter_context(judged_vault(name, work, load_config(None)))
    return Dataset.from_vault(
        name, vault, {q.id: q.query for q in judged}, {q.id: q.judgments for q in judged}, 10,
        fold={q.id: fold_of(q.id, FOLDS) for q in judged}, kind={q.id: q.kind for q in judged},
    )  # fmt: skip


def top_k_table(ds: Dataset, trial: Trial) -> str:
    grown = ds.run(replace(trial, candidates=max(trial.candidates, 4 * 50)))
    fixed = ds.run(trial)
    differ = sum(1 for q in ds.ids if set(grown[q][:10]) != set(fixed[q][:10]))
    return (
        f"| {ds.name} | {len(ds.ids)} | {differ} | 0 (by construction; "
        "tests/test_ranking_depth.py checks it through Vault.search) |"
    )


def boilerplate_row(ds: Dataset, trial: Trial) -> str:
    snap = ds.orchestrator.snapshot()
    found = snap.boilerplate
    ranked = ds.run(trial)
    doc_paths = {v: k for k, v in ds.doc_of.items()}
    slots = [(q, doc_paths.get(d)) for q in ds.ids for d in ranked[q][:10]]
    notes_with = {snap.note_of_chunk[c] for c in found}
    share = sum(1 for _, p in slots if p is not None and snap.note_by_path.get(p) in notes_with)
    return (
        f"| {ds.name} | {len(found)} | {len(notes_with)} of {len(snap.notes)} | "
        f"{share} of {len(slots)} (notes holding one) |"
    )


def swapped(query: str) -> str:
    """The query with two neighbouring letters of its longest word swapped, from the
    middle on (the first pair that differs)."""
    words = query.split()
    i = max(range(len(words)), key=lambda j: (len(words[j].strip(".,?!:;'\"()")), -j))
    w = words[i]
    for k in range(max(len(w) // 2 - 1, 0), len(w) - 1):
        if w[k] != w[k + 1] and w[k].isalpha() and w[k + 1].isalpha():
            words[i] = w[:k] + w[k + 1] + w[k] + w[k + 2 :]
            break
    return " ".join(words)


def typo_rows(name: str, work: Path) -> list[str]:
    queries = [q for q in load_judged(name) if q.answered]
    misspelt = [replace(q, query=swapped(q.query)) for q in queries]
    rows = []
    with judged_vault(name, work / f"typos-{name}", load_config(None)) as vault:
        for mode in ("hybrid", "semantic", "keyword"):
            clean, fixed = _ndcg(vault, queries, mode), _ndcg(vault, misspelt, mode)
            real = orchestrator._typo_fixes
            orchestrator._typo_fixes = lambda *_: {}  # type: ignore[assignment]
            try:
                clean_raw, raw = _ndcg(vault, queries, mode), _ndcg(vault, misspelt, mode)
            finally:
                orchestrator._typo_fixes = real  # type: ignore[assignment]
            m = statistics.fmean
            rows.append(
                f"| {name} | {mode} | {len(queries)} | {m(clean_raw):.4f} / {m(clean):.4f} | "
                f"{m(raw):.4f} ({m(raw) - m(clean_raw):+.4f}) | "
                f"{m(fixed):.4f} ({m(fixed) - m(clean):+.4f}) | {paired_cells(fixed, raw)} |"
            )
    return rows


def _ndcg(vault: object, queries: list, mode: str) -> list[float]:  # type: ignore[type-arg]
    return [r.ndcg for r in run_queries(vault, queries, mode)]  # type: ignore[arg-type]


FOOTER_HEADING = "About this vault"
FOOTER = (
    f"\n\n## {FOOTER_HEADING}\n\nThese notes are my personal knowledge base, synced between "
    "my phone and my computer and published under CC0.\n"
)


def footer_vault(name: str) -> Vault:
    """The judged vault with ``FOOTER`` appended to every note, kept in bench/.cache (the
    first build embeds only the footer chunks: the rest come from the judged catalog)."""
    root = CACHE / f"footer-{name}"
    vault_dir, index_dir = root / "vault", root / "index"
    if not vault_dir.is_dir():
        shutil.copytree(SHARED / "vaults" / name, vault_dir)
        for path in vault_dir.rglob("*.md"):
            if not any(p.startswith(".") for p in path.relative_to(vault_dir).parts):
                text = path.read_text(encoding="utf-8", errors="replace")
                path.write_text(text.rstrip("\n") + FOOTER, encoding="utf-8")
    if not index_dir.is_dir():
        index_dir.mkdir(parents=True)
        shutil.copy2(CACHE / f"judged-{name}" / "catalog.sqlite", index_dir / "catalog.sqlite")
    vault = Vault.open(vault_dir, index_dir=index_dir)
    vault.index()
    return vault


def footer_rows(name: str) -> list[str]:
    queries = [q for q in load_judged(name) if q.answered]
    vault = footer_vault(name)
    rows = []
    try:
        found = vault.orchestrator.snapshot().boilerplate
        for label, weight in (("counted in full", 1.0), ("weighed down", boilerplate.WEIGHT)):
            real, boilerplate.WEIGHT = boilerplate.WEIGHT, weight
            try:
                ndcg, slots, footer = [], 0, 0
                for q in queries:
                    hits = vault.search(q.query, top_k=10)
                    paths = [h.path for h in hits]
                    ndcg.append(ndcg_at_k(paths, q.judgments, 10))
                    slots += len(hits)
                    footer += sum(1 for h in hits if FOOTER_HEADING in h.heading_path)
            finally:
                boilerplate.WEIGHT = real
            rows.append(
                f"| {name} + footer | {len(found)} | {label} | {len(queries)} | "
                f"{statistics.fmean(ndcg):.4f} | {footer} of {slots} |"
            )
    finally:
        vault.close()
    return rows


def with_lead(trial: Trial, share: float, lead: float) -> Trial:
    return replace(trial, settings=replace(trial.settings, graph_share=share, graph_lead=lead))


def kind_rows(ds: Dataset, trial: Trial, lead: float) -> list[str]:
    before, on = ds.scores(trial).ndcg, ds.scores(with_lead(trial, SHIPPED, lead)).ndcg
    kinds = sorted(set(ds.kind.values()))
    rows = []
    for kind in ["all", *kinds]:
        idx = [j for j, q in enumerate(ds.ids) if kind == "all" or ds.kind[q] == kind]
        a, b = [on[j] for j in idx], [before[j] for j in idx]
        rows.append(
            f"| {ds.name} | {lead:g} | {kind} | {len(idx)} | {statistics.fmean(b):.4f} | "
            f"{statistics.fmean(a):.4f} | {paired_cells(a, b)} |"
        )
    return rows


def cv_rows(ds: Dataset, trial: Trial) -> list[str]:
    rows = []
    for label, leads in (("share alone", (0.0,)), ("share and lead", LEADS)):
        trials = [with_lead(trial, g, lead) for g in SHARES for lead in leads]
        cv = cross_validate([ds], trials)
        hop = [j for j, q in enumerate(ds.ids) if ds.kind[q] == "multi_hop"]
        for f, t in zip(cv.folds, cv.chosen, strict=True):
            test = [j for j, q in enumerate(ds.ids) if ds.fold[q] == f.fold - 1]
            hop_f = [cv.held_out[ds.name][j] for j in test if j in hop]
            hop_cell = f"{statistics.fmean(hop_f):.4f} ({len(hop_f)})" if hop_f else "– (0)"
            rows.append(
                f"| {ds.name} | {label} | {f.fold} | {t.settings.graph_share:g} / "
                f"{t.settings.graph_lead:g} | {f.ndcg[ds.name]:.4f} | {hop_cell} |"
            )
        mean_hop = statistics.fmean(cv.held_out[ds.name][j] for j in hop)
        rows.append(
            f"| {ds.name} | {label} | all | | {statistics.fmean(cv.held_out[ds.name]):.4f} "
            f"| {mean_hop:.4f} ({len(hop)}) |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("vaults", nargs="*", default=None)
    parser.add_argument("--typos", action="store_true", help="only the typo table")
    parser.add_argument("--footer", action="store_true", help="only the footer table")
    args = parser.parse_args()
    names = args.vaults or [v for v in VAULTS if (SHARED / "vaults" / v).is_dir()]
    trial = trial_of(load_config(None).search)
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="vs-rank-")))
        if args.footer:
            print("### A footer in every note\n\n| vault | boilerplate chunks | footer | "
                  "queries | nDCG@10 | top-10 slots showing the footer |\n"
                  "| --- | ---: | --- | ---: | ---: | --- |")  # fmt: skip
            for n in names:
                print("\n".join(footer_rows(n)))
            return
        if args.typos:
            print("### One adjacent-letter swap per query: nDCG@10\n\n"
                  "| vault | mode | queries | as written, not corrected / corrected "
                  "| swapped, embedded as typed "
                  "| swapped, corrected | corrected - as typed [95% CI] | wins / losses, p |\n"
                  "| --- | --- | ---: | ---: | ---: | ---: | --- | --- |")  # fmt: skip
            for n in names:
                print("\n".join(typo_rows(n, work)))
            return
        sets = [load(n, work, stack) for n in names]
        print("### top_k\n\n| vault | queries | top 10 differs, depth grown with top_k "
              "(before) | fixed depth (now) |\n| --- | ---: | ---: | --- |")  # fmt: skip
        for d in sets:
            print(top_k_table(d, trial))
        print(f"\n### Boilerplate (text in > {boilerplate.SHARE:.0%} of notes)\n\n"
              "| vault | boilerplate chunks | notes | top-10 slots |\n| --- | ---: | --- | --- |")  # fmt: skip
        for d in sets:
            print(boilerplate_row(d, trial))
        print("\n### Lead share (the best note's gift to its links): nDCG@10 per kind\n\n"
              "| vault | lead | kind | queries | share 0.1 alone | with lead | delta [95% CI] "
              "| wins / losses, p |\n| --- | ---: | --- | ---: | ---: | ---: | --- | --- |")  # fmt: skip
        for d in sets:
            for lead in LEADS[1:]:
                print("\n".join(kind_rows(d, trial, lead)))
        print("\n### Graph share / lead, 5-fold CV per vault (held-out fold nDCG@10)\n\n"
              "| vault | grid | fold | chosen share / lead | all | multi_hop (n) |\n"
              "| --- | --- | --- | --- | ---: | ---: |")  # fmt: skip
        for d in sets:
            print("\n".join(cv_rows(d, trial)))


if __name__ == "__main__":
    main()
