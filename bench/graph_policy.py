"""Node records written to graph files by a long run of one-note edits, simulated: the
delta policy before parts (the whole delta file rewritten at every edit, a new base
past max(512, a tenth of the notes) records) against the current one (a part per edit,
neighbouring parts merged by ``segments.tier_runs``, a new base once the parts hold
more than max(512, the notes) records). Counts only, no files.

Run: `PYTHONPATH=src .venv/bin/python bench/graph_policy.py NOTES EDITS` (each edit a
note drawn at random, seed 23).
"""

from __future__ import annotations

import random
import sys

from vaultsearch.store.segments import tier_runs

FLOOR = 512


def before(notes: int, seq: list[int]) -> tuple[int, int]:
    written, delta, bases = 0, set(), 0
    for n in seq:
        delta.add(n)
        if len(delta) > max(FLOOR, notes // 10):
            written, delta, bases = written + notes, set(), bases + 1
        else:
            written += len(delta)
    return written, bases


def after(notes: int, seq: list[int]) -> tuple[int, int]:
    written, parts, bases = 0, [], 0
    for n in seq:
        if sum(map(len, parts)) + 1 > max(FLOOR, notes):
            written, parts, bases = written + notes, [], bases + 1
            continue
        parts.append({n})
        written += 1
        for run in reversed(tier_runs([len(p) for p in parts])):
            if len(run) > 1:
                merged = set().union(*parts[run[0] : run[-1] + 1])
                written += len(merged)
                parts[run[0] : run[-1] + 1] = [merged]
    return written, bases


def main() -> None:
    notes, edits = int(sys.argv[1]), int(sys.argv[2])
    rng = random.Random(23)
    seq = [rng.randrange(notes) for _ in range(edits)]
    for label, (written, bases) in (("before", before(notes, seq)), ("after", after(notes, seq))):
        print(
            f"{label}: {notes} notes, {edits} edits: {written} records written "
            f"({written / edits:.1f} per edit), {bases} new bases"
        )


if __name__ == "__main__":
    main()
