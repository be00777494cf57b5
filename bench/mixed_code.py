"""Code in a mixed index (issue 27): ``docs/`` as the vault and this project's ``src/``
as a git source in one index; is a plain-words description of a function answered by the
function's qualified name in the top 3, or do the docs pages explaining it come first?

The vault is a copy of ``docs/`` without ``benchmarks.md``, which quotes the code
queries word for word (a page holding the query itself is not a docs page describing a
function). The git source is a fresh repository holding a copy of ``src/``, reached
through a ``file://`` URL, ``include = ["src/"]``, ``*.py`` through the ``code`` parser.
Both query sets run: ``mixed_code_queries.jsonl`` (written for this setting) and
``code_queries.jsonl`` (written for ``code_search.py``). The per-user embedding cache is
used, so a re-run embeds nothing.

Run: ``nice -n 5 .venv/bin/python bench/mixed_code.py [--search KEY=JSON ...]`` (needs
no shared data; ``--search`` ranks with a setting changed, e.g. ``hop_weight=0``); prints
Markdown, writes nothing. The 40 queries of both sets are also split into the five folds
of ``judged_set.fold_of`` (by query text), so a ranking change can be compared fold by
fold, run once on each commit.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import ROOT
from code_search import qualified
from judged_set import fold_of
from vaultsearch import Vault
from vaultsearch.sourceconfig import source_from_table

SETS = {
    "mixed": ROOT / "bench" / "mixed_code_queries.jsonl",
    "code": ROOT / "bench" / "code_queries.jsonl",
}
DEPTH = 10
FOLDS = 5
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.org"]


def load(path: Path) -> list[dict[str, str]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [r for r in rows if "query" in r]


def build(base: Path) -> Vault:
    vault_dir = base / "vault"
    shutil.copytree(ROOT / "docs", vault_dir, ignore=shutil.ignore_patterns("benchmarks.md"))
    repo = base / "repo"
    shutil.copytree(
        ROOT / "src", repo / "src", ignore=shutil.ignore_patterns("__pycache__", "model")
    )
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "src"]):
        subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True)
    # no recency: the pages' `updated:` dates and the checkout's times would make the
    # figures depend on the day they are measured (tests/test_mixed_code.py: CALENDAR_FREE)
    vault = Vault.open(vault_dir, index_dir=base / "index", flags=("search.recency=false",))
    table = {"name": "vaultsearch", "type": "git", "url": repo.as_uri(), "branch": "main",
             "include": ["src/"], "parsers": {"**/*.py": "code"}}  # fmt: skip
    vault.add_source(source_from_table(table, "", 0))
    vault.index()
    return vault


def ranks(vault: Vault, queries: list[dict[str, str]], mode: str) -> list[tuple[int, str]]:
    """Each query's rank of the expected name (0 = not in the top DEPTH) and the kind of
    its first hit."""
    out = []
    for q in queries:
        hits = vault.search(q["query"], top_k=DEPTH, mode=mode)
        names = [qualified(h) for h in hits]
        rank = names.index(q["expected"]) + 1 if q["expected"] in names else 0
        out.append((rank, f"{hits[0].kind}:{names[0]}" if hits else "(none)"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--modes", default="hybrid,keyword,semantic")
    parser.add_argument(
        "--search", action="append", default=[], metavar="KEY=JSON",
        help="a [search] setting other than the shipped one, e.g. hop_weight=0",
    )  # fmt: skip
    args = parser.parse_args()
    modes = args.modes.split(",")
    changes = {k: json.loads(v) for k, v in (item.split("=", 1) for item in args.search)}
    with tempfile.TemporaryDirectory(prefix="vaultsearch-mixed-") as tmp:
        vault = build(Path(tmp))
        try:
            if changes:
                vault.orchestrator.config = vault.config.with_search(**changes)
                print(f"Search settings changed: {changes}\n")
            status = vault.status()
            got = {
                (name, mode): ranks(vault, load(path), mode)
                for name, path in SETS.items()
                for mode in modes
            }
        finally:
            vault.close()
    print(f"Index: {status['notes']} files, {status['chunks']} chunks.\n")
    print("| set | mode | top 1 | top 3 | top 10 | first hit a docs page |")
    print("|---|---|---|---|---|---|")
    for (name, mode), r in got.items():
        n = len(r)
        docs = sum(1 for _, top in r if top.startswith("note:"))
        cells = [sum(1 for k, _ in r if 0 < k <= d) for d in (1, 3, DEPTH)]
        print(f"| {name} | {mode} | " + " | ".join(f"{c} of {n}" for c in cells) + f" | {docs} |")
    print("\nHybrid, both sets, per fold (`fold_of(query, 5)`):\n")
    print("| fold | queries | top 1 | top 3 | top 10 |\n|---|---|---|---|---|")
    both = [
        (q["query"], rank)
        for name, path in SETS.items()
        if (name, "hybrid") in got
        for q, (rank, _) in zip(load(path), got[(name, "hybrid")], strict=True)
    ]
    for f in range(FOLDS):
        r = [k for q, k in both if fold_of(q, FOLDS) == f]
        cells = [sum(1 for k in r if 0 < k <= d) for d in (1, 3, DEPTH)]
        print(f"| {f + 1} | {len(r)} | " + " | ".join(map(str, cells)) + " |")
    for name, path in SETS.items():
        print(
            f"\nPer query, {name}, hybrid:\n\n| query | expected | rank | first hit |\n|---|---|---|---|"
        )
        for q, (rank, top) in zip(load(path), got[(name, "hybrid")], strict=True):
            print(f"| {q['query']} | `{q['expected']}` | {rank or '-'} | `{top}` |")


if __name__ == "__main__":
    main()
