"""Docs-seeking questions in the mixed index of ``mixed_code.py``: does a ranking change
that lifts code (the reference gift, ``search.code_ref_weight``) push the docs page a
user asked for out of the first three?

Same index as ``mixed_code.py`` (``docs/`` without ``benchmarks.md`` as the vault,
``src/`` as a git source). Each question of ``mixed_docs_queries.jsonl`` names the page
that answers it; its rank is that page's among the hits, with the shipped settings and
with the reference gift off, in hybrid and semantic mode (keyword mode takes no gift).

Run: ``nice -n 5 .venv/bin/python bench/mixed_docs.py``; prints Markdown, writes nothing.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import ROOT
from judged_set import fold_of
from mixed_code import DEPTH, FOLDS, build, load
from vaultsearch import Vault

QUERIES = ROOT / "bench" / "mixed_docs_queries.jsonl"
MODES = ("hybrid", "semantic")


def page_ranks(vault: Vault, queries: list[dict[str, str]], mode: str) -> list[int]:
    out = []
    for q in queries:
        paths = [h.path for h in vault.search(q["query"], top_k=DEPTH, mode=mode)]
        out.append(paths.index(q["expected"]) + 1 if q["expected"] in paths else 0)
    return out


def main() -> None:
    queries = load(QUERIES)
    got: dict[tuple[str, str], list[int]] = {}
    with tempfile.TemporaryDirectory(prefix="vaultsearch-mixdocs-") as tmp:
        vault = build(Path(tmp))
        try:
            shipped = vault.orchestrator.config
            for label, config in (("off", shipped.with_search(code_ref_weight=0.0)),
                                  ("shipped", shipped)):  # fmt: skip
                vault.orchestrator.config = config
                for mode in MODES:
                    got[(label, mode)] = page_ranks(vault, queries, mode)
        finally:
            vault.close()
    print("| mode | reference gift | top 1 | top 3 | top 10 |\n|---|---|---|---|---|")
    for (label, mode), r in sorted(got.items(), key=lambda kv: (kv[0][1], kv[0][0] != "off")):
        cells = [sum(1 for k in r if 0 < k <= d) for d in (1, 3, DEPTH)]
        print(f"| {mode} | {label} | " + " | ".join(f"{c} of {len(r)}" for c in cells) + " |")
    print("\nHybrid, top 3 per fold (`fold_of(query, 5)`), off -> shipped:\n")
    for f in range(FOLDS):
        idx = [i for i, q in enumerate(queries) if fold_of(q["query"], FOLDS) == f]
        a, b = (sum(1 for i in idx if 0 < got[(s, "hybrid")][i] <= 3) for s in ("off", "shipped"))
        print(f"- fold {f + 1} ({len(idx)} queries): {a} -> {b}")
    print("\n| query | page | hybrid off -> shipped | semantic off -> shipped |\n|---|---|---|---|")
    for i, q in enumerate(queries):
        cells = [f"{got[('off', m)][i] or '-'} -> {got[('shipped', m)][i] or '-'}" for m in MODES]
        print(f"| {q['query']} | `{q['expected']}` | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
