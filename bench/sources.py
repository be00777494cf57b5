"""Named sources end to end: one index over a vault, a code folder and a git URL.

The vault is a copy of this repository's docs/ plus a PDF made here, the folder source
is its src/ (Python files through the code parser when one is registered, else the
text parser), and the git source is a fresh repository holding its tests/, reached
through a file:// URL to a bare clone. Then: the 20 plain-words code queries of
bench/code_queries.jsonl over the whole index (is the described function's qualified
name in the top 3?) and a question answered by a PDF page; a commit changing one
function, and what the next run embeds; the git source removed, and what `check`
says; per-source counts from `status`.

Run: `make bench-sources` (or `.venv/bin/python bench/sources.py`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import ROOT, write_section
from code_search import load_queries, qualified

sys.path.insert(0, str(ROOT))
from tests.pdfs import make_pdf

from vaultsearch import Vault
from vaultsearch.parsers import ParserRegistry
from vaultsearch.sourceconfig import source_from_table
from vaultsearch.store.embedcache import CACHE_ENV

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.org",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.org",
}
CHANGED_FILE = "test_fusion.py"
PDF_PAGES = [
    ["Field notes on the northern orchard", "Planting plan for the spring season."],
    ["Irrigation schedule", "The drip lines run at dawn for forty minutes every second day,",
     "and the reservoir is refilled from the rain barrels on Sundays."],
    ["Harvest log", "Apples were picked in the last week of September."],
]  # fmt: skip
PDF_QUESTION = "how long do the drip lines run in the morning"


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, check=True
    )
    return done.stdout


def code_parser() -> str:
    return "code" if "code" in ParserRegistry().known_parsers() else "text"


def setup(base: Path) -> tuple[Path, Path, Path]:
    vault = base / "vault"
    shutil.copytree(ROOT / "docs", vault)
    (vault / "orchard.pdf").write_bytes(make_pdf(PDF_PAGES, title="Orchard field notes"))
    work = base / "lib-work"
    shutil.copytree(ROOT / "tests", work, ignore=shutil.ignore_patterns("__pycache__"))
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "tests as a library")
    bare = base / "lib.git"
    git(base, "clone", "-q", "--bare", str(work), str(bare))
    parser = code_parser()
    cfg = vault / ".vaultsearch" / "config.toml"
    cfg.parent.mkdir(exist_ok=True)
    code = base / "src"  # a copy: edits to the working tree during a run do not count
    shutil.copytree(ROOT / "src", code, ignore=shutil.ignore_patterns("__pycache__"))
    cfg.write_text(
        f'[[sources]]\nname = "src"\npath = "{code}"\ninclude = ["*.py"]\n'
        f'[sources.parsers]\n"**/*.py" = "{parser}"\n',
        encoding="utf-8",
    )
    return vault, work, bare


def add_lib(vault: Vault, bare: Path) -> None:
    """As `vaultsearch sources add lib URL --branch main --parser ...` does."""
    table = {"name": "lib", "type": "git", "url": bare.as_uri(), "branch": "main"}
    vault.add_source(source_from_table({**table, "parsers": {"**/*.py": code_parser()}}, "", 0))


def change_one_function(work: Path, bare: Path) -> str:
    """Add a line to the body of the file's first test function; push the commit."""
    path = work / CHANGED_FILE
    text = path.read_text(encoding="utf-8")
    m = re.search(r"^def (test_\w+)\(.*?\).*?:\n", text, re.M | re.S)
    assert m, f"no test function in {CHANGED_FILE}"
    line = "    # changed by bench/sources.py: one function, one commit\n"
    path.write_text(text[: m.end()] + line + text[m.end() :], encoding="utf-8")
    git(work, "commit", "-qam", f"change {m[1]}")
    git(work, "push", "-q", str(bare), "main")
    return m[1]


def per_source(vault: Vault) -> dict[str, dict[str, object]]:
    return {r["name"]: r for r in vault.sources()}


