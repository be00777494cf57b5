"""The probability that the first hit answers, calibrated on the judged vault queries.

Each judged query (answerable and ``no_answer``) runs through ``Vault.search`` (hybrid,
top 10). The first hit "answers" when it is judged 2 for an answerable query; it never
does for a ``no_answer`` one. A one-feature logistic map (Platt scaling) of the first
hit's per-hit confidence (its logit) to that outcome is fitted on four folds and scored
on the fifth (``judged_set.fold_of``); the line under which "no note matches well" is
said is chosen on the training folds as the highest that flags at most 5% of the
answerable queries (before: of those whose first hit answers, which let the line flag
one answerable query in ten). Reported: per fold the held-out flag rates,
and a reliability table of the held-out predictions.

Run: ``nice -n 5 .venv/bin/python bench/tune_confidence.py [vault ...]``, or with
``--from-rows`` on the searches ``confidence_rows.py`` saved; prints Markdown.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import SHARED
from confidence import fit
from confidence_rows import ROWS
from judged_set import VAULTS, fold_of, load_judged
from vault_quality import judged_vault
from vaultsearch.config import load_config
from vaultsearch.search.confidence import FIRST_LINE, FIRST_MAP, WEAK, first_hit_answers

FOLDS = 5
FALSE_FLAGS = 0.05
BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


@dataclass(frozen=True)
class Row:
    vault: str
    id: str
    answerable: bool
    answers: bool
    """The first hit is judged 2."""
    logit: float


def rows_of(name: str, work: Path) -> list[Row]:
    out = []
    with judged_vault(name, work / name, load_config(None)) as vault:
        for q in load_judged(name):
            hits = vault.search(q.query, top_k=10)
            conf = min(max(hits[0].confidence if hits else 0.0, 1e-6), 1 - 1e-6)
            top = q.judgments.get(hits[0].path, 0) if hits else 0
            out.append(
                Row(name, q.id, q.answered, q.answered and top == 2, math.log(conf / (1 - conf)))
            )
    return out


def row_of(d: dict[str, Any]) -> Row:
    """A row of ``confidence_rows.py``'s file."""
    conf = min(max(d["confidences"][0] if d["confidences"] else 0.0, 1e-6), 1 - 1e-6)
    return Row(d["vault"], d["id"], d["answerable"], d["answers"], math.log(conf / (1 - conf)))


def predict(w: np.ndarray, rows: list[Row]) -> np.ndarray:
    x = np.array([r.logit for r in rows])
    return 1 / (1 + np.exp(-(w[0] + w[1] * x)))


def line(p: np.ndarray, rows: list[Row]) -> float:
    """The highest line flagging at most ``FALSE_FLAGS`` of the answerable queries: the
    message tells an agent the vault probably lacks the answer, which is false for any
    answerable query, whether or not its first hit is the judged one."""
    right = np.sort(p[[r.answerable for r in rows]])
    if not len(right):
        return 0.0
    allowed = math.floor(FALSE_FLAGS * len(right))
    return float(right[allowed]) if allowed < len(right) else 1.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("vaults", nargs="*", default=None)
    parser.add_argument(
        "--from-rows", action="store_true", help=f"read the searches from {ROWS.name}"
    )
    args = parser.parse_args()
    names = args.vaults or [v for v in VAULTS if (SHARED / "vaults" / v).is_dir()]
    if args.from_rows:
        rows = [row_of(json.loads(x)) for x in ROWS.read_text(encoding="utf-8").splitlines()]
        names = list(dict.fromkeys(r.vault for r in rows))
    else:
        with tempfile.TemporaryDirectory(prefix="vs-conf-") as tmp:
            rows = [r for n in names for r in rows_of(n, Path(tmp))]
    held = np.zeros(len(rows))
    print(
        "| fold | map a + b logit(conf) | line | right first hits flagged | "
        "answerable flagged | no_answer flagged |\n| --- | --- | ---: | --- | --- | --- |"
    )
    for f in range(FOLDS):
        train = [r for r in rows if fold_of(r.id, FOLDS) != f]
        test_idx = [i for i, r in enumerate(rows) if fold_of(r.id, FOLDS) == f]
        test = [rows[i] for i in test_idx]
        w = fit(np.array([[r.logit] for r in train]), np.array([float(r.answers) for r in train]))
        cut = line(predict(w, train), train)
        p = predict(w, test)
        held[test_idx] = p
        print(f"| {f + 1} | {w[0]:.3f} + {w[1]:.3f} x | {cut:.3f} | {_flags(p, test, cut)} |")
    w = fit(np.array([[r.logit] for r in rows]), np.array([float(r.answers) for r in rows]))
    cut = line(predict(w, rows), rows)
    print(f"\nAll queries: map {w[0]:.3f} + {w[1]:.3f} x, line {cut:.3f}; held-out flags at "
          f"each fold's own line above. At the all-data line on held-out predictions: "
          f"{_flags(held, rows, cut)}.\n")  # fmt: skip
    old = np.array([1 / (1 + math.exp(-r.logit)) for r in rows])
    shipped = np.array([first_hit_answers(float(c)) for c in old])
    print(f"Before (first hit's confidence < {WEAK}): {_flags(old, rows, WEAK)}. As shipped "
          f"(FIRST_MAP {FIRST_MAP}, line {FIRST_LINE}): {_flags(shipped, rows, FIRST_LINE)} "
          "(right first hits | answerable | no_answer flagged).\n")  # fmt: skip
    print("| predicted (held out) | queries | mean predicted | observed share answered |")
    print("| --- | ---: | ---: | ---: |")
    for lo, hi in itertools.pairwise(BINS):
        m = [i for i, p in enumerate(held) if lo <= p < hi or (hi == 1.0 and p == 1.0)]
        if m:
            obs = statistics.fmean(float(rows[i].answers) for i in m)
            print(f"| {lo:.1f}-{hi:.1f} | {len(m)} | {statistics.fmean(held[m]):.3f} | {obs:.3f} |")
    print(f"\nQueries: {len(rows)} ({sum(r.answerable for r in rows)} answerable, "
          f"{sum(r.answers for r in rows)} with a right first hit, "
          f"{sum(not r.answerable for r in rows)} no_answer) from {', '.join(names)}.")  # fmt: skip


def _flags(p: np.ndarray, rows: list[Row], cut: float) -> str:
    def share(mask: list[bool]) -> str:
        n = sum(mask)
        k = sum(1 for i, m in enumerate(mask) if m and p[i] < cut)
        return f"{k} / {n}"

    return " | ".join(
        share(m)
        for m in (
            [r.answers for r in rows],
            [r.answerable for r in rows],
            [not r.answerable for r in rows],
        )
    )


if __name__ == "__main__":
    main()
