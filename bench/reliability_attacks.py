"""Reliability against attacks: every ``bench/attack_*.py`` module in one table.

Each module runs its hostile cases against the real product (subprocess servers, real
git, real files) and returns one row a case; this script runs them one after the other,
each in a fresh temp folder, and writes the table into docs/benchmarks.md, section
"Reliability: attacks". A module that raises is a row that failed, never a lost table.

    python bench/reliability_attacks.py [--only git_wire,writes] [--race-seconds 180]
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section

TOPICS = {
    "git_wire": "Git sources and the wire",
    "writes": "Writes confined to the vault",
    "parse_budget": "Parsers and templates within budgets",
    "repair": "Damage, repair and degraded answers",
}


def _cell(value: Any) -> str:
    """A table cell of hostile text: no pipe, line end or '[[' may read as Markdown."""
    return str(value).replace("|", "\\|").replace("\n", " ").replace("[", "\\[")


def run_topic(topic: str, options: dict[str, Any]) -> tuple[list[dict[str, Any]], float]:
    module = importlib.import_module(f"attack_{topic}")
    accepted = inspect.signature(module.run).parameters
    extra = {k: v for k, v in options.items() if k in accepted}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"vs-attack-{topic}-") as tmp:
        try:
            rows = list(module.run(Path(tmp), **extra))
        except Exception:
            rows = [
                {
                    "surface": topic,
                    "case": "the module itself",
                    "expected": "runs to the end",
                    "observed": traceback.format_exc().strip().splitlines()[-1],
                    "ok": False,
                }
            ]
    return rows, time.perf_counter() - started


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| surface | case | expected | observed | ok |", "| --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(
            f"| {_cell(r['surface'])} | {_cell(r['case'])} | {_cell(r['expected'])} "
            f"| {_cell(r['observed'])} | {'✅' if r['ok'] else '❌'} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated topics: " + ", ".join(TOPICS))
    parser.add_argument("--race-seconds", type=float, default=180.0)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    topics = [t for t in args.only.split(",") if t] or list(TOPICS)
    unknown = sorted(set(topics) - set(TOPICS))
    if unknown:
        parser.error(f"unknown topic(s) {', '.join(unknown)}; choose from {', '.join(TOPICS)}")
    sections, total, failed = [], 0, 0
    for topic in topics:
        rows, seconds = run_topic(topic, {"seconds": args.race_seconds})
        bad = sum(1 for r in rows if not r["ok"])
        total += len(rows)
        failed += bad
        sections.append(
            f"### {TOPICS[topic]} ({len(rows) - bad} of {len(rows)} as expected, {seconds:.0f} s)"
            f"\n\nCommand: `python bench/attack_{topic}.py`.\n\n{table(rows)}"
        )
        print(f"{topic}: {len(rows) - bad} of {len(rows)} ok in {seconds:.0f} s", flush=True)
    body = (
        f"**{total - failed} of {total} hostile cases as expected.** Every case runs against the "
        "real product: git on real repositories, MCP and REST servers in their own processes, "
        "files written by the real tool layer while another process attacks them.\n\n"
        + "\n\n".join(sections)
    )
    if args.no_write or args.only:
        print(body)
    else:
        write_section(
            "reliability-attacks",
            "Reliability: attacks",
            body,
            "make bench-reliability-attacks",
        )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