def main() -> None:
    base = Path(tempfile.mkdtemp(prefix="vaultsearch-bench-sources-"))
    os.environ[CACHE_ENV] = str(base / "embedding-cache")  # every embedding counted, none cached
    try:
        vault_dir, work, bare = setup(base)
        vault = Vault.open(vault_dir)
        add_lib(vault, bare)
        t = time.perf_counter()
        first = vault.index()
        first_s = time.perf_counter() - t
        before = per_source(vault)
        queries = load_queries()
        ranked = [[qualified(h) for h in vault.search(q["query"], top_k=3)] for q in queries]
        pdf_hits = vault.search(PDF_QUESTION, top_k=3)

        function = change_one_function(work, bare)
        snap = vault.orchestrator.snapshot()
        file_chunks = len(snap.chunks_by_note[snap.note_by_path[f"lib:{CHANGED_FILE}"]])
        total_chunks = len(snap.note_of_chunk)
        t = time.perf_counter()
        second = vault.index()
        second_s = time.perf_counter() - t
        load_after_update = os.getloadavg()

        t = time.perf_counter()
        removed = vault.remove_source("lib")
        remove_s = time.perf_counter() - t
        report = vault.manager().verify()
        snap = vault.orchestrator.snapshot()
        left = [p for p in snap.note_by_path if p.startswith("lib:")]
        nodes = [n for n in snap.reader("graph").graph.nodes if str(n).startswith("lib:")]
        after = per_source(vault)
        counts = report.counts
        vault.close()
        load = os.getloadavg()
    finally:
        shutil.rmtree(base, ignore_errors=True)

    top1 = sum(1 for q, r in zip(queries, ranked, strict=True) if r[:1] == [q["expected"]])
    top3 = sum(1 for q, r in zip(queries, ranked, strict=True) if q["expected"] in r)
    misses = [
        f"{q['query']!r} (expected `{q['expected']}`, top hit `{r[0] if r else '(none)'}`)"
        for q, r in zip(queries, ranked, strict=True)
        if q["expected"] not in r
    ]
    pdf_top = (
        f"`{pdf_hits[0].path}` page {pdf_hits[0].page} (kind {pdf_hits[0].kind})"
        if pdf_hits
        else "(none)"
    )
    rows = "\n".join(
        f"| {name} | {r['type']} | {r['files']} | {r['chunks']} | {r['failed']} |"
        for name, r in before.items()
    )
    body = f"""
One index over three sources: the vault (a copy of `docs/`), `src` (a folder source:
a copy of this repository's `src/`, `*.py` only, parser `{code_parser()}`) and `lib` (a git
source: a fresh repository holding `tests/`, cloned from a bare repository through a
`file://` URL). Load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1/5/15 min)
at the end, {load_after_update[0]:.2f} after the update run; the machine was shared
with other work, so the seconds are noisy, the counts are not.

**First index** of all three, with an empty embedding cache: {first.added} files,
{first.chunks_written} chunks ({first.chunks_embedded} embedded), {first_s:.1f} s;
failed {len(first.failed)}. Per source (`vaultsearch sources list`):

| source | type | files | chunks | failed |
| --- | --- | --- | --- | --- |
{rows}

**Code questions over the whole index** (all three sources and the PDF, unscoped, hybrid,
top 3): the 20 queries of `bench/code_queries.jsonl` (plain words describing what one
function of `src/` does, written before the first run) find the expected fully qualified
name in the top 3 for **{top3} of {len(queries)}** (top 1: {top1}; goal ≥ 16).
{("Misses: " + "; ".join(misses) + ".") if misses else "No misses."}
The question "{PDF_QUESTION}" ranks {pdf_top} first (the irrigation schedule is on page 2).

**A commit changing one function** (`{function}` in `{CHANGED_FILE}`, one line added),
pushed to the bare repository, then `vaultsearch index`: the run fetched, read
{second.updated} changed file ({second.unchanged} unchanged) and embedded
**{second.chunks_embedded} of the file's {file_chunks} chunks** (the index holds
{total_chunks}), in {second_s:.1f} s: only chunks whose text changed are embedded, the
file's other chunks keep their vectors.

**Removing the git source** (`vaultsearch sources remove lib`): {removed.removed} files
removed in {remove_s:.1f} s; `check` {"consistent" if report.ok else "INCONSISTENT"}
({", ".join(f"{k} {v}" for k, v in counts.items())}){"" if report.ok else ": " + "; ".join(report.problems)};
notes left with a `lib:` id: {len(left)}, graph nodes: {len(nodes)}; sources left:
{", ".join(f"{n} ({r['files']} files, {r['chunks']} chunks)" for n, r in after.items())}.
"""
    write_section("sources", "Named sources", body)


if __name__ == "__main__":
    main()
