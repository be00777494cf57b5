"""Term proximity in the keyword branch (issue 27), cross-validated through the real pipeline.

A sequential-dependence-style boost: each adjacent pair of the query's keyword terms (the
words BM25 scores, function words dropped; both stems must be index terms) becomes a
Tantivy phrase on the ``text`` field, exact (slop 0) and/or a window (Tantivy's slop also
matches the pair reversed once the slop is 2 or more), added as SHOULD clauses at a boost
relative to the text field's 1.0. Nothing else changes: each setting re-runs every query's
``QueryOrchestrator.retrieve`` (so a chunk the new keyword list brings in is completed and
re-scored as a search would), then the shipped ``rank`` fuses it.

The clauses are added by wrapping ``store.keywords._top`` (the one place every keyword
search hands over its final query), so ``src/`` is unchanged and the cached retrievals of
the shipped code stay valid; the wrapper with the weight at 0 must reproduce them exactly
(checked at start). Query vectors are memoised per text (the same vector every setting).

Prints Markdown: joint 5-fold CV (SciFact train + both judged vaults, one setting for
all) and SciFact-alone CV, per-fold held-out against shipped, paired CI; the keyword
branch alone; per query kind on the vaults; the keyword search's CPU per query on SciFact
with and without, interleaved.

Run: ``nice -n 15 .venv/bin/python bench/proximity_cv.py [--grid main|extra]`` (writes only
bench/.cache/tune).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

import tantivy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tune import SCIFACT, kind_table, load, trial_of
from tune_cv import cross_validate, paired_bootstrap
from tune_data import Dataset, K, Scores, Trial, score_run
from tune_ideas import family_table, fixed_folds
from vaultsearch.config import Config
from vaultsearch.search.query import parse_query
from vaultsearch.store import keywords as kwmod
from vaultsearch.store.derived import Query


class Setting(NamedTuple):
    weight: float
    """Boost of each pair clause (the text field's own boost is 1)."""
    slops: tuple[int, ...] = ()
    """One clause per slop for each pair."""
    fields: tuple[str, ...] = ("text",)
    gapped: bool = False
    """Pairs keep the query's own distance: the function words between two keyword terms
    stay as gaps (``risk of cancer`` is ``risk _ cancer``) instead of being closed up."""

    def __repr__(self) -> str:
        if self.weight == 0:
            return "shipped (no proximity)"
        out = f"pairs w={self.weight:g} slop={'+'.join(map(str, self.slops))}"
        out += "" if self.fields == ("text",) else " on " + "+".join(self.fields)
        return out + (" gapped" if self.gapped else "")


OFF = Setting(0.0)
WEIGHTS = (0.1, 0.2, 0.3, 0.5)
SLOPS: tuple[tuple[int, ...], ...] = ((0,), (2,), (8,), (0, 8))
"""Exact bigram; a short window; a wide window; exact bigram plus the wide window."""
GRIDS = {
    "main": [OFF] + [Setting(w, sl) for sl in SLOPS for w in WEIGHTS],
    "extra": [OFF]
    + [Setting(0.05, sl) for sl in SLOPS]
    + [Setting(w, (0,), ("text", "headings")) for w in (0.1, 0.2, 0.3)]
    + [Setting(w, sl, gapped=True) for sl in ((0,), (2,)) for w in (0.1, 0.2, 0.3)],
}
"""``main``: the brief's grid; ``extra``: a smaller weight, the headings field too (the
vaults' section titles; SciFact has none), and pairs at the query's own distance."""


@dataclass
class _State:
    setting: Setting = OFF
    current: tuple[kwmod.KeywordIndex, Sequence[str]] | None = None
    text: str = ""
    """The query as typed (for ``gapped`` pairs)."""


STATE = _State()
_search, _top = kwmod.KeywordIndex.search, kwmod._top


def pairs_of(
    index: kwmod.KeywordIndex, searcher: tantivy.Searcher, terms: Sequence[str], text: str = ""
) -> list[tuple[str, str, int]]:
    """Adjacent stem pairs of the query's terms with the second one's offset (1, or with
    ``text`` the distance between them in it), each stem an index term, each pair once."""
    stems = [t for w in terms for t in index.analyzer.analyze(w.lower())]
    at = list(range(len(stems)))
    if text:  # each keyword stem's place among all the query's tokens, in order
        typed, at, i = index.analyzer.analyze(text.lower()), [], 0
        for s in stems:
            while i < len(typed) and typed[i] != s:
                i += 1
            at.append(i if i < len(typed) else (at[-1] + 1 if at else 0))
            i += 1
    known = {s for s in set(stems) if int(searcher.doc_freq("text", s)) > 0}
    out: list[tuple[str, str, int]] = []
    for (a, i), (b, j) in itertools.pairwise(zip(stems, at, strict=True)):
        pair = (a, b, max(j - i, 1))
        if a != b and a in known and b in known and pair not in out:
            out.append(pair)
    return out


def _search_wrapped(self, terms, *args, **kwargs):
    STATE.current = (self, terms)
    try:
        return _search(self, terms, *args, **kwargs)
    finally:
        STATE.current = None


def _top_wrapped(searcher, query, k, tie_order=None):
    s = STATE.setting
    if s.weight > 0 and STATE.current is not None:
        index, terms = STATE.current
        pairs = pairs_of(index, searcher, terms, STATE.text if s.gapped else "")
        extra = [
            tantivy.Query.boost_query(
                tantivy.Query.phrase_query(index.schema, f, [(0, a), (gap, b)], slop), s.weight
            )
            for a, b, gap in pairs
            for slop in s.slops
            for f in s.fields
        ]
        if extra:
            query = tantivy.Query.boolean_query(
                [(tantivy.Occur.Must, query)] + [(tantivy.Occur.Should, q) for q in extra]
            )
    return _top(searcher, query, k, tie_order)


kwmod.KeywordIndex.search = _search_wrapped  # type: ignore[method-assign]
kwmod._top = _top_wrapped


def describe(s: Setting) -> str:
    return repr(s)


def memo_embedder(ds: Dataset) -> None:
    emb = ds.orchestrator.embedder
    if getattr(emb, "_proxkw_memo", None) is not None:
        return
    memo: dict[str, object] = {}
    real = emb.embed_query

    def embed_query(text: str):
        if text not in memo:
            memo[text] = real(text)
        return memo[text]

    emb.embed_query = embed_query
    emb._proxkw_memo = memo


def variant(ds: Dataset, s: Setting) -> Dataset:
    """``ds`` with every query retrieved again under proximity setting ``s``."""
    memo_embedder(ds)
    orch = ds.orchestrator
    snap = orch.snapshot()
    new = {}
    try:
        STATE.setting = s
        for q in ds.ids:
            STATE.text = ds.queries[q]
            new[q] = orch.retrieve(snap, parse_query(ds.queries[q]), "hybrid", K)
    finally:
        STATE.setting, STATE.text = OFF, ""
    return replace(ds, retrieved=new, _keyword={}, _memo={}, _print="", _vectors={})


@dataclass
class Family:
    """One dataset seen by ``cross_validate``: a trial's variant names the setting."""

    name: str
    ids: list[str]
    fold: dict[str, int]
    by_setting: dict[Setting, Dataset]
    shipped: Trial

    def scores(self, trial: Trial) -> Scores:
        s = trial.variant[1] if trial.variant else OFF
        return self.by_setting[s].scores(self.shipped)


def trial_for(shipped: Trial, s: Setting) -> Trial:
    return shipped if s.weight == 0 else replace(shipped, variant=("prox", s))


def keyword_alone(ds: Dataset, shipped: Trial) -> Scores:
    return score_run(ds.run(shipped, ["keyword"]), ds.qrels, ds.ids)


def cpu_cost(ds: Dataset, s: Setting, rounds: int = 3) -> tuple[float, float, int]:
    """CPU ms per keyword search on ``ds``, shipped and with ``s``, alternated query by
    query; and how many queries had at least one pair."""
    snap = ds.orchestrator.snapshot()
    reader = snap.reader("keywords")
    queries = []
    for q in ds.ids:
        p, r = parse_query(ds.queries[q]), ds.retrieved[q]
        queries.append(
            Query(
                terms=tuple(p.keyword_terms),
                phrases=tuple(tuple(x) for x in p.phrases),
                excluded=tuple(p.excluded),
                expansions=r.expansions,
                tie_order=snap.tie_order,
            )
        )
    searcher = reader._index.index.searcher()
    with_pairs = sum(bool(pairs_of(reader._index, searcher, q.terms)) for q in queries)
    spent = {False: 0.0, True: 0.0}
    for _ in range(rounds):
        for q in queries:
            for on in (False, True):
                STATE.setting = s if on else OFF
                t = time.process_time()
                reader.search(q, 100, None)
                spent[on] += time.process_time() - t
    STATE.setting = OFF
    n = rounds * len(queries)
    return 1000 * spent[False] / n, 1000 * spent[True] / n, with_pairs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--grid", choices=sorted(GRIDS), default="main")
    args = parser.parse_args()
    config = Config()
    settings = GRIDS[args.grid]
    with contextlib.ExitStack() as stack:
        datasets, _ = load(config, stack)
        shipped = trial_of(config.search)
        out = [f"Shipped: {shipped.describe()}.\n"]
        fams = []
        for ds in datasets:
            t0 = time.time()
            by = {}
            for s in settings:
                by[s] = variant(ds, s)
                if s.weight == 0:  # the wrapper at weight 0 is the shipped code
                    same = all(
                        by[s].retrieved[q].branches == ds.retrieved[q].branches for q in ds.ids
                    )
                    base, mine = ds.scores(shipped).ndcg, by[s].scores(shipped).ndcg
                    print(
                        f"<!-- {ds.name}: weight-0 retrieval identical to cached: {same}; "
                        f"nDCG@10 {statistics.fmean(base):.4f} / {statistics.fmean(mine):.4f} -->",
                        flush=True,
                    )
                    by[s] = ds if same else by[s]
                print(
                    f"<!-- {ds.name} {describe(s)}: {statistics.fmean(by[s].scores(shipped).ndcg):.4f}"
                    f" ({time.time() - t0:.0f} s) -->",
                    flush=True,
                )
            fams.append(Family(ds.name, ds.ids, ds.fold, by, shipped))
        grid = [trial_for(shipped, s) for s in settings]
        names = [f.name for f in fams]
        sci = [f for f in fams if f.name == SCIFACT]
        for label, sets in (("joint CV, one setting for all three sets", fams), ("SciFact-only CV", sci)):  # fmt: skip
            cv = cross_validate(sets, grid)
            out.append(
                f"**Term-pair proximity, {label}**\n\n"
                + family_table("Term-pair proximity", cv, sets, shipped, grid)
                + "\n"
            )
            if len(sets) > 1:
                for f in fams:
                    ds = f.by_setting[OFF]
                    if not ds.kind:
                        continue
                    held = cv.held_out[f.name]
                    mrr = cv.held_out_mrr[f.name]
                    base = f.scores(shipped)
                    out.append(
                        f"Per query kind, {f.name} (nDCG@10/MRR@10):\n\n"
                        + kind_table(
                            ds,
                            {
                                "shipped": (base.ndcg, base.mrr),
                                "CV-chosen proximity (held-out)": (held, mrr),
                            },
                        )
                        + "\n"
                    )
        rows = [
            "| setting | " + " | ".join(names) + " |",
            "| --- | " + " | ".join("---:" for _ in names) + " |",
        ]
        alone = {
            f.name: {s: keyword_alone(f.by_setting[s], shipped) for s in settings} for f in fams
        }
        for s in settings:
            cells = []
            for f in fams:
                new, old = alone[f.name][s].ndcg, alone[f.name][OFF].ndcg
                cell = f"{statistics.fmean(new):.4f}"
                if s.weight:
                    mean, low, high = paired_bootstrap(new, old)
                    cell += f" ({mean:+.4f} [{low:+.4f}, {high:+.4f}])"
                cells.append(cell)
            rows.append(f"| {describe(s)} | " + " | ".join(cells) + " |")
        out.append(
            "**The keyword branch alone** (nDCG@10 on the whole set; delta to shipped [95% CI]):\n\n"
            + "\n".join(rows)
            + "\n"
        )
        folds_rows = ["| setting | " + " | ".join(f"{n} per fold" for n in names) + " |",
                      "| --- | " + " | ".join("---" for _ in names) + " |"]  # fmt: skip
        for s in settings:
            cells = [
                " · ".join(f"{x:.4f}" for x in fixed_folds(f.by_setting[s], f.scores(trial_for(shipped, s)).ndcg))
                for f in fams
            ]  # fmt: skip
            folds_rows.append(f"| {describe(s)} | " + " | ".join(cells) + " |")
        out.append(
            "**Hybrid, every setting per fold** (not chosen; for reading):\n\n"
            + "\n".join(folds_rows)
            + "\n"
        )
        sciset = datasets[0]
        cost = [
            "| setting | keyword search CPU ms/query, shipped / with | ratio |",
            "| --- | ---: | ---: |",
        ]
        for s in [x for x in settings if x.weight == 0.3 or (x.weight == 0.05 and x.slops == (0,))]:
            a, b, n = cpu_cost(sciset, s)
            cost.append(f"| {describe(s)} | {a:.2f} / {b:.2f} | {b / a:.2f} |")
        out.append(
            f"**Keyword search cost on SciFact** ({len(sciset.ids)} claims, {n} with at least one "
            "pair; 3 rounds, shipped and proximity alternated query by query, CPU time):\n\n"
            + "\n".join(cost)
        )
    print("\n\n".join(out))


if __name__ == "__main__":
    main()
