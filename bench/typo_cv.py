"""``typos.SURE`` and ``typos.CHANNEL`` chosen by 5-fold cross-validation over both
judged vaults (issue 27).

A one-edit fix replaces the typed word in keyword search only when its odds are ``SURE``
times the next candidate's; ``CHANNEL`` weighs candidates by the chance of their kind of
slip as well as by their chunk counts. For each setting in the grid, every
answered judged query is searched clean and with one adjacent-letter swap in its longest
word (``tune_ranking.swapped``), hybrid nDCG@10. Per fold, the setting with the best mean
of clean and misspelt nDCG@10 on the other four folds (both vaults pooled) is scored on
the held-out fold: its clean and misspelt nDCG@10 and the drop, per vault.

Run: ``nice -n 5 .venv/bin/python bench/typo_cv.py``; prints Markdown.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judged_set import VAULTS, fold_of, load_judged
from tune_ranking import swapped
from vault_quality import TOP_K, judged_vault, score
from vaultsearch.config import load_config
from vaultsearch.search import typos

GRID = (1.0, 3.0, 10.0, float("inf"))
SETTINGS = [(c, r) for c in (False, True) for r in GRID]
Setting = tuple[bool, float]
K = 5


def main() -> None:
    # (vault, query id) -> (channel, ratio) -> (clean, misspelt)
    rows: dict[tuple[str, str], dict[Setting, tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="vs-typo-cv-") as tmp:
        for name in VAULTS:
            queries = [q for q in load_judged(name) if q.answered]
            with judged_vault(name, Path(tmp), load_config(None)) as vault:
                for setting in SETTINGS:
                    typos.CHANNEL, typos.SURE = setting
                    for q in queries:
                        nd = []
                        for text in (q.query, swapped(q.query)):
                            hits = vault.search(text, top_k=TOP_K, mode="hybrid")
                            nd.append(score(q, "hybrid", [(h.path, h.score) for h in hits]).ndcg)
                        rows.setdefault((name, q.id), {})[setting] = (nd[0], nd[1])
    print("| fold | chosen | " + " | ".join(f"{v} clean → misspelt (drop)" for v in VAULTS) + " |")
    print("|---|---|" + "---|" * len(VAULTS))
    held: dict[str, list[tuple[float, float]]] = {v: [] for v in VAULTS}
    for fold in range(K):
        train = [r for (_, qid), r in rows.items() if fold_of(qid, K) != fold]

        def objective(s: Setting, train: list[dict[Setting, tuple[float, float]]] = train) -> float:
            return statistics.fmean(sum(r[s]) / 2 for r in train)

        best = max(SETTINGS, key=lambda s: (objective(s), -SETTINGS.index(s)))
        cells = []
        for v in VAULTS:
            test = [r[best] for (n, qid), r in rows.items() if n == v and fold_of(qid, K) == fold]
            held[v] += test
            clean, bad = (statistics.fmean(x[i] for x in test) for i in (0, 1))
            cells.append(f"{clean:.4f} → {bad:.4f} ({bad - clean:+.4f}, n={len(test)})")
        print(f"| {fold} | channel={best[0]}, SURE={best[1]:g} | " + " | ".join(cells) + " |")
    cells = []
    for v in VAULTS:
        clean, bad = (statistics.fmean(x[i] for x in held[v]) for i in (0, 1))
        cells.append(f"{clean:.4f} → {bad:.4f} ({bad - clean:+.4f})")
    print("| all held-out | | " + " | ".join(cells) + " |")
    print("\nEvery setting on all queries (clean → misspelt, drop):\n")
    for g in SETTINGS:
        cells = []
        for v in VAULTS:
            mine = [r[g] for (n, _), r in rows.items() if n == v]
            clean, bad = (statistics.fmean(x[i] for x in mine) for i in (0, 1))
            cells.append(f"{v} {clean:.4f} → {bad:.4f} ({bad - clean:+.4f})")
        print(f"- channel={g[0]}, SURE={g[1]:g}: " + "; ".join(cells))


if __name__ == "__main__":
    main()
