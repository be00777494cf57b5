"""Whether two versions of the search code return the same top 10 on a kept index:
``scale.py``'s 50 queries (``query_stages.scale_queries``) in all three modes, each hit's
path, chunk id and score.

A speed-up of the ranking must not change what it ranks; ``topk_dump.py`` compares
paths and scores rounded to 1e-6, this compares chunk ids too and scores to 1e-9.

Run (once per checkout, ``PYTHONPATH`` naming its ``src``):
``python bench/same_top.py VAULT INDEX OUT.json``, then
``python bench/same_top.py --compare A.json B.json``; prints a line per mode, exit 1 on
any difference.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

MODES = ("hybrid", "semantic", "keyword")
CLOSE = 1e-9


def dump(vault_dir: Path, index_dir: Path, out: Path) -> None:
    from query_stages import scale_queries
    from vaultsearch import Vault

    with Vault.open(vault_dir, index_dir=index_dir) as vault:
        queries = scale_queries(vault)
        result = {
            mode: {
                q: [[h.path, h.chunk_id, h.score] for h in vault.search(q, mode=mode, top_k=10)]
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
        same = 0
        for q, hits in a[mode].items():
            other = b[mode].get(q, [])
            if len(hits) == len(other) and all(
                p == p2 and c == c2 and abs(s - s2) <= CLOSE
                for (p, c, s), (p2, c2, s2) in zip(hits, other, strict=True)
            ):
                same += 1
            else:
                print(f"  {mode} {q!r} differs")
        exact = sum(a[mode][q] == b[mode].get(q) for q in a[mode])
        differ += len(a[mode]) - same
        print(
            f"{mode}: same top 10 (paths, chunk ids, scores within {CLOSE:g}) "
            f"{same}/{len(a[mode])}, exactly equal {exact}/{len(a[mode])}"
        )
    return 1 if differ else 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--compare", nargs=2, type=Path)
    args = parser.parse_args()
    if args.compare:
        raise SystemExit(compare(*args.compare))
    vault_dir, index_dir, out = args.paths
    dump(vault_dir, index_dir, out)


if __name__ == "__main__":
    main()
