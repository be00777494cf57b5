"""Shared by the bench scripts: where the data is, and writing results into docs.

Each script owns one marked section of docs/benchmarks.md and rewrites only that,
stamped with the machine and the date, so results from separate runs sit together.
"""

from __future__ import annotations

import os
import platform
import re
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
DOC = ROOT / "docs" / "benchmarks.md"


def require(path: Path) -> Path:
    if not path.exists():
        print(f"skipped: {path} is not here (the shared data sits beside the repo)")
        sys.exit(0)
    return path


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return f"{os.cpu_count()} cores ({cpu}){mem}, Python {platform.python_version()}, no GPU"


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def write_section(name: str, title: str, body: str, command: str | None = None) -> None:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    block = (
        f"<!-- bench:{name} -->\n## {title}\n\n"
        f"Measured {stamp} on {machine()}. Command: `{command or f'make bench-{name}'}`. "
        f"Load average (1, 5, 15 min) when it finished: {load}.\n\n"
        f"{body.strip()}\n<!-- /bench:{name} -->"
    )
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else _doc_header()
    pattern = re.compile(rf"<!-- bench:{name} -->.*?<!-- /bench:{name} -->", re.S)
    text = (
        pattern.sub(lambda _: block, text)
        if pattern.search(text)
        else text.rstrip() + "\n\n" + block + "\n"
    )
    DOC.write_text(text, encoding="utf-8")
    print(block)


def _doc_header() -> str:
    return (
        "---\ntitle: Benchmarks\ntags: [benchmarks, reference]\n---\n# Benchmarks\n\n"
        "Every figure here is written by a script in `bench/` (see [[Architecture]] for what\n"
        "is measured). Timings are on the machine named in each section; comparisons are\n"
        "made in one run so that they are ratios on the same machine state.\n"
    )


CACHE = ROOT / "bench" / ".cache"


def prepared_vault(name: str, source: Path, work: Path, **vault_kwargs: object):  # type: ignore[no-untyped-def]
    """A private copy of ``source`` with a current index, fast after the first time.

    The catalog (with its embeddings) of an earlier run is kept in bench/.cache/;
    put where an index from before generations kept it, the first build reuses its
    embeddings instead of the model.
    """
    import shutil

    from vaultsearch import Vault

    vault_dir, index_dir = work / "vault", work / "index"
    shutil.copytree(source, vault_dir)
    cached = CACHE / name / "catalog.sqlite"
    if cached.is_file():
        index_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy2(cached, index_dir / "catalog.sqlite")
    vault = Vault.open(vault_dir, index_dir=index_dir, **vault_kwargs)  # type: ignore[arg-type]
    vault.index()
    if not cached.is_file():
        import sqlite3

        cached.parent.mkdir(parents=True, exist_ok=True)
        src = sqlite3.connect(vault.layout.live.catalog)
        dst = sqlite3.connect(cached)
        src.backup(dst)
        src.close()
        dst.close()
    return vault
