"""Reliability of the store: kills, rebuilds under a searching reader, damaged files,
a full disk, a read-only mount and a second user. One command:

    .venv/bin/python bench/reliability_store.py [--quick]

Everything runs on a generated vault of 300 notes with the real model, real CLI
processes and real SIGKILLs; results go to docs/benchmarks.md ("Reliability: the
store"). Needs root for the tmpfs and bind mounts; those cases say why when skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from _report import ROOT, write_section

sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.corpus import WORDS

from vaultsearch import Vault
from vaultsearch.cli.main import main as cli_main
from vaultsearch.config import Config
from vaultsearch.store.catalog import open_catalog_for_reading
from vaultsearch.store.derived import DERIVED
from vaultsearch.store.embedcache import CACHE_ENV, EmbeddingCache, default_cache_dir
from vaultsearch.store.generations import hold_current
from vaultsearch.store.layout import IndexLayout
from vaultsearch.store.verify import settings_of

QUERIES = ["river", "mountain forest", "copper lantern", "falcon", "saffron orchard",
           "glacier valley", "thunder", "marble violin", "willow harbor", "note 0042"]  # fmt: skip
DAMAGES = ("delete", "truncate", "randomise", "bitflip")
ROW_DAMAGES = ("row-text", "row-title")
"""Damage to the catalog only, inside a stored row, that every read accepts: one letter
of a chunk's text or of a note's title changes case (a flipped bit that keeps UTF-8).
SQLite checksums no row; the row's own checksum (``store/rowsums.py``) is what finds it.
The random cases found such damage only when a random byte happened to land there."""


# --- the vault and the processes ----------------------------------------------------
def note_text(i: int, version: int) -> str:
    a, b, c = WORDS[i % 20], WORDS[(i * 3 + version) % 20], WORDS[(i * 7) % 20]
    return (
        f"# Note {i:04d}\n\nNote {i:04d} is about the {a} and the {b} (version {version}).\n"
        f"It links to [[Note {(i + 1) % 300:04d}]] and [[Note {(i * 13) % 300:04d}]].\n\n"
        f"## Details\n\nThe {c} appears here, then the {a} again, and {b} once more.\n"
    )


def write_vault(root: Path, versions: dict[int, int]) -> None:
    for i, v in versions.items():
        path = root / f"folder{i % 9}" / f"Note {i:04d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note_text(i, v), encoding="utf-8")


def digests(versions: dict[int, int]) -> dict[str, str]:
    return {
        f"folder{i % 9}/Note {i:04d}.md": hashlib.sha256(note_text(i, v).encode()).hexdigest()
        for i, v in versions.items()
    }


def cli_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "vaultsearch.cli", *args]


def search_river(
    root: Path, index_dir: Path, env: dict[str, str], user: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The keyword search every probe makes: the word is in a known share of the notes."""
    args = ("search", "river", "--mode", "keyword", "--vault", str(root))
    return run_cli(*args, "--index-dir", str(index_dir), env=env, user=user)


def run_cli(
    *args: str, env: dict[str, str], user: str | None = None
) -> subprocess.CompletedProcess[str]:
    argv = cli_argv(*args)
    if user is not None:
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)


