"""The top 10 of 50 queries in each mode, each hit's path, chunk id and score, as JSON:
run it with two versions of the code (or on two indexes of the same vault) and compare
the files (``--compare A B``), to show that a change of the store or a speed-up of the
ranking leaves the rankings as they were.

``--queries spread`` (the default): the titles of 50 notes spread over the vault in path
order, read from the files, so the same script runs against an older checkout
(PYTHONPATH=that/src) on an index that checkout built. ``--queries scale``: ``scale.py``'s
50 queries (``query_stages.scale_queries``), for a kept index of ``scale.py --keep``.

Run: ``python bench/topk_dump.py VAULT INDEX_DIR OUT.json [--queries scale]``, then
``python bench/topk_dump.py --compare BEFORE.json AFTER.json``: a line per mode (same
paths; same paths, chunk ids and scores within 1e-9; exactly equal), exit 1 when any
top 10's paths differ, or chunk ids or scores with ``--strict``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

MODES = ("hybrid", "semantic", "keyword")
CLOSE = 1e-9


def _spread(vault_dir: Path) -> list[str]:
    notes = sorted(p for p in vault_dir.rglob("*.md") if p.is_file())
    step = max(1, len(notes) // 50)
    return [p.stem.replace("-", " ").replace("_", " ") for p in notes[::step][:50]]


def dump(vault_dir: Path, index_dir: Path, out: Path, queries: str) -> None:
    from vaultsearch import Vault

    with Vault.open(vault_dir, index_dir=index_dir) as vault:
        if queries == "scale":
            from query_stages import scale_queries

            asked = scale_queries(vault)
        else:
            asked = _spread(vault_dir)
        result = {
            mode: {
                q: [[h.path, h.chunk_id, h.score] for h in vault.search(q, mode=mode, top_k=10)]
                for q in asked
            }
            for mode in MODES
        }
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")


def _close(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(
        p == p2 and c == c2 and abs(s - s2) <= CLOSE
        for (p, c, s), (p2, c2, s2) in zip(a, b, strict=True)
    )


def compare(before: Path, after: Path, strict: bool) -> int:
    a = json.loads(before.read_text(encoding="utf-8"))
    b = json.loads(after.read_text(encoding="utf-8"))
    differ = 0
    for mode in MODES:
        paths = close = exact = 0
        for q, hits in a[mode].items():
            other = b[mode].get(q, [])
            paths += [h[0] for h in hits] == [h[0] for h in other]
            close += _close(hits, other)
            exact += hits == other
            if not _close(hits, other):
                print(f"  {mode} {q!r} differs")
        differ += len(a[mode]) - (close if strict else paths)
        print(
            f"{mode}: same top-10 paths {paths}/{len(a[mode])}, paths, chunk ids and scores "
            f"within {CLOSE:g} {close}/{len(a[mode])}, exactly equal {exact}/{len(a[mode])}"
        )
    return 1 if differ else 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--compare", nargs=2, type=Path)
    parser.add_argument("--strict", action="store_true", help="chunk ids and scores must match")
    parser.add_argument("--queries", choices=("spread", "scale"), default="spread")
    args = parser.parse_args()
    if args.compare:
        sys.exit(compare(*args.compare, args.strict))
    vault_dir, index_dir, out = args.paths
    dump(vault_dir, index_dir, out, args.queries)


if __name__ == "__main__":
    main()
