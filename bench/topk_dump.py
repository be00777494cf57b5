"""The top-10 paths and scores of 50 queries in each mode, as JSON: run it with two
versions of the code on two indexes of the same vault and compare the files
(`--compare A B`), to show a change of the store leaves the rankings as they were.

The queries are the titles of 50 notes spread over the vault in path order (each one
a query a user could type, and deterministic). Uses only the public API, so the same
script runs against an older checkout (PYTHONPATH=that/src).

Run: `.venv/bin/python bench/topk_dump.py VAULT INDEX_DIR OUT.json`, then
`.venv/bin/python bench/topk_dump.py --compare BEFORE.json AFTER.json`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

MODES = ("hybrid", "semantic", "keyword")


def dump(vault_dir: Path, index_dir: Path, out: Path) -> None:
    from vaultsearch import Vault

    notes = sorted(p for p in vault_dir.rglob("*.md") if p.is_file())
    step = max(1, len(notes) // 50)
    queries = [p.stem.replace("-", " ").replace("_", " ") for p in notes[::step][:50]]
    vault = Vault.open(vault_dir, index_dir=index_dir)
    result = {
        mode: {
            q: [[h.path, round(h.score, 6)] for h in vault.search(q, mode=mode, top_k=10)]
            for q in queries
        }
        for mode in MODES
    }
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")


def compare(before: Path, after: Path) -> int:
    a = json.loads(before.read_text(encoding="utf-8"))
    b = json.loads(after.read_text(encoding="utf-8"))
    differ = 0
    for mode in MODES:
        same_paths = sum([p for p, _ in a[mode][q]] == [p for p, _ in b[mode][q]] for q in a[mode])
        same_scores = sum(a[mode][q] == b[mode][q] for q in a[mode])
        differ += len(a[mode]) - same_paths
        print(
            f"{mode}: same top-10 paths {same_paths}/{len(a[mode])}, "
            f"same paths and scores {same_scores}/{len(a[mode])}"
        )
    return 1 if differ else 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--compare", nargs=2, type=Path)
    args = parser.parse_args()
    if args.compare:
        sys.exit(compare(*args.compare))
    dump(*args.paths)


if __name__ == "__main__":
    main()