def in_process(*args: str) -> tuple[int, str, str, bool]:
    """The CLI in this process: (exit code, stdout, stderr, whether a traceback escaped)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli_main(list(args))
            crashed = False
        except BaseException:
            traceback.print_exc(file=err)
            code, crashed = 99, True
    return code, out.getvalue(), err.getvalue(), crashed or "Traceback" in err.getvalue()


@dataclass
class View:
    generation: str
    notes: dict[str, str]
    mixed: str | None


def view(index_dir: Path) -> View | None:
    """What a reader opening now gets, checked for agreement between every part."""
    hold = hold_current(IndexLayout(index_dir))
    if hold is None:
        return None
    try:
        generation = hold.generation
        settings = settings_of(generation, Config())
        catalog = open_catalog_for_reading(generation.catalog)
        try:
            notes = {p: v[1] for p, v in catalog.file_states().items()}
            chunks = set(catalog.chunk_ids())
        finally:
            catalog.close()
        readers = {cls.name: cls(generation, settings).reader() for cls in DERIVED}
        vectors = set(readers["vectors"].ids().tolist())
        keywords = set(readers["keywords"].all_chunk_ids())
        nodes = set(readers["graph"].graph.nodes)
        mixed = None
        if not chunks == vectors == keywords:
            mixed = f"chunks {len(chunks)} vectors {len(vectors)} keywords {len(keywords)}"
        elif nodes != set(notes):
            mixed = f"graph {len(nodes)} notes {len(notes)}"
        return View(generation.name, notes, mixed)
    finally:
        hold.release()


def cache_rows() -> int:
    cache = EmbeddingCache(default_cache_dir(), 1 << 40)
    try:
        return cache.count()
    finally:
        cache.close()


# --- 1. kills -----------------------------------------------------------------------
def kills(
    root: Path, index_dir: Path, env: dict[str, str], versions: dict[int, int], n: int
) -> dict[str, object]:
    rng = random.Random(9)
    timings = {}
    for kind in ("--full", "incremental"):
        for i in rng.sample(sorted(versions), 10):
            versions[i] += 1
        write_vault(root, versions)
        t = time.perf_counter()
        run_cli("index", str(root), "--index-dir", str(index_dir), "--quiet",
                *([kind] if kind == "--full" else []), env=env)  # fmt: skip
        timings[kind] = time.perf_counter() - t
    rows = []
    for k in range(n):
        kind = "--full" if k % 2 == 0 else "incremental"
        before = view(index_dir)
        for i in rng.sample(sorted(versions), 10):
            versions[i] += 1
        write_vault(root, versions)
        want = digests(versions)
        proc = subprocess.Popen(
            cli_argv("index", str(root), "--index-dir", str(index_dir), "--quiet",
                     *([kind] if kind == "--full" else [])),
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(rng.uniform(0.3, timings[kind] * 1.1))
        running = proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        half_built = len(IndexLayout(index_dir).all_generations()) > 1
        after = view(index_dir)
        if after is None or after.mixed:
            outcome = f"MIX ({after.mixed if after else 'no index'})"
        elif (
            before is not None
            and after.notes == before.notes
            and after.generation == before.generation
        ):
            outcome = "previous"
        elif after.notes == want:
            outcome = "new"
        else:
            outcome = "MIX (notes of neither)"
        rows.append({"kind": kind, "killed_running": running, "half_built_left": half_built,
                     "outcome": outcome})  # fmt: skip
        print(
            f"kill {k + 1}/{n}: {kind} running={running} half={half_built} -> {outcome}", flush=True
        )
    # the next run finishes what every killed one left (it is not killed)
    done = run_cli("index", str(root), "--index-dir", str(index_dir), "--quiet", env=env)
    final = view(index_dir)
    completed = done.returncode == 0 and final is not None and final.notes == digests(versions)
    return {"rows": rows, "timings": timings, "completed": completed and not final.mixed}  # type: ignore[union-attr]


# --- 2. a reader during full rebuilds -------------------------------------------------
READER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from vaultsearch import Vault
    root, index_dir, expected_file, stop = sys.argv[1:5]
    expected = json.loads(Path(expected_file).read_text())
    counts = {"searches": 0, "empty": 0, "partial": 0, "changed": 0, "errors": 0, "generations": set()}
    vault = Vault.open(root, index_dir=index_dir)
    while not Path(stop).exists():
        for q, want in expected.items():
            try:
                got = [h.path for h in vault.search(q, mode="keyword")]
            except Exception as exc:
                counts["errors"] += 1
                continue
            counts["searches"] += 1
            counts["generations"].add(vault.orchestrator.snapshot().generation.name)
            if got == want:
                continue
            if not got:
                counts["empty"] += 1
            elif len(got) < len(want) and set(got) <= set(want):
                counts["partial"] += 1
            else:
                counts["changed"] += 1
    counts["generations"] = len(counts["generations"])
    print(json.dumps(counts))
    """
)


