"""What cutting the semantic branch's ties by path costs, and what it changes, on a kept
index: the vector search of ``scale.py``'s 50 queries (``query_stages.scale_queries``)
at the branch's depth (``search.candidates``), as a tool holding a vector searches (no
``tie_order``: each segment read for k rows, a tie cut by position, the code before the
change) and as the semantic branch now does (``Snapshot.tie_order``: k + 1 rows a
segment, wider while tied, the tie cut by note path then chunk id), and with chunk ids
as the sort keys (the reads without the paths' lookups).

Counts first: the searches whose tie crossed the cut, the segment reads widened, the
searches whose top k kept other chunks, and for each of those whether every chunk
swapped sits at the k-th cosine and which copies (``copyNN/`` of a replicated vault)
each side kept. Then CPU (``time.process_time``: the scan pool's thread counted) of
each way in one process, turn about per query, the order flipped each pass.

Run: ``nice -n 15 .venv/bin/python bench/vector_ties.py VAULT INDEX [--passes 9]
[--k K]``; prints, writes nothing (the index is opened to read only).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from query_stages import scale_queries


def _copies(keys: Sequence[tuple[str, int]]) -> list[str]:
    return sorted({path.split("/")[0] for path, _ in keys})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("vault", type=Path)
    parser.add_argument("index", type=Path)
    parser.add_argument("--passes", type=int, default=9)
    parser.add_argument("--k", type=int, help="the depth (default: search.candidates)")
    args = parser.parse_args()

    import vaultsearch.store.vectors as vm
    from vaultsearch import Vault

    with Vault.open(args.vault, index_dir=args.index) as vault:
        snap = vault.orchestrator.snapshot()
        reader = snap.reader("vectors").vectors
        k = args.k or vault.config.search.candidates
        vecs = [vault.orchestrator.embedder.embed_query(q) for q in scale_queries(vault)]
        kinds = [
            f"{s.entry.live} {'approximate' if s.entry.ann else 'flat'}" for s in reader.segments
        ]
        print(f"segments (live rows): {', '.join(kinds)}; k = {k}")

        crossed, widened = [0], [0]
        settle, wider_read = vm.settle, vm.wider_read

        def counted_settle(*a: Any) -> bool:
            crossed[0] += (done := settle(*a))
            return done

        def counted_wider(*a: Any) -> int | None:
            widened[0] += (more := wider_read(*a)) is not None
            return more

        vm.settle, vm.wider_read = counted_settle, counted_wider  # type: ignore[assignment]
        changed = 0
        for vec in vecs:
            old = dict(reader.search(vec, k, None))
            new = dict(reader.search(vec, k, None, snap.tie_order))
            if set(old) == set(new):
                continue
            changed += 1
            gone, came = sorted(set(old) - set(new)), sorted(set(new) - set(old))
            at_cut = {old[c] for c in gone} | {new[c] for c in came} == {min(old.values())}
            print(
                f"- {len(gone)} chunks swapped, all at the k-th cosine: {at_cut}; "
                f"before kept {_copies(snap.tie_order(gone))}, now {_copies(snap.tie_order(came))}"
            )
        vm.settle, vm.wider_read = settle, wider_read
        print(
            f"{len(vecs)} searches: tie across the cut {crossed[0]}, segment reads widened "
            f"{widened[0]}, top k kept other chunks {changed}\n"
        )

        orders: dict[str, Callable[[Sequence[int]], Sequence[Any]] | None] = {
            "by position (before)": None,
            "by path (tie_order)": snap.tie_order,
            "by chunk id (reads alone)": lambda ids: list(ids),
        }
        for vec in vecs:
            for order in orders.values():
                reader.search(vec, k, None, order)
        cpu: dict[str, list[float]] = {name: [] for name in orders}
        loads = []
        for n in range(args.passes):
            names = list(orders) if n % 2 == 0 else list(orders)[::-1]
            for vec in vecs:
                for name in names:
                    start = time.process_time()
                    reader.search(vec, k, None, orders[name])
                    cpu[name].append((time.process_time() - start) * 1000)
            loads.append(os.getloadavg()[0])
    print(f"Load (1 min) during the run: {min(loads):.1f}–{max(loads):.1f}\n")
    print("| cut | searches | CPU ms mean | median |\n|---|---:|---:|---:|")
    for name, got in cpu.items():
        print(
            f"| {name} | {len(got)} | {statistics.mean(got):.2f} | {statistics.median(got):.2f} |"
        )


if __name__ == "__main__":
    main()
