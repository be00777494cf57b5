"""The hop gift (``search.hop_weight``: a top note's link scored by its own closeness to
the query, ``search/hops.py``) under 5-fold CV, both judged vaults pooled.

Each fold chooses weight / top / margin on the other four folds (the mean over the two
vaults of their mean nDCG@10, every kind) among a grid that includes "off", and is
scored on its held-out fold; the table gives, per vault, fold and kind, the held-out
nDCG@10 with the hop gift off (``hop_weight`` 0, the ranking before it shipped) and
with the fold's choice.

``--anchor`` scores the other closeness, a link's sentence in the top note
(``search.hop_anchor``), and ``--below`` adds ``search.hop_below``; ``--local`` and
``--residual`` add ``search.hop_local`` and ``search.hop_residual`` (``--either``: the
folds choose with or without ``--residual`` too).

Run: ``nice -n 5 .venv/bin/python bench/hop_cv.py [--anchor [--below] [--local]
[--residual | --either]] [vault ...]``;
prints Markdown.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import SHARED
from judged_set import VAULTS
from tune import trial_of
from tune_cv import cross_validate, paired_cells
from tune_data import FOLDS, Trial
from tune_ranking import load
from vaultsearch.config import load_config

WEIGHTS = (0.3, 0.5, 0.7, 1.0, 1.5, 2.0)
TOPS = (1, 3)
MARGINS = (0.0, 0.6, 0.7, 0.8, 0.9)
ANCHOR_WEIGHTS = (0.5, 1.0, 1.5, 2.0, 3.0)
ANCHOR_MARGINS = (0.0, 0.25, 0.4, 0.5)
"""``--anchor``: a link judged by its sentence in the top note (``hops.anchor_gifts``);
its closeness is a share of the query's idf, so its margins are lower."""


def with_hop(
    trial: Trial, weight: float, top: int, margin: float, anchor: bool = False, below: bool = False,
    local: bool = False, residual: bool = False,
) -> Trial:  # fmt: skip
    s = replace(
        trial.settings, hop_weight=weight, hop_top=top, hop_margin=margin, hop_anchor=anchor,
        hop_below=below, hop_local=local, hop_residual=residual,
    )  # fmt: skip
    return replace(trial, settings=s)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("vaults", nargs="*", default=None)
    parser.add_argument("--anchor", action="store_true", help="the link-sentence closeness")
    parser.add_argument("--below", action="store_true", help="anchor gifts stay under the giver")
    parser.add_argument("--local", action="store_true", help="only links in a scoring chunk")
    parser.add_argument(
        "--residual", action="store_true", help="only query words the top note lacks count"
    )
    parser.add_argument(
        "--either", action="store_true", help="the grid holds both --residual and not"
    )
    args = parser.parse_args()
    names = args.vaults or [v for v in VAULTS if (SHARED / "vaults" / v).is_dir()]
    base = trial_of(load_config(None).search)
    base = with_hop(base, 0.0, base.settings.hop_top, base.settings.hop_margin)
    if args.anchor:
        grid = [base] + [
            with_hop(base, w, t, m, True, args.below, args.local, r)
            for r in ((False, True) if args.either else (args.residual,))
            for w in ANCHOR_WEIGHTS
            for t in TOPS
            for m in ANCHOR_MARGINS
        ]
    else:
        grid = [base] + [with_hop(base, w, t, m) for w in WEIGHTS for t in TOPS for m in MARGINS]
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="vs-hop-")))
        sets = [load(n, work, stack) for n in names]
        print("### Each trial on all queries (not CV; to see the surface)\n")
        print("| trial | " + " | ".join(f"{d.name} all | {d.name} multi_hop" for d in sets) + " |")
        print("| --- |" + " ---: | ---: |" * len(sets))
        for t in grid:
            cells = []
            for d in sets:
                nd = d.scores(t).ndcg
                hop = [nd[j] for j, q in enumerate(d.ids) if d.kind[q] == "multi_hop"]
                cells.append(f"{statistics.fmean(nd):.4f} | {statistics.fmean(hop):.4f}")
            print(f"| {t.describe()} | " + " | ".join(cells) + " |")
        cv = cross_validate(sets, grid)
        print(
            "\n### 5-fold CV, pooled: held-out nDCG@10 per vault, fold and kind (off -> chosen)\n"
        )
        print("| vault | fold | chosen | kind | n | off | chosen |\n| --- | --- | --- | --- | ---: | ---: | ---: |")  # fmt: skip
        for d in sets:
            before = d.scores(base).ndcg
            after = cv.held_out[d.name]
            kinds = ["all", *sorted(set(d.kind.values()))]
            for f in range(FOLDS):
                chosen = cv.chosen[f].describe().split(" cand=")[0].split(" graph=")[1]
                for kind in kinds:
                    idx = [
                        j for j, q in enumerate(d.ids)
                        if d.fold[q] == f and (kind == "all" or d.kind[q] == kind)
                    ]  # fmt: skip
                    if not idx:
                        continue
                    b = statistics.fmean(before[j] for j in idx)
                    a = statistics.fmean(after[j] for j in idx)
                    print(f"| {d.name} | {f + 1} | {chosen} | {kind} | {len(idx)} | {b:.4f} | {a:.4f} |")  # fmt: skip
            for kind in kinds:
                idx = [j for j, q in enumerate(d.ids) if kind == "all" or d.kind[q] == kind]
                a, b = [after[j] for j in idx], [before[j] for j in idx]
                print(
                    f"| {d.name} | all folds | | {kind} | {len(idx)} | {statistics.fmean(b):.4f} "
                    f"| {statistics.fmean(a):.4f} ({paired_cells(a, b)}) |"
                )


if __name__ == "__main__":
    main()