def rebuilds_under_reader(
    root: Path, index_dir: Path, env: dict[str, str], work: Path, n: int
) -> dict[str, object]:
    with Vault.open(root, index_dir=index_dir) as vault:
        expected = {q: [h.path for h in vault.search(q, mode="keyword")] for q in QUERIES}
    (work / "expected.json").write_text(json.dumps(expected))
    stop = work / "stop-reader"
    stop.unlink(missing_ok=True)
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(root), str(index_dir), str(work / "expected.json"), str(stop)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    failed = 0
    t = time.perf_counter()
    for k in range(n):
        done = run_cli(
            "index", str(root), "--index-dir", str(index_dir), "--full", "--quiet", env=env
        )
        failed += done.returncode != 0
        print(f"rebuild {k + 1}/{n}", flush=True)
    seconds = time.perf_counter() - t
    stop.touch()
    out, err = reader.communicate(timeout=600)
    counts = (
        json.loads(out.strip().splitlines()[-1]) if out.strip() else {"reader_failed": err[-500:]}
    )
    return {"rebuilds": n, "failed_rebuilds": failed, "seconds": round(seconds, 1), **counts}


# --- 3. damage ----------------------------------------------------------------------
def replace_bytes(path: Path, data: bytes) -> None:
    """Damaged bytes as a new file renamed over the old one, never rewritten in place:
    a Tantivy reader still mapping the old file would die with SIGBUS."""
    tmp = path.with_name(path.name + ".damaged")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _row_bytes(path: Path, how: str, rng: random.Random) -> bytes:
    """A stretch of a random chunk's text or note's title, as the file stores it."""
    db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        sql = "SELECT text FROM chunks" if how == "row-text" else "SELECT title FROM notes"
        values = [r[0] for r in db.execute(sql) if len(r[0].encode()) >= 8]
    finally:
        db.close()
    value = rng.choice(values).encode()
    start = rng.randrange(len(value) - 7)
    return value[start : start + 8]


