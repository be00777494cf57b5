"""A first build from nothing: seconds until a search first answers, and until the build
is complete, for the code before (a git ref, ``main`` by default) and this tree, in one
run. A timing bench: run it on an idle machine.

Run: `.venv/bin/python bench/first_build.py [--vault DIR] [--before main] [--notes N]`.

Each side indexes the same vault (default: the shared vaultofknowledge) into an empty
index folder with an empty per-user embedding cache, so every text is embedded, as on a
new machine: `vaultsearch index` in one process while a second process, started at the
same moment, searches every 0.2 s until a search returns a hit (the time to the first
searchable answer). The side's code is its own ``src`` tree: the ref's is taken with
`git archive` (the repository is only read). ``--notes N`` indexes the first N notes
only, for a shorter run. Prints a table and the figures as JSON; writes no doc.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
QUERY = "how do I organise my notes"

POLLER = """
import sys, time
from pathlib import Path
from vaultsearch import Vault
from vaultsearch.errors import VaultsearchError
vault = Vault.open(Path(sys.argv[1]), index_dir=Path(sys.argv[2]))
vault.embedder.embed_query("warm up")  # the model is loaded before the build starts
print("ready", flush=True)
while True:
    try:
        if vault.search(sys.argv[3], top_k=1):
            print(time.time(), flush=True)
            break
    except VaultsearchError:
        pass
    time.sleep(0.2)
"""


def tree_of(ref: str, work: Path) -> Path:
    """The ``src`` folder of ``ref`` (read with ``git archive``), or this tree's."""
    if ref == "HEAD+":
        return ROOT / "src"
    target = work / f"src-{ref.replace('/', '_')}"
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref, "src"],
        check=True,
        capture_output=True,
    ).stdout
    target.mkdir(parents=True)
    tar_path = work / "src.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(target, filter="data")
    return target / "src"


def copy_vault(source: Path, target: Path, notes: int | None) -> int:
    """The vault, or its first ``notes`` Markdown files (sorted by path)."""
    if notes is None:
        shutil.copytree(source, target)
        return sum(1 for _ in target.rglob("*.md"))
    files = sorted(p for p in source.rglob("*.md") if not any(
        part.startswith(".") for part in p.relative_to(source).parts
    ))[:notes]  # fmt: skip
    for path in files:
        dest = target / path.relative_to(source)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest)
    return len(files)


def one_build(label: str, src: Path, vault: Path, work: Path, query: str) -> dict[str, object]:
    index_dir, cache = work / f"index-{label}", work / f"cache-{label}"
    env = {
        **os.environ,
        "PYTHONPATH": str(src),
        "VAULTSEARCH_CACHE_DIR": str(cache),
        "HF_HUB_OFFLINE": "1",
    }
    poller = subprocess.Popen(
        [sys.executable, "-c", POLLER, str(vault), str(index_dir), query],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert poller.stdout is not None
    assert poller.stdout.readline().strip() == "ready", "the poller did not start"
    t0 = time.time()
    build = subprocess.Popen(
        [sys.executable, "-m", "vaultsearch.cli", "index", str(vault), "--index-dir",
         str(index_dir), "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip
    stage_two = None
    while build.poll() is None:
        if stage_two is None:
            try:
                run = json.loads((index_dir / "run.json").read_text(encoding="utf-8"))
                if run.get("stage") == 2:
                    stage_two = time.time() - t0
            except (OSError, ValueError):
                pass
        time.sleep(0.2)
    complete = time.time() - t0
    out, _ = build.communicate()
    answered = float(poller.stdout.readline().strip()) - t0
    poller.wait(60)
    summary = json.loads(out)
    return {
        "side": label,
        "first_answer_s": round(answered, 1),
        "stage_1_done_s": None if stage_two is None else round(stage_two, 1),
        "complete_s": round(complete, 1),
        "notes": summary["counts"]["notes"],
        "chunks": summary["counts"]["chunks"],
        "sentences": summary["counts"]["sentences"],
        "texts_embedded": summary["chunks_embedded"] + summary["sentences_embedded"],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vault", type=Path, default=SHARED / "vaults" / "vaultofknowledge")
    parser.add_argument("--before", default="main", help="the git ref of the code before")
    parser.add_argument("--notes", type=int, help="index only the first N notes")
    parser.add_argument("--query", default=QUERY)
    args = parser.parse_args()
    if not args.vault.is_dir():
        sys.exit(f"no vault at {args.vault}")
    work = Path(tempfile.mkdtemp(prefix="vs-bench-first-build-"))
    try:
        vault = work / "vault"
        count = copy_vault(args.vault, vault, args.notes)
        load = os.getloadavg()
        rows = [
            one_build("before", tree_of(args.before, work), vault, work, args.query),
            one_build("after", tree_of("HEAD+", work), vault, work, args.query),
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    end = os.getloadavg()
    print(f"{args.vault.name}: {count} files; before = {args.before}, after = this tree")
    print(f"load average at start {load[0]:.2f}, at end {end[0]:.2f}")
    print("| side | first answer (s) | stage 1 done (s) | complete (s) | notes | chunks | "
          "sentences | texts embedded |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['side']} | {r['first_answer_s']} | {r['stage_1_done_s'] or '–'} | "
            f"{r['complete_s']} | {r['notes']} | {r['chunks']} | {r['sentences']} | "
            f"{r['texts_embedded']} |"
        )
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
