"""The reference gift's weight and reach by 5-fold cross-validation on the 40 code queries.

Builds the index of ``mixed_code.py`` (``docs/`` as the vault, ``src/`` as a git source),
retrieves each query of both sets once, then ranks every retrieval with each
(``search.code_ref_top``, ``search.code_ref_weight``) of the grid: fusion is pure over the
retrieved branches (``QueryOrchestrator.rank``), so only the ranking is repeated. For
each fold of ``judged_set.fold_of`` the setting with the most top-3 hits on the other
four folds (then the most first places, then the smaller weight and reach: off wins a
tie) is scored on the held-out fold.

Run: ``nice -n 5 .venv/bin/python bench/code_ref_cv.py``; prints Markdown, writes nothing.
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from code_search import qualified
from judged_set import fold_of
from mixed_code import DEPTH, FOLDS, SETS, build, load
from vaultsearch.search.query import parse_query
from vaultsearch.search.ranking import FusionSettings

TOPS = (3, 5, 10)
WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.5, 1.0)
Score = tuple[int, int, int]


def main() -> None:
    queries = [q for path in SETS.values() for q in load(path)]
    grid = [(t, w) for t in TOPS for w in WEIGHTS]
    with tempfile.TemporaryDirectory(prefix="vaultsearch-refcv-") as tmp:
        vault = build(Path(tmp))
        try:
            orch = vault.orchestrator
            snap = orch.snapshot()
            base = FusionSettings.from_config(orch.config.search, "hybrid")
            ranks: dict[tuple[int, float], dict[str, int]] = {g: {} for g in grid}
            for q in queries:
                parsed = parse_query(q["query"])
                got = orch.retrieve(snap, parsed, "hybrid", orch.config.search.candidates)
                for t, w in grid:
                    settings = replace(base, ref_top=t, ref_weight=w)
                    ranked = orch.rank(snap, got, "hybrid", None, settings)[:DEPTH]
                    names = [qualified(h) for h in orch._hits(snap, parsed, got, ranked, False)]
                    hit = q["expected"]
                    ranks[(t, w)][q["query"]] = names.index(hit) + 1 if hit in names else 0
        finally:
            vault.close()
    fold = {q["query"]: fold_of(q["query"], FOLDS) for q in queries}

    def score(g: tuple[int, float], keep: int | None, held: bool) -> Score:
        r = [k for q, k in ranks[g].items() if keep is None or (fold[q] == keep) == held]
        return (sum(0 < k <= 3 for k in r), sum(k == 1 for k in r), sum(0 < k <= DEPTH for k in r))

    off = (TOPS[0], 0.0)
    print("| fold | queries | chosen (top, weight) | off: top 3 / 1 / 10 | chosen, held out |")
    print("|---|---|---|---|---|")
    for f in range(FOLDS):
        best = max(grid, key=lambda g: (*score(g, f, False), -g[1], -g[0]))
        n = sum(1 for v in fold.values() if v == f)
        a, b = score(off, f, True), score(best, f, True)
        print(f"| {f + 1} | {n} | {best} | {a[0]} / {a[1]} / {a[2]} | {b[0]} / {b[1]} / {b[2]} |")
    print("\nAll 40 per setting (top 3 / 1 / 10):\n")
    for g in grid:
        s = score(g, None, True)
        print(f"- {g}: {s[0]} / {s[1]} / {s[2]}")


if __name__ == "__main__":
    main()
