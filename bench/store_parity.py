"""Top-10 results for 50 queries on vaultofknowledge, captured by one version of the
code and compared with another: the store refactor must not change a result.

    # once, with the original code on PYTHONPATH (git worktree add /tmp/orig 49d85aa):
    PYTHONPATH=/tmp/orig/src python bench/store_parity.py capture before.json --index-dir X
    # with this code, on a copy of that index (its stored embeddings are reused):
    PYTHONPATH=src python bench/store_parity.py capture after.json --index-dir Y
    python bench/store_parity.py compare before.json after.json
    # what copy-on-write costs an update of that index:
    PYTHONPATH=src python bench/store_parity.py copy-cost --index-dir Y
    # one edited note, old code (in place) against this one (a new generation):
    python bench/store_parity.py update-cost --vault V --index-dir I
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


def compare(a: Path, b: Path, costs: list[Path] | None = None) -> int:
    """Print the comparison; with ``costs`` (update-cost of the old code, of this code,
    copy-cost), also a summary that bench/reliability_store.py puts in its section."""
    before = json.loads(a.read_text(encoding="utf-8"))["results"]
    after_data = json.loads(b.read_text(encoding="utf-8"))
    after = after_data["results"]
    differing = 0
    lines = []
    for mode in sorted(set(before) & set(after)):
        diff = [q for q in QUERIES if before[mode].get(q) != after[mode].get(q)]
        differing += len(diff)
        lines.append(f"- {mode}: {len(QUERIES) - len(diff)}/{len(QUERIES)} identical top-10 lists")
        for q in diff:
            lines.append(f"  - differs: {q!r}: before {before[mode][q]}, after {after[mode][q]}")
    print("\n".join(lines))
    if costs:
        old, new, copy = (json.loads(p.read_text(encoding="utf-8")) for p in costs)
        mb = {k: v / 1e6 for k, v in copy["sizes_bytes"].items()}
        body = "\n".join([
            "Top-10 results for 50 queries on vaultofknowledge (2,722 notes indexed), captured",
            "with the code before the store refactor (commit 49d85aa) and with this code on a",
            f"copy of that index (rebuilt into a generation, {after_data['chunks_embedded']} "
            "chunks embedded: the old catalog's vectors were reused):",
            "", *lines, "",
            "What copy-on-write costs an update of that index (one edited note, model loaded,",
            "5 runs each; the box was shared, load averages beside the figures):",
            "",
            "| | seconds per update | load average |", "|---|---|---|",
            f"| in place (before) | {', '.join(map(str, old['update_seconds']))} | {' '.join(old['loadavg'])} |",
            f"| new generation (now) | {', '.join(map(str, new['update_seconds']))} | {' '.join(new['loadavg'])} |",
            "",
            f"Of that, cloning the live generation (catalog {mb['catalog']:.0f} MB by SQLite backup,",
            f"FAISS {mb['vectors']:.0f} MB copied, Tantivy {mb['keywords']:.1f} MB hard-linked) and syncing it "
            f"took {', '.join(map(str, copy['clone_seconds']))} s (load {' '.join(copy['loadavg'])}).",
            "The rest is loading and writing FAISS and sealing the catalog. A run that finds",
            "nothing to do writes nothing and pays none of it.",
        ])  # fmt: skip
        out = b.with_name("parity-summary.json")
        out.write_text(json.dumps({"parity": body}), encoding="utf-8")
        print(f"for bench/reliability_store.py --report-from: {out}")
    return 1 if differing else 0


def copy_cost(index_dir: Path, runs: int = 3) -> None:
    """What an update pays for copy-on-write: cloning the live generation (catalog
    backup, FAISS file copy, Tantivy hard links) and syncing it, then removing it."""
    import shutil

    from vaultsearch.store.atomic import fsync_tree
    from vaultsearch.store.derived.keywords import KeywordPart
    from vaultsearch.store.derived.vectors import VectorPart
    from vaultsearch.store.layout import IndexLayout
    from vaultsearch.store.writer import clone_generation

    layout = IndexLayout(index_dir)
    live = layout.live
    sizes = {
        "catalog": live.catalog.stat().st_size,
        "vectors": VectorPart.location(live).stat().st_size,
        "keywords": sum(
            f.stat().st_size for f in KeywordPart.location(live).iterdir() if f.is_file()
        ),
    }
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        clone = clone_generation(layout, live)
        fsync_tree(clone.root)
        times.append(time.perf_counter() - t)
        shutil.rmtree(clone.root)
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(json.dumps({"sizes_bytes": sizes, "clone_seconds": [round(x, 2) for x in times],
                      "loadavg": load}))  # fmt: skip


def update_cost(vault_dir: Path, index_dir: Path, runs: int = 5) -> None:
    """Seconds of ``Vault.index()`` after editing one note (model loaded beforehand):
    run with the original code and with this one on copies of the same index."""
    from vaultsearch import Vault

    note = sorted(vault_dir.rglob("*.md"))[len(QUERIES)]
    original = note.read_text(encoding="utf-8")
    times = []
    with Vault.open(vault_dir, index_dir=index_dir) as vault:
        vault.index()
        vault.embedder.embed_query("load the model before timing")
        try:
            for i in range(runs):
                note.write_text(original + f"\n\nEdit number {i} of this note.\n", encoding="utf-8")
                t = time.perf_counter()
                vault.index()
                times.append(time.perf_counter() - t)
        finally:
            note.write_text(original, encoding="utf-8")
            vault.index()
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(json.dumps({"update_seconds": [round(x, 2) for x in times], "loadavg": load}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("capture")
    c.add_argument("out", type=Path)
    c.add_argument("--index-dir", type=Path, required=True)
    c.add_argument("--mode", action="append", default=None)
    cc = sub.add_parser("copy-cost")
    cc.add_argument("--index-dir", type=Path, required=True)
    uc = sub.add_parser("update-cost")
    uc.add_argument("--vault", type=Path, required=True)
    uc.add_argument("--index-dir", type=Path, required=True)
    d = sub.add_parser("compare")
    d.add_argument("before", type=Path)
    d.add_argument("after", type=Path)
    d.add_argument("--costs", type=Path, nargs=3, metavar=("OLD", "NEW", "COPY"))
    args = ap.parse_args()
    if args.cmd == "capture":
        capture(args.out, args.index_dir, args.mode or ["keyword", "hybrid"])
        return 0
    if args.cmd == "update-cost":
        update_cost(args.vault, args.index_dir)
        return 0
    if args.cmd == "copy-cost":
        copy_cost(args.index_dir)
        return 0
    return compare(args.before, args.after, args.costs)


if __name__ == "__main__":
    sys.exit(main())
