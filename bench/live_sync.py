"""Live sync across processes: from writing a note to finding it in another process.

A writer process runs `vaultsearch watch` (default debounce) on a private copy of the
vault; this process edits notes and searches (keyword mode, as a second MCP server or
a CLI search would) until the unique token it wrote comes back. Then it renames a
folder of about 100 notes and checks that nothing was embedded again.

Run: `make bench-live` (or `.venv/bin/python bench/live_sync.py [--edits N]`).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import SHARED, percentile, prepared_vault, require, write_section
from vaultsearch import Vault
from vaultsearch.store.catalog import Catalog
from vaultsearch.store.layout import IndexLayout

RUN_LINE = re.compile(
    r"indexed: (\d+) added, (\d+) updated, (\d+) moved, (\d+) removed, (\d+) failed, "
    r"(\d+) chunks embedded, ([\d.]+) s"
)
TIMEOUT = 60.0


class Writer:
    """`vaultsearch watch` in its own process, its stderr kept for its run lines."""

    def __init__(self, vault_dir: Path, index_dir: Path, log: Path) -> None:
        self.log = log
        cmd = [sys.executable, "-m", "vaultsearch.cli", "watch", str(vault_dir)]
        with log.open("wb") as fh:
            self.proc = subprocess.Popen(
                [*cmd, "--index-dir", str(index_dir)], stdout=subprocess.DEVNULL, stderr=fh
            )

    def runs(self) -> list[tuple[int, ...]]:
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return [tuple(int(g) for g in m.groups()[:6]) for m in RUN_LINE.finditer(text)]

    def seconds(self) -> list[float]:
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return [float(m.group(7)) for m in RUN_LINE.finditer(text)]

    def wait_for_runs(self, n: int) -> None:
        deadline = time.monotonic() + TIMEOUT * 5
        while len(self.runs()) < n:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"the writer stopped or stalled:\n{self.log.read_text()}")
            time.sleep(0.05)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)


def found(reader: Vault, token: str, path: str) -> bool:
    return path in [h.path for h in reader.search(token, mode="keyword", top_k=5)]


def time_until_found(reader: Vault, token: str, path: str, t0: float) -> float:
    while time.perf_counter() - t0 < TIMEOUT:
        if found(reader, token, path):
            return time.perf_counter() - t0
        time.sleep(0.005)
    raise SystemExit(f"{token} was not found in {path} within {TIMEOUT:.0f} s")


def embeddings(index_dir: Path) -> int:
    catalog = Catalog(IndexLayout(index_dir).live.catalog, readonly=True)
    try:
        return catalog.count("embeddings")
    finally:
        catalog.close()


def committed_paths(index_dir: Path) -> set[str]:
    """The paths of the published generation (published whole, derived indexes too)."""
    live = IndexLayout(index_dir).current()
    if live is None:
        return set()
    catalog = Catalog(live.catalog, readonly=True)
    try:
        return set(catalog.file_states())
    finally:
        catalog.close()


def folder_of_about(notes: list[str], size: int) -> tuple[str, int]:
    """The folder whose notes (at any depth) number closest to ``size``."""
    counts: Counter[str] = Counter()
    for n in notes:
        parts = n.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            counts["/".join(parts[:i])] += 1
    return min(counts.items(), key=lambda kv: (abs(kv[1] - size), kv[0]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", nargs="?", default=str(SHARED / "vaults" / "vaultofknowledge"))
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    source = require(Path(args.vault))
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="vs-bench-live-"))
    writer: Writer | None = None
    try:
        with prepared_vault(source.name, source, work) as prepared:
            notes = sorted(prepared.manager().scan())
        vault_dir, index_dir = work / "vault", work / "index"
        writer = Writer(vault_dir, index_dir, work / "watch.log")
        writer.wait_for_runs(1)
        reader = Vault.open(vault_dir, index_dir=index_dir)

        # the writer loads the model on its first new chunk: not part of the figure
        warm = vault_dir / notes[0]
        warm.write_text(warm.read_text(encoding="utf-8") + "\n\nwarmuptoken\n", encoding="utf-8")
        time_until_found(reader, "warmuptoken", notes[0], time.perf_counter())

        latencies: list[float] = []
        kinds: Counter[str] = Counter()
        for k in range(args.edits):
            time.sleep(rng.uniform(0.3, 0.6))
            token = f"livesync{k}x{rng.randrange(10**6)}"
            if k % 5 == 4:  # every fifth edit writes a new note
                folder = rng.choice(notes).rpartition("/")[0]
                rel = f"{folder}/Live note {k}.md".lstrip("/")
                content = f"# Live note {k}\n\nWritten by the benchmark: {token}.\n"
                kinds["new note"] += 1
            else:
                rel = rng.choice(notes)
                content = (vault_dir / rel).read_text(encoding="utf-8") + f"\n\nEdited: {token}.\n"
                kinds["edited note"] += 1
            t0 = time.perf_counter()
            (vault_dir / rel).write_text(content, encoding="utf-8")
            latencies.append(time_until_found(reader, token, rel, t0))
        run_seconds = writer.seconds()[2:]

        folder, _ = folder_of_about(notes, 100)
        size = sum(1 for n in reader.manager().scan() if n.startswith(folder + "/"))
        time.sleep(1.0)
        before_runs, before_cache = len(writer.runs()), embeddings(index_dir)
        target = f"{folder.rpartition('/')[0]}/{folder.rpartition('/')[2]} renamed".lstrip("/")
        moved_note = next(n for n in notes if n.startswith(folder + "/"))
        t0 = time.perf_counter()
        (vault_dir / folder).rename(vault_dir / target)
        new_path = target + moved_note[len(folder) :]
        while new_path not in committed_paths(index_dir):
            if time.perf_counter() - t0 > TIMEOUT:
                raise SystemExit("the renamed folder was never indexed")
            time.sleep(0.01)
        rename_seconds = time.perf_counter() - t0
        writer.wait_for_runs(before_runs + 1)
        time.sleep(1.5)  # any further run would show here
        rename_runs = writer.runs()[before_runs:]
        after_cache = embeddings(index_dir)
        load = os.getloadavg()[1]
        reader.close()
        code = writer.stop()
        writer = None
    finally:
        if writer is not None:
            writer.stop()
        shutil.rmtree(work, ignore_errors=True)

    added, updated, moved, removed, failed, embedded = (
        sum(r[i] for r in rename_runs) for i in range(6)
    )
    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    body = f"""
