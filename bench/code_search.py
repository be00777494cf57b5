"""Code search on this project's own source: is the function a plain-words query
describes among the top 3 hits, by its fully qualified name?

Run: `make bench-code` (or `.venv/bin/python bench/code_search.py`). A copy of `src/`
(Python files only) is indexed as a folder with the `code` parser in a temporary
directory, and each query of `bench/code_queries.jsonl` goes through the public API
(``Vault.search``, hybrid, top 3). Hits are grouped per file, so a hit's name is the
best-matching definition of that file. The queries were written by reading the code,
before this script first ran, and are not tuned afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import ROOT, write_section
from vaultsearch import Vault
from vaultsearch.config import config_from_dict
from vaultsearch.models import Hit

QUERIES = ROOT / "bench" / "code_queries.jsonl"
TOP_K = 3
MODES = ("hybrid", "keyword", "semantic")


def load_queries() -> list[dict[str, str]]:
    rows = [json.loads(line) for line in QUERIES.read_text(encoding="utf-8").splitlines()]
    return [r for r in rows if "query" in r]


def qualified(hit: Hit) -> str:
    """The hit's qualified name; rebuilt from module title and heading path where the
    index does not carry it on hits yet."""
    if hit.qualified_name:
        return hit.qualified_name
    parts = [hit.title, *([p for p in hit.heading_path.split(" > ") if p])]
    return ".".join(parts)


def main() -> None:
    queries = load_queries()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="vaultsearch-code-") as tmp:
        root = Path(tmp) / "src"
        shutil.copytree(
            ROOT / "src", root, ignore=shutil.ignore_patterns("__pycache__", "model", "*.toml*")
        )
        config = config_from_dict({"parsers": {"**/*.py": "code"}}, "bench/code_search.py")
        vault = Vault.open(root, index_dir=Path(tmp) / "index", config=config)
        start = time.perf_counter()
        summary = vault.index()
        index_s = time.perf_counter() - start
        results: dict[str, list[list[str]]] = {}
        for mode in MODES:
            results[mode] = [
                [qualified(h) for h in vault.search(q["query"], top_k=TOP_K, mode=mode)]
                for q in queries
            ]
        status = vault.status()
        vault.close()
    load_after = os.getloadavg()
    write_section("code", "Code search on the project's own source", report(
        queries, results, summary.added, status["chunks"], index_s, load_before, load_after
    ))  # fmt: skip


def report(
    queries: list[dict[str, str]],
    results: dict[str, list[list[str]]],
    files: int,
    chunks: int,
    index_s: float,
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
) -> str:
    def counts(mode: str) -> tuple[int, int]:
        ranked = results[mode]
        top1 = sum(1 for q, r in zip(queries, ranked, strict=True) if r[:1] == [q["expected"]])
        top3 = sum(1 for q, r in zip(queries, ranked, strict=True) if q["expected"] in r)
        return top1, top3

    n = len(queries)
    lines = [
        f"`src/` copied and indexed as a folder with the `code` parser: {files} Python files, "
        f"{chunks} chunks, {index_s:.0f} s to index from scratch (load average "
        f"{load_before[0]:.2f} before, {load_after[0]:.2f} after). {n} queries of our own "
        "(`bench/code_queries.jsonl`), each describing in plain words what one function or "
        "method does, written by reading the code before the first run and not tuned after; "
        "a query counts when the expected fully qualified name is among the top 3 hits "
        "(hits are grouped per file, each named by its best definition).",
        "",
        "| Mode | Top 1 | Top 3 |",
        "|---|---|---|",
    ]
    for mode in MODES:
        top1, top3 = counts(mode)
        lines.append(f"| {mode} | {top1} of {n} | {top3} of {n} |")
    lines += ["", "Per query (hybrid, the default):", "", "| Query | Expected | Rank | Top hit |"]
    lines.append("|---|---|---|---|")
    for q, ranked in zip(queries, results["hybrid"], strict=True):
        rank = ranked.index(q["expected"]) + 1 if q["expected"] in ranked else "-"
        top = ranked[0] if ranked else "(none)"
        lines.append(f"| {q['query']} | `{q['expected']}` | {rank} | `{top}` |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
