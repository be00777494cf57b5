"""The judged vault queries' first-hit evidence, collected once for confidence tuning.

Each judged query (answerable and ``no_answer``) of both vaults runs through
``Vault.search`` (hybrid, top 10, explain); per query: whether the first hit is judged
2, the hits' confidences, the first hit's cosine and coverage, its rank in each branch,
and its fused-score gap to the second. Written as JSON lines to
``bench/.cache/confidence-rows.jsonl`` for ``tune_confidence.py --features``.

Run: ``nice -n 5 .venv/bin/python bench/confidence_rows.py [vault ...]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import CACHE, SHARED
from judged_set import VAULTS, load_judged
from vault_quality import judged_vault
from vaultsearch.config import load_config

ROWS = CACHE / "confidence-rows.jsonl"


def rows_of(name: str, work: Path) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    with judged_vault(name, work, load_config(None)) as vault:
        for q in load_judged(name):
            hits = vault.search(q.query, top_k=10, explain=True)
            first = hits[0] if hits else None
            e = first.explain if first else None
            ranks = {p.branch: p.rank for p in e.branches} if e else {}
            out.append({
                "vault": name, "id": q.id, "kind": q.kind, "answerable": q.answered,
                "answers": bool(first and q.answered and q.judgments.get(first.path, 0) == 2),
                "confidences": [h.confidence for h in hits],
                "scores": [h.score for h in hits],
                "cosine": e.cosine if e else None, "coverage": e.coverage if e else 0.0,
                "ranks": ranks,
            })  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("vaults", nargs="*", default=None)
    args = parser.parse_args()
    names = args.vaults or [v for v in VAULTS if (SHARED / "vaults" / v).is_dir()]
    with tempfile.TemporaryDirectory(prefix="vs-conf-rows-") as tmp:
        rows = [r for n in names for r in rows_of(n, Path(tmp) / n)]
    ROWS.parent.mkdir(parents=True, exist_ok=True)
    ROWS.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(rows)} rows -> {ROWS}")


if __name__ == "__main__":
    main()