def damage(path: Path, how: str, rng: random.Random) -> None:
    if how in ROW_DAMAGES:
        data = bytearray(path.read_bytes())
        for _ in range(100):
            stretch = _row_bytes(path, how, rng)
            letters = [i for i, b in enumerate(stretch) if chr(b).isascii() and chr(b).isalpha()]
            if letters and (at := data.find(stretch)) >= 0:
                data[at + rng.choice(letters)] ^= 0x20  # the letter's other case
                break
        replace_bytes(path, bytes(data))
        return
    if how == "delete":
        path.unlink()
        return
    data = bytearray(path.read_bytes())
    if how == "truncate":
        data = data[: len(data) // 2]
    elif how == "randomise":
        start = rng.randrange(max(1, len(data) - 64)) if len(data) > 64 else 0
        data[start : start + 64] = os.urandom(min(64, len(data) - start))
    elif how == "bitflip" and data:
        pos = rng.randrange(len(data))
        data[pos] ^= 1 << rng.randrange(8)
    replace_bytes(path, bytes(data))


def catalog_dump(path: Path) -> list[str] | None:
    try:
        db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            return list(db.iterdump())
        finally:
            db.close()
    except sqlite3.Error:
        return None


def corruption(root: Path, index_dir: Path, work: Path) -> dict[str, object]:
    rng = random.Random(5)
    pristine = work / "pristine"
    shutil.rmtree(pristine, ignore_errors=True)
    shutil.copytree(index_dir, pristine)
    live = IndexLayout(pristine).live
    targets = [
        IndexLayout(pristine).pointer,
        live.catalog,  # shared by the generations, outside the generation's folder
        *sorted(
            p for p in live.root.rglob("*")
            if p.is_file() and not p.name.endswith(".lock") and not p.name.endswith("-shm")
            and p != live.catalog
        ),
    ]  # fmt: skip
    with Vault.open(root, index_dir=pristine) as vault:
        expected = {q: [h.path for h in vault.search(q, mode="keyword")] for q in QUERIES[:4]}
    pristine_dump = catalog_dump(live.catalog)
    rows = []
    cases = [(t, how) for t in targets for how in DAMAGES]
    cases += [(live.catalog, how) for how in ROW_DAMAGES]
    for target, how in cases:
        damaged = work / "damaged"
        shutil.rmtree(damaged, ignore_errors=True)
        shutil.copytree(pristine, damaged)
        rel = target.relative_to(pristine)
        damage(damaged / rel, how, rng)
        dl = IndexLayout(damaged)
        harmless = (
            target == live.catalog and how in ("bitflip", *ROW_DAMAGES)
            and catalog_dump(damaged / rel) == pristine_dump
        )  # fmt: skip
        args = [str(root), "--index-dir", str(damaged)]
        code, out, _err, tb1 = in_process("check", *args)
        detected = code != 0
        s_code, _s_out, _s_err, tb2 = in_process("search", "river", "--mode", "keyword",
                                               "--vault", str(root), "--index-dir", str(damaged))  # fmt: skip
        rows_before = cache_rows()
        r_code, r_out, _r_err, tb3 = in_process("check", "--repair", "--json", *args)
        via = "check --repair"
        embedded = 0
        if r_code == 0:
            embedded = int(json.loads(r_out).get("repaired", {}).get("chunks_embedded", 0))
        else:
            via = "index"
            _i_code, i_out, _i_err, tb4 = in_process("index", *args, "--json")
            tb3 = tb3 or tb4
            with contextlib.suppress(ValueError):
                embedded = int(json.loads(i_out).get("chunks_embedded", 0))
        embedded = max(embedded, cache_rows() - rows_before)
        c_code, _, _, tb5 = in_process("check", *args)
        with Vault.open(root, index_dir=damaged) as vault:
            same = all(
                [h.path for h in vault.search(q, mode="keyword")] == want
                for q, want in expected.items()
            )
        rows.append({
            "file": str(rel), "damage": how, "detected": detected, "harmless": harmless,
            "search_error": s_code != 0, "tracebacks": sum((tb1, tb2, tb3, tb5)),
            "recovered": c_code == 0 and same, "via": via, "embedded": embedded,
            "live_after": dl.current().name if dl.current() else None,
            "check_said": (out.strip().splitlines() or [""])[-1][:100],
        })  # fmt: skip
        print(
            f"{rel} {how}: detected={detected} harmless={harmless} recovered={rows[-1]['recovered']} via={via} tb={rows[-1]['tracebacks']}",
            flush=True,
        )
    return {"rows": rows}


# --- 4. a full disk -----------------------------------------------------------------
def disk_full(root: Path, index_dir: Path, env: dict[str, str], work: Path) -> dict[str, object]:
    mnt = work / "tmpfs"
    mnt.mkdir(exist_ok=True)
    # room for the copy of the whole folder (old generations and their catalogs too)
    # and for half of a rebuild of what a reader uses: the rebuild runs out of space
    copied = sum(p.stat().st_size for p in index_dir.rglob("*") if p.is_file())
    kb = int((copied + IndexLayout(index_dir).size_on_disk() * 0.5) / 1024) + 64
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={kb}k", "tmpfs", str(mnt)],
                             capture_output=True, text=True)  # fmt: skip
    if mounted.returncode != 0:
        return {"skipped": f"cannot mount a tmpfs: {mounted.stderr.strip()}"}
    try:
        small = mnt / "index"
        shutil.copytree(index_dir, small)
        before = view(small)
        run = run_cli("index", str(root), "--index-dir", str(small), "--full", "--quiet", env=env)
        after = view(small)
        check = run_cli("check", str(root), "--index-dir", str(small), env=env)
        search = search_river(root, small, env)
        return {
            "tmpfs_kb": kb,
            "rebuild_exit": run.returncode,
            "rebuild_said": (run.stderr.strip().splitlines() or [""])[0][:160],
            "traceback": "Traceback" in run.stderr + check.stderr + search.stderr,
            "previous_served": before is not None and after is not None
            and after.generation == before.generation and after.notes == before.notes and not after.mixed,
            "check_exit": check.returncode,
            "search_ok": search.returncode == 0 and "river" in search.stdout.lower(),
        }  # fmt: skip
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


