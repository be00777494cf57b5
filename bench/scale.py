"""How the store grows: the same measures at several vault sizes, and their exponents.

The vault is vaultofknowledge (shared data) copied K times under unique folder names
(``copy00/``, ``copy01/``, ...) into a temp folder outside the repository. Copies hold
the same texts, so after the first copy every chunk's embedding comes from the
per-user embedding cache: the curve measures the store, not the model (the build's
``embedded`` column says how many texts the model did embed).

At each size: the build's time, CPU, peak RSS and bytes written (the kernel's count,
``/proc/<pid>/io`` ``write_bytes`` of the indexing process); the index's size per chunk;
a one-note edit, applied by a long-lived writer process the way ``watch`` does
(``update(paths=[the note])``), with the bytes it wrote (kernel count, and the bytes of
the files it created) and the time until a search in another, already open process
finds the edit (median of ``--edits``); warm hybrid, keyword and semantic p50/p95 in
that reader; the RSS of a fresh process after one hybrid search, of an idle MCP server
after one search, and the peak RSS of a cold ``vaultsearch status``. The exponent of
each measure against chunks is the slope of a least-squares line in log-log.

Timings on a loaded machine are inflated (the load is printed); bytes are not.

Run: ``.venv/bin/python bench/scale.py --sizes 1,5`` (sizes are numbers of copies).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child import LineChild
from _report import SHARED, percentile, require, write_section

SOURCE = SHARED / "vaults" / "vaultofknowledge"
EDITED_COPY = "copy00"
MB = 1024 * 1024
HANG_GUARD = 600.0


def _io_written() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    return 0


def _rss_mb(field: str = "VmRSS:") -> float:
    """VmRSS counts the pages of mapped vector segments a search touched, which the
    kernel may drop at any time; RssAnon is the process's own memory."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    return float("nan")


def _say(data: dict[str, Any]) -> None:
    print(json.dumps(data), flush=True)


# --- child processes ------------------------------------------------------------------
def child_build(vault: str, index_dir: str) -> None:
    from vaultsearch import Vault

    t0, cpu0, io0 = time.perf_counter(), time.process_time(), _io_written()
    with Vault.open(Path(vault), index_dir=Path(index_dir)) as v:
        summary = v.index()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    _say(
        {
            "seconds": time.perf_counter() - t0,
            "cpu": time.process_time() - cpu0,
            "written": _io_written() - io0,
            "peak_rss": usage.ru_maxrss / 1024,
            "embedded": summary.chunks_embedded + summary.sentences_embedded,
            "chunks": summary.chunks_written,
        }
    )


def child_writer(vault: str, index_dir: str) -> None:
    """Applies one edit per line on stdin, as the watcher does, and says what it wrote."""
    from vaultsearch import Vault

    with Vault.open(Path(vault), index_dir=Path(index_dir)) as v:
        manager = v.manager()
        # as LiveIndex sets up the manager of ``watch`` and ``mcp``: the parse child is
        # kept from run to run (else every edit started a Python child) and sentences
        # of a large run are left to steps between updates
        manager.keep_parse_child = True
        manager.defer_sentences = True
        _say({"ready": True})
        for line in sys.stdin:
            io0, t0 = _io_written(), time.perf_counter()
            summary = manager.update(paths=[line.strip()])
            _say(
                {
                    "written": _io_written() - io0,
                    "seconds": time.perf_counter() - t0,
                    "updated": summary.updated,
                }
            )


def child_reader(vault: str, index_dir: str) -> None:
    """A process that already searches: polls for each edit's token, then times queries."""
    from vaultsearch import Vault

    with Vault.open(Path(vault), index_dir=Path(index_dir)) as v:
        v.search("warm up")
        _say({"ready": True})
        for line in sys.stdin:
            cmd = json.loads(line)
            if cmd["do"] == "find":
                while not any(
                    h.path == cmd["path"] for h in v.search(cmd["token"], mode="keyword")
                ):
                    if time.monotonic() - cmd["t0"] > HANG_GUARD:
                        raise SystemExit(f"{cmd['token']} not found in {HANG_GUARD} s")
                    time.sleep(0.01)
                _say({"seconds": time.monotonic() - cmd["t0"]})
            else:
                notes = sorted(v.orchestrator.snapshot().notes.values(), key=lambda m: m.path)
                rng = random.Random(7)
                queries = [m.title for m in rng.sample(notes, min(len(notes), 200))]
                queries = [q for q in queries if q.strip()][: cmd["n"]]
                out = {}
                for mode in ("hybrid", "keyword", "semantic"):
                    v.search(queries[0], mode=mode)
                    times = []
                    for q in queries:
                        t = time.perf_counter()
                        v.search(q, top_k=10, mode=mode)
                        times.append((time.perf_counter() - t) * 1000)
                    out[mode] = (percentile(times, 50), percentile(times, 95))
                _say(out)


