"""Per query, why a misspelt query loses (issue 27's typo target: hybrid drop <= 0.01).

Each answered judged query gets one adjacent-letter swap in its longest word
(``tune_ranking.swapped``); the table lists every query whose hybrid nDCG@10 changes,
with what the semantic side embedded (``explain.embedded``), the keyword side's
widenings, and the nDCG@10 of each mode clean and misspelt, so a loss reads as a wrong
correction, a missing one, or a hurt keyword side.

Run: ``nice -n 5 .venv/bin/python bench/typo_queries.py [vault ...]``; prints Markdown.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judged_set import VAULTS, load_judged
from tune_ranking import swapped
from vault_quality import TOP_K, judged_vault, score
from vaultsearch.config import load_config

MODES = ("hybrid", "semantic", "keyword")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("vaults", nargs="*", default=list(VAULTS))
    parser.add_argument("--dump", type=Path, help="write every query's nDCG@10 here (JSON)")
    args = parser.parse_args()
    dump: dict[str, dict[str, tuple[float, float]]] = {}
    for name in args.vaults:
        queries = [q for q in load_judged(name) if q.answered]
        rows, drop = [], {m: [] for m in MODES}
        means: dict[str, tuple[list[float], list[float]]] = {m: ([], []) for m in MODES}
        with (
            tempfile.TemporaryDirectory(prefix="vs-typos-") as tmp,
            judged_vault(name, Path(tmp), load_config(None)) as vault,
        ):
            for q in queries:
                bad = swapped(q.query)
                nd, info = {}, ""
                for m in MODES:
                    a = vault.search(q.query, top_k=TOP_K, mode=m)
                    b = vault.search(bad, top_k=TOP_K, mode=m, explain=(m == "hybrid"))
                    nd[m] = (
                        score(q, m, [(h.path, h.score) for h in a]).ndcg,
                        score(q, m, [(h.path, h.score) for h in b]).ndcg,
                    )
                    drop[m].append(nd[m][1] - nd[m][0])
                    means[m][0].append(nd[m][0])
                    means[m][1].append(nd[m][1])
                    if m == "hybrid" and b and b[0].explain:
                        e = b[0].explain
                        info = f"embedded `{e.embedded or '(as typed)'}`; widened {', '.join(e.expansions) or '-'}"  # fmt: skip
                dump[q.id] = nd["hybrid"]
                if abs(nd["hybrid"][1] - nd["hybrid"][0]) > 1e-9:
                    cells = " | ".join(f"{nd[m][0]:.2f} → {nd[m][1]:.2f}" for m in MODES)
                    rows.append(f"| {q.id} | {bad} | {info} | {cells} |")
        print(f"\n### {name}: {len(queries)} answered queries; mean change " + ", ".join(
            f"{m} {statistics.fmean(means[m][0]):.4f} → {statistics.fmean(means[m][1]):.4f} "
            f"({statistics.fmean(drop[m]):+.4f})" for m in MODES) + "\n")  # fmt: skip
        print("| id | misspelt query | correction | hybrid | semantic | keyword |")
        print("|---|---|---|---|---|---|")
        print("\n".join(rows))
    if args.dump:
        args.dump.write_text(json.dumps(dump), encoding="utf-8")


if __name__ == "__main__":
    main()