# --- 5. read-only and a second user ---------------------------------------------------
def read_only(root: Path, index_dir: Path, env: dict[str, str], work: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    ro = work / "ro-index"
    ro.mkdir(exist_ok=True)
    bind = subprocess.run(
        ["mount", "--bind", str(index_dir), str(ro)], capture_output=True, text=True
    )
    if bind.returncode == 0:
        remount = subprocess.run(
            ["mount", "-o", "remount,ro,bind", str(ro)], capture_output=True, text=True
        )
        try:
            if remount.returncode != 0:
                out["ro_mount"] = f"skipped: {remount.stderr.strip()}"
            else:
                out["ro_mount"] = probe(root, ro, env, None)
        finally:
            subprocess.run(["umount", "-l", str(ro)], capture_output=True)
    else:
        out["ro_mount"] = f"skipped: {bind.stderr.strip()}"
    if shutil.which("setpriv") is None:
        out["second_user"] = "skipped: setpriv is not installed"
        return out
    for p in (work, *work.parents):
        if p == Path("/"):
            break
        os.chmod(p, os.stat(p).st_mode | 0o055)
    subprocess.run(["chmod", "-R", "a+rX", str(root), str(index_dir)], check=True)
    user_env = {**env, "HOME": "/tmp", CACHE_ENV: "off"}
    out["second_user"] = probe(root, index_dir, user_env, "nobody")
    return out


def probe(root: Path, index_dir: Path, env: dict[str, str], user: str | None) -> dict[str, object]:
    before = sorted(str(p) for p in index_dir.rglob("*"))
    search = search_river(root, index_dir, env, user)
    check = run_cli("check", str(root), "--index-dir", str(index_dir), env=env, user=user)
    status = run_cli(
        "status", "--json", str(root), "--index-dir", str(index_dir), env=env, user=user
    )
    index = run_cli("index", str(root), "--index-dir", str(index_dir), "--full", env=env, user=user)
    after = sorted(str(p) for p in index_dir.rglob("*"))
    write_error = None
    with contextlib.suppress(ValueError):
        write_error = json.loads(status.stdout).get("write_error")
    return {
        "search_ok": search.returncode == 0 and "river" in search.stdout.lower(),
        "check_ok": check.returncode == 0 and check.stdout.startswith("consistent"),
        "status_write_error": write_error,
        "index_refused_clearly": index.returncode != 0 and "Traceback" not in index.stderr,
        "index_said": (index.stderr.strip().splitlines() or [""])[0][:160],
        "tracebacks": sum("Traceback" in r.stderr for r in (search, check, status, index)),
        "files_unchanged": before == after,
    }


# --- the report ------------------------------------------------------------------------
def report(results: dict[str, object], args: argparse.Namespace) -> str:
    load = Path("/proc/loadavg").read_text().split()[:3]
    lines = [f"Load average when reported: {' '.join(load)} (2 cores shared with other jobs).", ""]
    k = results["kills"]
    rows = k["rows"]  # type: ignore[index]
    lines += [
        "| Case | Runs | Result |", "|---|---|---|",
        f"| SIGKILL during `index --full` and incremental `index` | {len(rows)} "
        f"({sum(r['killed_running'] for r in rows)} while running, "
        f"{sum(r['half_built_left'] for r in rows)} left a half-built generation) | "
        f"previous generation {sum(r['outcome'] == 'previous' for r in rows)}, "
        f"new {sum(r['outcome'] == 'new' for r in rows)}, "
        f"**mixed {sum(r['outcome'].startswith('MIX') for r in rows)}**; "
        f"the next run completed all: {k['completed']} |",
    ]  # fmt: skip
    rr = results["rebuilds"]
    lines.append(
        f"| Reader searching during `index --full` (300 notes) | {rr['rebuilds']} rebuilds, "  # type: ignore[index]
        f"{rr.get('searches')} searches, {rr.get('generations')} generations seen | "  # type: ignore[union-attr]
        f"**empty {rr.get('empty')}, partial {rr.get('partial')}, changed {rr.get('changed')}**, "  # type: ignore[union-attr]
        f"errors {rr.get('errors')} |"  # type: ignore[union-attr]
    )
    c = results["corruption"]["rows"]  # type: ignore[index]
    real = [r for r in c if not r["harmless"]]
    lines.append(
        f"| Damaged index files (delete, truncate, randomise, bit-flip; {len({r['file'] for r in c})} files, "
        "catalog and pointer included; and a letter of a chunk's text and of a note's title "
        f"in the catalog) | {len(c)} | **tracebacks {sum(r['tracebacks'] for r in c)}**; "
        f"detected by `check` {sum(r['detected'] for r in real)}/{len(real)}"
        f" (+{len(c) - len(real)} bit flips that changed no stored row); "
        f"recovered {sum(r['recovered'] for r in c)}/{len(c)} "
        f"({sum(r['via'] == 'check --repair' for r in c)} by `check --repair`, "
        f"{sum(r['via'] == 'index' for r in c)} by `index`); "
        f"**embeddings computed {sum(r['embedded'] for r in c)}** |"
    )
    d = results["disk_full"]
    if "skipped" in d:  # type: ignore[operator]
        lines.append(f"| Disk full during `index --full` | - | {d['skipped']} |")  # type: ignore[index]
    else:
        lines.append(
            f"| Disk full during `index --full` (tmpfs of {d['tmpfs_kb']} KB) | 1 | exit {d['rebuild_exit']} "  # type: ignore[index]
            f'("{d["rebuild_said"]}"), previous generation served: {d["previous_served"]}, '  # type: ignore[index]
            f"check exit {d['check_exit']}, search ok: {d['search_ok']}, traceback: {d['traceback']} |"  # type: ignore[index]
        )
    for name, label in (
        ("ro_mount", "Read-only bind mount (root)"),
        ("second_user", "Second user (`nobody`, read rights only)"),
    ):
        r = results["read_only"][name]  # type: ignore[index]
        if isinstance(r, str):
            lines.append(f"| {label} | - | {r} |")
        else:
            lines.append(
                f"| {label} | 1 | search ok {r['search_ok']}, check consistent {r['check_ok']}, "
                f"files unchanged {r['files_unchanged']}, tracebacks {r['tracebacks']}; "
                f'status: "{r["status_write_error"]}"; `index` refused: "{r["index_said"]}" |'
            )
    missed = [r for r in real if not r["detected"] or not r["recovered"] or r["tracebacks"]]
    if missed:
        lines += ["", "Cases not detected, not recovered or with a traceback:", ""]
        lines += [
            f'- `{r["file"]}` {r["damage"]}: check said "{r["check_said"]}", recovered {r["recovered"]}'
            for r in missed
        ]
    if "parity" in results:
        lines += ["", "### Same results, and what a copy costs", "", str(results["parity"])]
    t = k["timings"]  # type: ignore[index]
    lines += ["", f"A full rebuild of the 300 notes took {t['--full']:.1f} s and an incremental run of 10 "
              f"changed notes {t['incremental']:.1f} s (each a new process, embeddings from the cache); "
              f"kills were sent at random moments inside those spans."]  # fmt: skip
    return "\n".join(lines)


SECTIONS = ("kills", "rebuilds", "corruption", "disk_full", "read_only")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer cases, for a smoke run")
    ap.add_argument("--work", type=Path, help="keep the work folder here")
    ap.add_argument("--only", help=f"comma-separated sections of {','.join(SECTIONS)}")
    ap.add_argument("--report-from", type=Path, nargs="+", metavar="RESULTS",
                    help="write the section from the results.json of runs of parts")  # fmt: skip
    args = ap.parse_args()
    if args.report_from:
        results: dict[str, object] = {}
        for path in args.report_from:
            results.update(json.loads(path.read_text(encoding="utf-8")))
        parts = ", ".join(f"`{p.parent.name}/{p.name}`" for p in args.report_from)
        body = report(results, args) + (
            f"\n\nMerged from the results of separate runs ({parts}); a later file's sections"
            " replace an earlier one's. The damage row is from a run after the state file got"
            " its checksum; the run before it missed one bit flip in Tantivy's meta.json."
        )
        write_section("reliability-store", "Reliability: the store", body)
        return 0
    only = set(args.only.split(",")) if args.only else set(SECTIONS)
    work = args.work or Path(tempfile.mkdtemp(prefix="vaultsearch-reliability-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ[CACHE_ENV] = str(work / "embedding-cache")
    os.environ["HF_HUB_OFFLINE"] = "1"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    root, index_dir = work / "vault", work / "index"
    versions = dict.fromkeys(range(300), 0)
    write_vault(root, versions)
    first = run_cli("index", str(root), "--index-dir", str(index_dir), "--quiet", env=env)
    assert first.returncode == 0, first.stderr
    n_kills, n_rebuilds = (4, 3) if args.quick else (26, 20)
    results = {}
    if "kills" in only:
        results["kills"] = kills(root, index_dir, env, versions, n_kills)
    if "rebuilds" in only:
        results["rebuilds"] = rebuilds_under_reader(root, index_dir, env, work, n_rebuilds)
    if "corruption" in only:
        results["corruption"] = corruption(root, index_dir, work)
    if "disk_full" in only:
        results["disk_full"] = disk_full(root, index_dir, env, work)
    if "read_only" in only:
        results["read_only"] = read_only(root, index_dir, env, work)
    (work / "results.json").write_text(json.dumps(results, indent=1))
    if only == set(SECTIONS):
        body = report(results, args)
        if args.quick:
            print(body)
        else:
            write_section("reliability-store", "Reliability: the store", body)
    print(f"details: {work / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
