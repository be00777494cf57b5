"""Bytes a command writes, by kind of index file, and its peak RSS: counts, not time,
so fine on a loaded machine.

Run: `python bench/write_bytes.py LOG -- COMMAND...` (e.g. `-- .venv/bin/vaultsearch index
VAULT --index-dir WORK/index`), or `python bench/write_bytes.py --parse LOG` for a log
already written. The command runs under `strace -f -y` (every write, pwrite64, writev
and pwritev with the path of its file descriptor, into LOG) and `/usr/bin/time -v` (the
peak RSS of the command and its children, into LOG.time). SQLite's temp files
(``etilqs_*``, unlinked as soon as opened) are a kind of their own; ``--files`` lists
the graph's and the temp files one by one.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
from pathlib import Path

CALLS = "write|pwrite64|writev|pwritev|pwritev2"
DONE = re.compile(rf"^(\d+)\s+({CALLS})\(\d+<([^>]*)>.*\)\s+=\s+(-?\d+)")
STARTED = re.compile(rf"^(\d+)\s+({CALLS})\(\d+<([^>]*)>.*<unfinished \.\.\.>")
RESUMED = re.compile(rf"^(\d+)\s+<\.\.\. ({CALLS}) resumed>.*=\s+(-?\d+)")


def kind(path: str) -> str:
    name = re.sub(r"\.[A-Za-z0-9_]{8}\.tmp$", "", path.rsplit("/", 1)[-1].lstrip("."))
    if "etilqs_" in path:
        return "SQLite temp files"
    if "/vaultsearch/embeddings.sqlite" in path:
        return "per-user embedding cache"
    if not path.startswith("/") or path.startswith(("/dev/", "/proc/")):
        return "pipes and terminals"
    if name.startswith("graph") or "/graph-parts/" in path:
        return "graph"
    if "/catalogs/" in path:
        return "catalog"
    if name.startswith("sentences"):
        return "sentence segments"
    if name.startswith("vectors"):
        return "vector segments"
    if "/keywords/" in path:
        return "Tantivy"
    return "other"


def parse(log: Path) -> collections.Counter[str]:
    """Bytes by file path."""
    by_file: collections.Counter[str] = collections.Counter()
    pending: dict[str, str] = {}
    for line in log.open(encoding="utf-8", errors="replace"):
        if m := STARTED.match(line):
            pending[m.group(1)] = m.group(3)
        elif m := DONE.match(line):
            by_file[m.group(3)] += max(0, int(m.group(4)))
        elif m := RESUMED.match(line):
            by_file[pending.pop(m.group(1), "?")] += max(0, int(m.group(3)))
    return by_file


def report(log: Path, files: bool) -> None:
    by_file = parse(log)
    by_kind: collections.Counter[str] = collections.Counter()
    for path, n in by_file.items():
        by_kind[kind(path)] += n
    print("| file | MB |\n|---|---:|")
    for k, n in by_kind.most_common():
        print(f"| {k} | {n / 1e6:.2f} |")
    steps = {p for p in by_file if p.rsplit("/", 1)[-1].startswith(".CURRENT.")}
    print(f"published generations: {len(steps)}")
    timing = log.with_name(log.name + ".time")
    if timing.is_file():
        for line in timing.read_text().splitlines():
            if "Maximum resident" in line:
                print(line.strip())
    if files:
        for path, n in by_file.most_common():
            if kind(path) in ("graph", "SQLite temp files") and n:
                print(f"{n / 1e6:10.3f} MB  {path}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--parse", action="store_true", help="only read LOG")
    parser.add_argument("--files", action="store_true")
    parser.add_argument("log", type=Path)
    parser.add_argument("command", nargs="*")
    args = parser.parse_args()
    if not args.parse:
        if not args.command:
            sys.exit("no command to run (after --)")
        subprocess.run(
            ["strace", "-f", "-qq", "-s", "0", "-y", "-e", f"trace={CALLS.replace('|', ',')}",
             "-o", str(args.log), "/usr/bin/time", "-v", "-o", f"{args.log}.time",
             *args.command],
            check=False,
        )  # fmt: skip
    report(args.log, args.files)


if __name__ == "__main__":
    main()
