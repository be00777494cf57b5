"""Top-10 results for 50 queries on vaultofknowledge, captured by one version of the
code and compared with another: the store refactor must not change a result.

    # once, with the original code on PYTHONPATH (git worktree add /tmp/orig 49d85aa):
    PYTHONPATH=/tmp/orig/src python bench/store_parity.py capture before.json --index-dir X
    # with this code, on a copy of that index (its stored embeddings are reused):
    PYTHONPATH=src python bench/store_parity.py capture after.json --index-dir Y
    python bench/store_parity.py compare before.json after.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

VAULT = Path("/work/shared/data/vaults/vaultofknowledge")

QUERIES = [
    "free will", "advaita vedanta objection", "maya explained", "retro emulation",
    "lightgun games", "open source tools", "decentralized technologies", "cryptocurrency consensus",
    "proof of stake", "package manager design", "java phone programming", "magic numbers",
    "feature engineering", "local AI requirements", "AI models tested", "video editing software",
    "blender 3d modelling", "vinyl vs digital audio", "colours I like", "nostalgia",
    "personal website ideas", "how I find stuff", "yoga sutra", "devanagari transliteration",
    "samskritham word compounding", "differences in languages", "scaling text in scripts",
    "knot analogy samsara", "nishkama karma", "idealism philosophers", "reification",
    "physical vs material", "dualistic theology flaws", "anti-theists delusions",
    "evolution toothpaste argument", "ezra son of god", "beit shammai hillel",
    "pre-muhammadian era", "shudras learning vedas", "penances in hinduism",
    "instability of the mind", "contradictory models usefulness", "literature vs code",
    "buttermilk", "weapons stance", "redmi phone", "retro computers", "to learn list",
    "aesthetics", "engineering",
]  # fmt: skip


def capture(out: Path, index_dir: Path, modes: list[str]) -> None:
    from vaultsearch import Vault

    t0 = time.perf_counter()
    with Vault.open(VAULT, index_dir=index_dir) as vault:
        summary = vault.index()
        indexed = time.perf_counter() - t0
        results = {
            mode: {q: [h.path for h in vault.search(q, top_k=10, mode=mode)] for q in QUERIES}
            for mode in modes
        }
    data = {
        "index_seconds": round(indexed, 1),
        "chunks_embedded": summary.chunks_embedded,
        "results": results,
    }
    out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"captured {len(QUERIES)} queries x {modes} in {out} ({data})"[:300])


def compare(a: Path, b: Path) -> int:
    before = json.loads(a.read_text(encoding="utf-8"))["results"]
    after = json.loads(b.read_text(encoding="utf-8"))["results"]
    differing = 0
    for mode in sorted(set(before) & set(after)):
        diff = [q for q in QUERIES if before[mode].get(q) != after[mode].get(q)]
        differing += len(diff)
        print(f"{mode}: {len(QUERIES) - len(diff)}/{len(QUERIES)} identical top-10 lists")
        for q in diff:
            print(f"  differs: {q!r}\n    before {before[mode][q]}\n    after  {after[mode][q]}")
    return 1 if differing else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("capture")
    c.add_argument("out", type=Path)
    c.add_argument("--index-dir", type=Path, required=True)
    c.add_argument("--mode", action="append", default=None)
    d = sub.add_parser("compare")
    d.add_argument("before", type=Path)
    d.add_argument("after", type=Path)
    args = ap.parse_args()
    if args.cmd == "capture":
        capture(args.out, args.index_dir, args.mode or ["keyword", "hybrid"])
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