Vault: `{source.name}` ({len(notes)} note files), a private copy. Writer: `vaultsearch watch`
in its own process, default debounce (500 ms). Reader: this process, `Vault.search(token,
mode="keyword")` polled every 5 ms until the note holding the token it just wrote comes
back. {args.edits} writes ({kinds["edited note"]} appended a line to an existing note,
{kinds["new note"]} created a note), 0.3–0.6 s apart, after one untimed warm-up edit (the
writer loads the model on its first new chunk).

| write → found in another process | seconds |
| --- | ---: |
| p50 | {p50:.2f} |
| p95 | {p95:.2f} |
| min / max | {min(latencies):.2f} / {max(latencies):.2f} |
| writer's index run (p50 of its own timing) | {percentile(run_seconds, 50):.2f} |

The floor is the debounce: the writer waits 500 ms of quiet after the last event, then
indexes only the paths the events named; the reader opens the new generation on its
next search after the state file changes.

Renaming `{folder}/` ({size} notes) to `{target}/`: {len(rename_runs)} index run(s),
{moved} moved, {added} added, {removed} removed, {updated} updated, {failed} failed,
**{embedded} chunks embedded**; the catalog's embedding cache went from {before_cache} to
{after_cache} entries; the rename was committed {rename_seconds:.2f} s after it happened. Writer exit code on SIGTERM: {code}.

Load average over the last 5 minutes of the run: {load:.1f} on {os.cpu_count()} cores (other
jobs share this machine; the latencies are from that state).
"""
    write_section("live", "Live sync", body)


if __name__ == "__main__":
    main()