def child_one_search(vault: str, index_dir: str) -> None:
    from vaultsearch import Vault

    with Vault.open(Path(vault), index_dir=Path(index_dir)) as v:
        v.search("how to take notes")
        _say({"rss": _rss_mb(), "anonymous": _rss_mb("RssAnon:")})


CHILDREN = {
    "build": child_build,
    "writer": child_writer,
    "reader": child_reader,
    "one-search": child_one_search,
}


# --- the parent -------------------------------------------------------------------------
class Child(LineChild):
    def __init__(self, role: str, vault: Path, index_dir: Path) -> None:
        super().__init__(
            [sys.executable, __file__, "--child", role, str(vault), str(index_dir)], wait=120
        )
        self.rusage: Any = None


def _run_once(role: str, vault: Path, index_dir: Path) -> dict[str, Any]:
    child = Child(role, vault, index_dir)
    try:
        return child.ask()
    finally:
        child.close()


def _cold_status_rss(vault: Path, index_dir: Path) -> float:
    cmd = [sys.executable, "-m", "vaultsearch.cli", "status", str(vault)]
    proc = subprocess.Popen(
        [*cmd, "--index-dir", str(index_dir), "--json"], stdout=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise RuntimeError(f"status failed ({proc.returncode})")
    return float(usage.ru_maxrss) / 1024


def _files(folder: Path) -> dict[int, int]:
    out = {}
    for p in folder.rglob("*"):
        try:
            st = p.lstat()
        except OSError:
            continue
        if p.is_file():
            out[st.st_ino] = st.st_size
    return out


def _make_vault(work: Path, copies: int) -> Path:
    vault = work / "vault"
    for i in range(copies):
        shutil.copytree(SOURCE, vault / f"copy{i:02d}")
    return vault


def _edited_note(vault: Path) -> Path:
    notes = sorted((vault / EDITED_COPY).rglob("*.md"), key=lambda p: p.stat().st_size)
    return notes[len(notes) // 2]  # a note of median size


def measure(
    copies: int, edits: int, queries: int, keep: bool, reuse: Path | None = None
) -> dict[str, Any]:
    """One size's row; with ``reuse`` (a folder kept by ``--keep``) the build is not run
    again and its figures are those of the run that kept it (``build.json``)."""
    work = reuse or Path(tempfile.mkdtemp(prefix=f"vaultsearch-scale-{copies}-"))
    try:
        index_dir = work / "index"
        if reuse is None:
            vault = _make_vault(work, copies)
            build = _run_once("build", vault, index_dir)
            (work / "build.json").write_text(json.dumps(build), encoding="utf-8")
        else:
            vault = work / "vault"
            build = json.loads((work / "build.json").read_text(encoding="utf-8"))
        from vaultsearch.store.layout import IndexLayout

        layout = IndexLayout(index_dir)
        size = layout.size_on_disk()
        folder = sum(_files(index_dir).values())
        note = _edited_note(vault)
        rel = note.relative_to(vault).as_posix()
        original = note.read_text(encoding="utf-8")
        writer, reader = Child("writer", vault, index_dir), Child("reader", vault, index_dir)
        try:
            writer.ask()
            reader.ask()
            kernel, created, visible, runs = [], [], [], []
            for i in range(edits):
                token = f"zqscale{copies}x{i}token"
                before = _files(index_dir)
                t0 = time.monotonic()
                note.write_text(f"{original}\n\nEdited: {token}\n", encoding="utf-8")
                done = writer.ask(rel)
                seen = reader.ask(json.dumps({"do": "find", "token": token, "path": rel, "t0": t0}))
                after = _files(index_dir)
                kernel.append(done["written"])
                created.append(sum(s for ino, s in after.items() if ino not in before))
                runs.append(done["seconds"])
                visible.append(seen["seconds"])
            warm = reader.ask(json.dumps({"do": "bench", "n": queries}))
        finally:
            writer.close()
            reader.close()
        once = _run_once("one-search", vault, index_dir)
        status_rss = _cold_status_rss(vault, index_dir)
        from mcp_memory import idle_server

        idle = idle_server(vault, index_dir)
        chunks = int(build["chunks"])
        return {
            "copies": copies,
            "chunks": chunks,
            "build_s": build["seconds"],
            "build_cpu_s": build["cpu"],
            "build_peak_rss": build["peak_rss"],
            "build_written_mb": build["written"] / MB,
            "embedded": build["embedded"],
            "index_mb": size / MB,
            "index_folder_mb": folder / MB,
            "bytes_per_chunk": size / max(chunks, 1),
            "edit_written_mb": statistics.median(kernel) / MB,
            "edit_created_mb": statistics.median(created) / MB,
            "edit_run_s": statistics.median(runs),
            "edit_visible_s": statistics.median(visible),
            "edit_visible_max_s": max(visible),
            "warm": warm,
            "one_search_rss": once["rss"],
            "one_search_anon": once["anonymous"],
            "idle_server_rss": float(idle["rss"]),  # type: ignore[arg-type]
            "idle_server_anon": float(idle["anonymous"]),  # type: ignore[arg-type]
            "status_rss": status_rss,
        }
    finally:
        if keep or reuse is not None:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


FIGURES = (
    ("build_s", "build s"),
    ("build_cpu_s", "build CPU s"),
    ("build_peak_rss", "build peak RSS MB"),
    ("build_written_mb", "build wrote MB"),
    ("index_mb", "index MB"),
    ("bytes_per_chunk", "index bytes/chunk"),
    ("edit_written_mb", "edit wrote MB (kernel)"),
    ("edit_created_mb", "edit new files MB"),
    ("edit_run_s", "edit writer run s"),
    ("edit_visible_s", "edit → searchable s (median)"),
    ("hybrid_p50", "hybrid p50 ms"),
    ("hybrid_p95", "hybrid p95 ms"),
    ("keyword_p50", "keyword p50 ms"),
    ("keyword_p95", "keyword p95 ms"),
    ("semantic_p50", "semantic p50 ms"),
    ("semantic_p95", "semantic p95 ms"),
    ("one_search_rss", "RSS after one search MB"),
    ("one_search_anon", "of it anonymous (not mapped files) MB"),
    ("idle_server_rss", "idle MCP server RSS MB"),
    ("idle_server_anon", "of it anonymous MB"),
    ("status_rss", "cold status peak RSS MB"),
)


def _flat(row: dict[str, Any]) -> dict[str, float]:
    out = {k: float(v) for k, v in row.items() if isinstance(v, int | float)}
    for mode, (p50, p95) in row["warm"].items():
        out[f"{mode}_p50"], out[f"{mode}_p95"] = p50, p95
    return out


def exponent(xs: list[float], ys: list[float]) -> float:
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0]
    if len(pts) < 2:
        return float("nan")
    mx = statistics.fmean(p[0] for p in pts)
    my = statistics.fmean(p[1] for p in pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / den if den else float("nan")


def report(rows: list[dict[str, Any]], label: str, edits: int) -> str:
    flat = [_flat(r) for r in rows]
    head = " | ".join(f"{int(f['chunks']):,} chunks ({int(f['copies'])}×)" for f in flat)
    lines = [
        f"Code: {label}. Vault: vaultofknowledge copied under unique folders; embedded "
        f"texts in the builds: {', '.join(str(int(f['embedded'])) for f in flat)} (the "
        "embedding cache serves every copy after the first). Edits: median of "
        f"{edits}, applied by a long-lived writer as `watch` does. Timings inflated by "
        "the machine's load; bytes are kernel counts.",
        "",
        f"| measure | {head} | exponent |",
        "|---|" + "---:|" * (len(flat) + 1),
    ]
    chunks = [f["chunks"] for f in flat]
    for key, name in FIGURES:
        values = [f[key] for f in flat]
        cells = " | ".join(f"{v:,.1f}" if v < 1000 else f"{v:,.0f}" for v in values)
        lines.append(f"| {name} | {cells} | {exponent(chunks, values):.2f} |")
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        CHILDREN[sys.argv[2]](*sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,5", help="copies of the vault, comma-separated")
    parser.add_argument("--edits", type=int, default=10)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--label", default="this branch")
    parser.add_argument("--keep", action="store_true", help="keep the temp folders")
    parser.add_argument(
        "--reuse",
        type=Path,
        help="measure again a folder kept by --keep, without building it: alone, or as the "
        "size of --sizes it was built at (the others built), so one run fits one curve",
    )
    parser.add_argument(
        "--no-sentences",
        action="store_true",
        help="embedding.sentences = false: chunk vectors only (a cold cache embeds 6x less)",
    )
    args = parser.parse_args()
    require(SOURCE)
    if args.no_sentences:
        config = Path(tempfile.mkdtemp(prefix="vaultsearch-scale-config-")) / "config.toml"
        config.write_text("[embedding]\nsentences = false\n", encoding="utf-8")
        os.environ["VAULTSEARCH_CONFIG"] = str(config)  # every child process reads it
        args.label += " (embedding.sentences = false)"
    sizes = [int(s) for s in args.sizes.split(",")]
    kept = None
    if args.reuse is not None:
        kept = len(list((args.reuse / "vault").glob("copy*")))
        if len(sizes) > 1 and kept not in sizes:
            parser.error(f"--reuse holds {kept} copies, which --sizes does not list")
        sizes = sizes if len(sizes) > 1 else [kept]
    rows = []
    for copies in sizes:
        row = measure(
            copies, args.edits, args.queries, args.keep, args.reuse if copies == kept else None
        )
        print(json.dumps(row), flush=True)
        rows.append(row)
    if kept is not None:
        args.label += (
            f"; the {kept}-copy index reused (its build figures are those of the run that kept it)"
        )
    if len(rows) == 1 and kept is not None:  # one size of another run: the curve stays as it was
        print(report(rows, args.label, args.edits))
        return
    write_section(
        "scale",
        "Scale",
        report(rows, args.label, args.edits),
        f"python bench/scale.py --sizes {args.sizes}" + (" --reuse KEPT" if kept else ""),
    )


if __name__ == "__main__":
    main()
