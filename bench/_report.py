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

    The catalog of an earlier run is kept in bench/.cache/ with the vectors of its
    chunks and sentences (``keep_catalog``); put where an index from before generations
    kept it, the first build reuses those vectors instead of the model.
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
    if vectors_missing(cached, vault):
        keep_catalog(vault, cached)
    return vault


def _needed_hashes(vault) -> tuple[str, list[str]]:  # type: ignore[no-untyped-def]
    """(model key, the hash of every text the vault's live index holds a vector of)."""
    from vaultsearch.store.catalog import Catalog

    live = Catalog(vault.layout.live.catalog, readonly=True)
    try:
        ids = [r[0] for r in live.db.execute("SELECT id FROM chunks")]
        hashes = {r[0] for r in live.db.execute("SELECT embed_hash FROM chunks")}
        if vault.config.embedding.sentences:
            hashes.update(live.sentence_units(ids)[1])
    finally:
        live.db.close()
    return vault.embedder.cache_key, sorted(hashes)


def vectors_missing(cached: Path, vault) -> int:  # type: ignore[no-untyped-def]
    """How many of the vectors ``vault``'s index holds the catalog kept at ``cached``
    lacks (all, when there is none): an index built from it embeds that many again."""
    import sqlite3

    key, hashes = _needed_hashes(vault)
    if not cached.is_file():
        return len(hashes)
    db = sqlite3.connect(f"{cached.resolve().as_uri()}?mode=ro", uri=True)
    try:
        have = {
            r[0]
            for start in range(0, len(hashes), 500)
            for r in db.execute(
                "SELECT text_hash FROM embeddings WHERE model=? AND text_hash IN ("
                + ",".join("?" * len(hashes[start : start + 500]))
                + ")",
                (key, *hashes[start : start + 500]),
            )
        }
    finally:
        db.close()
    return len(hashes) - len(have)


def keep_catalog(vault, cached: Path) -> None:  # type: ignore[no-untyped-def]
    """``vault``'s live catalog saved at ``cached`` with the vector of every chunk and
    sentence it holds, as a catalog from before generations held them.

    A writer keeps its vectors in a temp table (``store/catalog.py``), so a plain copy
    of the catalog holds none: every index built from it (each bench run, and
    tests/test_ranking_depth.py, whose per-user cache starts empty) embedded the whole
    vault again. The vectors come from the per-user cache, where the run that built the
    index put them; one it lacks (the cache off or evicted) is left out, and that many
    are embedded again next time."""
    import sqlite3

    key, hashes = _needed_hashes(vault)
    found = vault.manager().cache.get(key, hashes)
    cached.parent.mkdir(parents=True, exist_ok=True)
    part = cached.with_name(cached.name + ".part")
    part.unlink(missing_ok=True)
    src, dst = sqlite3.connect(vault.layout.live.catalog), sqlite3.connect(part)
    try:
        src.backup(dst)
        dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, read-only too
        dst.executemany(
            "INSERT OR IGNORE INTO main.embeddings(model, text_hash, vector) VALUES (?,?,?)",
            [(key, h, v) for h, v in found.items()],
        )
        dst.commit()
    finally:
        src.close()
        dst.close()
    for side in ("-wal", "-shm"):  # an older kept catalog's, which would outlive it
        cached.with_name(cached.name + side).unlink(missing_ok=True)
    part.replace(cached)
