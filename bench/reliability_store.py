"""Reliability of the store: kills, rebuilds under a searching reader, damaged files,
a full disk, a read-only mount and a second user. One command:

    .venv/bin/python bench/reliability_store.py [--quick]

Everything runs on a generated vault of 300 notes with the real model, real CLI
processes and real SIGKILLs; results go to docs/benchmarks.md ("Reliability: the
store"). Needs root for the tmpfs and bind mounts; those cases say why when skipped.

Segments and compaction are in every case: the index is built with a small
``index.ann_threshold`` (``--ann-threshold``, set through the environment), so merged
vector segments carry an HNSW file; a reader follows a writer through many small
edits, and since every edit adds a segment, once ``MAX_SEGMENTS`` are live every edit
merges (no setting lowers the constants: enough edits reach them); kills land inside
a merge at named points (a SIGKILL the writer sends itself there) and at random moments;
and the damage cases run over the index those edits left (tombstones, merged segments,
HNSW files, the catalog's WAL).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from _report import ROOT, write_section

sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.conftest import files_a_run_leaves
from tests.corpus import WORDS

from vaultsearch import Vault
from vaultsearch.cli.main import main as cli_main
from vaultsearch.config import Config
from vaultsearch.store.derived import DERIVED
from vaultsearch.store.embedcache import CACHE_ENV, EmbeddingCache, default_cache_dir
from vaultsearch.store.generations import hold_published
from vaultsearch.store.layout import IndexLayout
from vaultsearch.store.segments import MAX_SEGMENTS, read_list, tier_runs
from vaultsearch.store.verify import settings_of

QUERIES = ["river", "mountain forest", "copper lantern", "falcon", "saffron orchard",
           "glacier valley", "thunder", "marble violin", "willow harbor", "note 0042"]  # fmt: skip
DAMAGES = ("delete", "truncate", "randomise", "bitflip")
ROW_DAMAGES = ("row-text", "row-title", "row-link")
"""Damage to the catalog only, inside a stored row, that every read accepts: one letter
of a chunk's text, a note's title or a link's target changes case (a flipped bit that
keeps UTF-8).
SQLite checksums no row; the row's own checksum (``store/rowsums.py``) is what finds it.
The random cases found such damage only when a random byte happened to land there."""
JSON_DAMAGES = ("json-number",)
"""Damage to the manifest that still parses: one bit of a number's last digit (a chunk
size of 1000 read as 1001). Only the digest the state file records finds it."""


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


def kill_outcome(after: View | None, before: View | None, want: dict[str, str]) -> str:
    """What a killed writer left: the previous generation whole, the new one whole, or
    a mix (the one outcome that must never happen)."""
    if after is None or after.mixed:
        return f"MIX ({after.mixed if after else 'no index'})"
    if before is not None and after.notes == before.notes and after.generation == before.generation:
        return "previous"
    return "new" if after.notes == want else "MIX (notes of neither)"


def view(index_dir: Path) -> View | None:
    """What a reader opening now gets, checked for agreement between every part: the
    published generation and its catalog in one read transaction, as a search holds
    them (``hold_published``: after a kill between the catalog commit and the pointer
    switch, the newer generation)."""
    held = hold_published(IndexLayout(index_dir))
    if held is None:
        return None
    hold, catalog = held
    try:
        generation = hold.generation
        settings = settings_of(generation, Config())
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
        outcome = kill_outcome(view(index_dir), before, want)
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


# --- 2b. a reader following many small edits, through compactions ----------------------
EDIT_QUERIES = [(m, q) for q in QUERIES[:5] for m in ("keyword", "semantic", "hybrid")]

EDIT_READER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from vaultsearch import Vault
    root, index_dir, queries_file, stop, out_file = sys.argv[1:6]
    queries = json.loads(Path(queries_file).read_text())
    seen, counts = {}, {"searches": 0, "ambiguous": 0, "errors": 0, "error_samples": []}
    vault = Vault.open(root, index_dir=index_dir)
    orch = vault.orchestrator
    while not Path(stop).exists():
        for mode, q in queries:
            before = orch.snapshot().generation.name
            try:
                got = [[h.path, h.start_line, round(h.score, 5)] for h in vault.search(q, mode=mode)]
            except Exception as exc:
                counts["errors"] += 1
                counts["error_samples"] = (counts["error_samples"] + [repr(exc)[:200]])[:5]
                continue
            counts["searches"] += 1
            after = orch.snapshot().generation.name
            if before != after:  # a publish between: which generation answered is unknown
                counts["ambiguous"] += 1
                continue
            by_result = seen.setdefault(f"{after}|{mode}|{q}", {})
            key = json.dumps(got)
            by_result[key] = by_result.get(key, 0) + 1
    Path(out_file).write_text(json.dumps({"counts": counts, "seen": seen}))
    """
)


def answers(root: Path, index_dir: Path) -> tuple[str, dict[str, str]]:
    """What a reader opening the live generation now answers to every edit query."""
    with Vault.open(root, index_dir=index_dir) as vault:
        name = vault.orchestrator.snapshot().generation.name
        return name, {
            f"{mode}|{q}": json.dumps(
                [[h.path, h.start_line, round(h.score, 5)] for h in vault.search(q, mode=mode)]
            )
            for mode, q in EDIT_QUERIES
        }


def lists_of(index_dir: Path) -> dict[str, list[tuple[str, int, int, bool]]]:
    """(name, rows, dead, has an approximate index) of each segment the live lists name."""
    live = IndexLayout(index_dir).live
    out = {}
    for part in ("vectors", "sentences"):
        listing = read_list(live.root / f"{part}.json")
        out[part] = [(e.name, e.rows, len(e.dead), e.ann is not None) for e in listing.segments]
    return out


def compactions(before: dict[str, list], after: dict[str, list]) -> dict[str, int]:
    """What one run merged or rewrote: segments of the older lists gone from the newer
    (each a segment merged into another, rewritten without its dead rows, or dropped)."""
    out = {"runs": 0, "segments_merged": 0, "hnsw_written": 0}
    gone = 0
    for part in ("vectors", "sentences"):
        names = {s[0] for s in after[part]}
        gone += sum(s[0] not in names for s in before[part])
        new = [s for s in after[part] if s[0] not in {b[0] for b in before[part]}]
        out["hnsw_written"] += sum(s[3] for s in new)
    out["runs"] = int(gone > 0)
    out["segments_merged"] = gone
    return out


def edit_notes(versions: dict[int, int], rng: random.Random, count: int) -> list[int]:
    """``count`` notes moved to their other version (0 and 1 alternate, so after the
    first round their texts are in the embedding cache: a run costs its merge)."""
    picked = rng.sample(sorted(versions), count)
    for i in picked:
        versions[i] = 1 - versions[i] % 2
    return picked


def edits_under_reader(
    root: Path, index_dir: Path, env: dict[str, str], work: Path, versions: dict[int, int], n: int,
    full: bool = False,
) -> dict[str, object]:  # fmt: skip
    """Each answer a reader following the writer gave, against the answer a reader
    opening that same generation afresh gives: a following reader reloads only what a
    run changed (``search/refresh.py``) and maps only new segments, so any difference
    is one it must not have. ``full``: the writer rebuilds (``index --full``) instead
    of editing notes."""
    rng = random.Random(17)
    expected: dict[str, dict[str, str]] = {}
    name, expected_now = answers(root, index_dir)
    expected[name] = expected_now
    (work / "edit-queries.json").write_text(json.dumps(EDIT_QUERIES))
    stop, out_file = work / "stop-edit-reader", work / "edit-reader.json"
    stop.unlink(missing_ok=True)
    out_file.unlink(missing_ok=True)
    reader = subprocess.Popen(
        [sys.executable, "-c", EDIT_READER, str(root), str(index_dir),
         str(work / "edit-queries.json"), str(stop), str(out_file)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    totals = {"runs": 0, "segments_merged": 0, "hnsw_written": 0}
    failed, most = 0, {"vectors": 0, "sentences": 0}
    rebuilt: list[dict[str, object]] = []
    lists = lists_of(index_dir)
    t = time.perf_counter()
    for k in range(n):
        if not full:
            edit_notes(versions, rng, rng.randint(1, 3))
            write_vault(root, versions)
        args = ("--full",) if full else ()
        done = run_cli("index", str(root), "--index-dir", str(index_dir), "--json", *args, env=env)
        failed += done.returncode != 0
        with contextlib.suppress(ValueError):
            ran = json.loads(done.stdout)
            if (ran.get("rebuild_reasons") and not full) or ran.get("repaired"):
                rebuilt.append({"edit": k + 1, "reasons": ran.get("rebuild_reasons"),
                                "repaired": ran.get("repaired")})  # fmt: skip
        name, expected[name] = answers(root, index_dir)
        now = lists_of(index_dir)
        step = compactions(lists, now)
        totals = {key: totals[key] + step[key] for key in totals}
        most = {part: max(most[part], len(now[part])) for part in most}
        lists = now
        print(
            f"edit {k + 1}/{n}: {name} segments {[len(v) for v in now.values()]} {step}", flush=True
        )
    seconds = time.perf_counter() - t
    stop.touch()
    _out, err = reader.communicate(timeout=600)
    if not out_file.is_file():
        return {"edits": n, "reader_failed": err[-800:]}
    got = json.loads(out_file.read_text())
    wrong, verified, unknown, samples = 0, 0, 0, []
    for key, results in got["seen"].items():
        generation, query = key.split("|", 1)
        want = expected.get(generation, {}).get(query)
        for result, count in results.items():
            if want is None:
                unknown += count
            elif result == want:
                verified += count
            else:
                wrong += count
                if len(samples) < 5:
                    samples.append({"key": key, "got": result[:300], "want": want[:300]})
    return {
        "edits": n, "failed_edits": failed, "seconds": round(seconds, 1),
        "generations": len(expected), "generations_searched": len({k.split("|")[0] for k in got["seen"]}),
        "compactions": totals, "most_segments": most, "max_segments": MAX_SEGMENTS,
        "final_lists": lists, "verified": verified, "wrong": wrong, "unverified": unknown,
        "wrong_samples": samples, "not_incremental": rebuilt, **got["counts"],
    }  # fmt: skip


# --- 2c. kills inside a compaction ------------------------------------------------------
KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from vaultsearch.cli.main import main
    from vaultsearch.indexing import manager
    from vaultsearch.store import generations
    from vaultsearch.store.derived import vectors
    point = sys.argv[1]
    merged = []

    def die(at):
        if at == point and merged:
            sys.stderr.write(f"killed at {at}\\n")
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    write, ann, unlisted, publish = (
        vectors.VectorPart._write, vectors.write_ann, vectors.remove_unlisted, manager.publish
    )

    def _write(self, parts):
        seg = write(self, parts)
        if any(p.entry.name for p in parts):
            merged.append(seg.entry.name)
            die(f"{self.name}-merged-segment")
        return seg

    def write_ann(*args, **kwargs):
        entry = ann(*args, **kwargs)
        die("merged-hnsw")
        return entry

    def remove_unlisted(folder, prefix, listing):
        die(f"{prefix}-list")
        return unlisted(folder, prefix, listing)

    def publish_(layout, generation, **kwargs):
        die("before-pointer")
        return publish(layout, generation, **kwargs)

    vectors.VectorPart._write, vectors.write_ann = _write, write_ann
    vectors.remove_unlisted, manager.publish = remove_unlisted, publish_
    sys.exit(main(sys.argv[2:]))
    """
)
KILL_POINTS = (
    "vectors-merged-segment",
    "merged-hnsw",
    "vectors-list",
    "sentences-merged-segment",
    "sentences-list",
    "before-pointer",
)
"""Where a merging writer kills itself: after the merged segment's files, after its
HNSW file, after a list naming it but before the files it replaced are unlinked, and
after the catalog commit but before the pointer names the new generation."""


def merge_kills(
    root: Path, index_dir: Path, env: dict[str, str], versions: dict[int, int], repeats: int,
    timed: int,
) -> dict[str, object]:  # fmt: skip
    rng = random.Random(23)
    rows = []
    cases = [p for p in KILL_POINTS for _ in range(repeats)] + ["random"] * timed
    span = 0.0
    for k, point in enumerate(cases):
        for _ in range(2 * MAX_SEGMENTS):  # primed: the next edit merges
            if merges_next(index_dir):
                break
            edit_notes(versions, rng, 1)
            write_vault(root, versions)
            run_cli("index", str(root), "--index-dir", str(index_dir), "--quiet", env=env)
        before, lists = view(index_dir), lists_of(index_dir)
        edit_notes(versions, rng, 2)
        write_vault(root, versions)
        want = digests(versions)
        args = ("index", str(root), "--index-dir", str(index_dir), "--quiet")
        if point == "random":
            proc = subprocess.Popen(cli_argv(*args), env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)  # fmt: skip
            time.sleep(rng.uniform(0.3, max(span, 1.0) * 1.1))
            running = proc.poll() is None
            proc.send_signal(signal.SIGKILL)
            _, said = proc.communicate()
        else:
            t = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-c", KILLER, point, *args], env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
            _, said = proc.communicate(timeout=1800)
            running = proc.returncode == -signal.SIGKILL
            span = max(span, time.perf_counter() - t)
        outcome = kill_outcome(view(index_dir), before, want)
        merged = (
            compactions(lists, lists_of(index_dir))["segments_merged"] if outcome == "new" else None
        )
        check = run_cli("check", "--json", str(root), "--index-dir", str(index_dir), env=env)
        problems = ["unreadable output"]
        with contextlib.suppress(ValueError):  # the edit not indexed yet is no damage
            problems = [
                p for p in json.loads(check.stdout)["problems"] if not p.startswith("files:")
            ]
        done = run_cli("index", str(root), "--index-dir", str(index_dir), "--quiet", env=env)
        final = view(index_dir)
        completed = (
            done.returncode == 0 and final is not None and not final.mixed and final.notes == want
        )
        rows.append({
            "point": point, "killed": running, "outcome": outcome, "merged_when_new": merged,
            "index_problems": problems,
            "next_run_completed": completed, "traceback": first_traceback(said, check.stderr, done.stderr),
            "leftover_files": leftovers(index_dir),
        })  # fmt: skip
        print(f"merge kill {k + 1}/{len(cases)}: {rows[-1]}", flush=True)
    return {"rows": rows}


def merges_next(index_dir: Path) -> bool:
    """Whether one more segment of the size the last edit wrote makes both lists merge
    (``tier_runs``): segments merge by tiers, so their number seldom reaches
    ``MAX_SEGMENTS``, and priming until it did ran 64 edits before every case."""
    for listing in lists_of(index_dir).values():
        live = [rows - dead for _name, rows, dead, _ann in listing if rows > dead]
        if not live or all(len(g) == 1 for g in tier_runs([*live, live[-1]])):
            return False
    return True


def first_traceback(*texts: str) -> str:
    """The last lines of the first traceback in these outputs (empty when none): what
    the report needs to say where it came from."""
    for text in texts:
        if "Traceback" in text:
            return text[text.index("Traceback") :][-600:]
    return ""


def leftovers(index_dir: Path) -> int:
    """Files in the live generation's segment folder that its lists do not name: what a
    killed merge may have left behind and the next run should have removed."""
    live = IndexLayout(index_dir).live
    named = set()
    for part in ("vectors", "sentences"):
        folder = live.root / "segments"
        named |= {
            p.name
            for e in read_list(live.root / f"{part}.json").segments
            for p in e.all_files(folder)
        }
    folder = live.root / "segments"
    return sum(p.name not in named for p in folder.iterdir()) if folder.is_dir() else 0


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
        sql = {
            "row-text": "SELECT text FROM chunks",
            "row-title": "SELECT title FROM notes",
            "row-link": "SELECT target FROM links",
        }[how]
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
    if how in JSON_DAMAGES:
        ends = [m.end() - 1 for m in re.finditer(rb"(?<=: )\d+(?=[,\n])", data)]
        data[rng.choice(ends)] ^= 0x01
        replace_bytes(path, bytes(data))
        return
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


def file_kind(rel: Path) -> str:
    """The kind of index file a damaged path is, for the table by kind."""
    name = rel.name
    if name.endswith(".ids.npy") or name.endswith(".rows.npy"):
        part = "sentence" if name.startswith("sentences-") else "vector"
        return f"{part} segment {name.split('.')[-2]}"
    if name.endswith(".faiss"):
        return "HNSW file"
    if rel.parent.name == "graph-parts":
        return "graph part"
    if rel.parent.name == "keywords":
        return "Tantivy meta" if name.endswith(".json") else "Tantivy segment"
    if rel.parent.name == "catalogs":
        return "catalog WAL" if name.endswith("-wal") else "catalog"
    return {
        "vectors.json": "segment list", "sentences.json": "segment list",
        "sentences.pending.json": "segment list", "CURRENT": "pointer",
        "CATALOG": "catalog name", "index.state.json": "state",
        "index.manifest.json": "manifest", "graph.json": "graph", "graph.delta.json": "graph",
    }.get(name, name)  # fmt: skip


def corruption(
    root: Path, index_dir: Path, work: Path, one_per_kind: bool = False
) -> dict[str, object]:
    rng = random.Random(5)
    pristine = work / "pristine"
    shutil.rmtree(pristine, ignore_errors=True)
    shutil.copytree(index_dir, pristine)
    live = IndexLayout(pristine).live
    wal = live.catalog.with_name(live.catalog.name + "-wal")
    targets = [
        IndexLayout(pristine).pointer,
        live.catalog,  # shared by the generations, outside the generation's folder
        *([wal] if wal.is_file() and wal.stat().st_size else []),
        *sorted(
            p for p in live.root.rglob("*")
            if p.is_file() and not p.name.endswith(".lock") and not p.name.endswith("-shm")
            and p != live.catalog
        ),
    ]  # fmt: skip
    if one_per_kind:  # the first file of each kind (Tantivy's by suffix)
        seen: set[str] = set()
        kinds = [
            t.name if file_kind(t.relative_to(pristine)) in ("segment list", "graph")
            else f"{file_kind(t.relative_to(pristine))} {t.suffix}"
            for t in targets
        ]  # fmt: skip
        targets = [t for t, k in zip(targets, kinds, strict=True) if not (k in seen or seen.add(k))]
    with Vault.open(root, index_dir=pristine) as vault:
        expected = {q: [h.path for h in vault.search(q, mode="keyword")] for q in QUERIES[:4]}
    pristine_dump = catalog_dump(live.catalog)
    rows = []
    cases = [(t, how) for t in targets for how in DAMAGES]
    cases += [(live.catalog, how) for how in ROW_DAMAGES]
    cases += [(live.manifest, how) for how in JSON_DAMAGES]
    for target, how in cases:
        damaged = work / "damaged"
        shutil.rmtree(damaged, ignore_errors=True)
        shutil.copytree(pristine, damaged)
        rel = target.relative_to(pristine)
        damage(damaged / rel, how, rng)
        dl = IndexLayout(damaged)
        # a flip that changed no stored row (in free space, a page the WAL holds a newer
        # copy of, or WAL frames already checkpointed) is harmless
        harmless = (
            ((target == live.catalog and how in ("bitflip", "randomise", *ROW_DAMAGES)) or target == wal)
            and catalog_dump(damaged / live.catalog.relative_to(pristine)) == pristine_dump
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
            "file": str(rel), "kind": file_kind(rel), "damage": how, "detected": detected,
            "harmless": harmless,
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
FREE_KB = (0, 4, 16, 64, 256, 1024)
"""Room left on the full disk before each edit: the write runs out at a different
point at each (the catalog's WAL, a segment, its HNSW file, Tantivy, the graph, the
state), and with most room the edit fits."""


def disk_full(
    root: Path, index_dir: Path, env: dict[str, str], work: Path, versions: dict[int, int]
) -> dict[str, object]:
    """A rebuild that runs out of space half-way, then edits (each primed to merge
    segments) on a disk filled up to ``FREE_KB``; after each, the space comes back and
    the next ``index`` must finish it without embedding any text again."""
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
        run_cli("index", str(root), "--index-dir", str(small), "--quiet", env=env)

        def grow() -> None:
            subprocess.run(["mount", "-o", f"remount,size={4 * kb}k", str(mnt)], check=True)

        rows = [full_disk_case(root, small, env, versions, "--full", None, grow)]
        print(f"disk full: {rows[-1]}", flush=True)
        rng = random.Random(31)
        for free in FREE_KB:
            picked = rng.sample(sorted(versions), 2)
            others = sorted(set(versions) - set(picked))
            # both texts of each picked note indexed once before: any text the run after
            # the failure embeds is one embedded again
            for _ in range(2):
                flip(root, small, env, versions, picked)
            for _ in range(2 * MAX_SEGMENTS):  # primed: the next edit merges
                if merges_next(small):
                    break
                flip(root, small, env, versions, [rng.choice(others)])
            for i in picked:
                versions[i] = 1 - versions[i] % 2
            write_vault(root, versions)
            filler = fill(mnt, free * 1024)
            rows.append(
                full_disk_case(root, small, env, versions, "edit", free * 1024, filler.unlink)
            )
            print(f"disk full: {rows[-1]}", flush=True)
        return {"tmpfs_kb": kb, "rows": rows}
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def flip(
    root: Path, index_dir: Path, env: dict[str, str], versions: dict[int, int], notes: list[int]
) -> None:
    """``notes`` moved to their other version and indexed."""
    for i in notes:
        versions[i] = 1 - versions[i] % 2
    write_vault(root, versions)
    run_cli("index", str(root), "--index-dir", str(index_dir), "--quiet", env=env)


def fill(folder: Path, free: int) -> Path:
    """A file that takes the file system's space but ``free`` bytes."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        block = b"\0" * (1 << 16)
        with contextlib.suppress(OSError):
            while os.write(fd, block):
                pass
        size = os.fstat(fd).st_size
        os.ftruncate(fd, max(0, size - free))
    finally:
        os.close(fd)
    return filler


def full_disk_case(
    root: Path, index_dir: Path, env: dict[str, str], versions: dict[int, int], kind: str,
    free: int | None, make_room: Callable[[], None],
) -> dict[str, object]:  # fmt: skip
    """One run on a full disk (``--full``: a rebuild on a disk with room for half of it;
    ``edit``: an incremental run with ``free`` bytes left), then what readers see, what
    ``check`` says, and the same run again once ``make_room`` gave the space back."""
    before, lists = view(index_dir), lists_of(index_dir)
    want = digests(versions)
    on_disk = files_a_run_leaves(index_dir)
    cached = cache_rows()
    args = (
        "index",
        str(root),
        "--index-dir",
        str(index_dir),
        *([kind] if kind == "--full" else []),
    )
    run = run_cli(*args, "--quiet", env=env)
    after = view(index_dir)
    outcome = kill_outcome(after, before, want)
    check = run_cli("check", "--json", str(root), "--index-dir", str(index_dir), env=env)
    search = search_river(root, index_dir, env)
    left = files_a_run_leaves(index_dir) - on_disk - ({after.generation} if after else set())
    failed_cached = cache_rows() - cached
    make_room()
    cached = cache_rows()
    done = run_cli(*args, "--json", env=env)
    final = view(index_dir)
    embedded = None
    with contextlib.suppress(ValueError, KeyError):
        embedded = json.loads(done.stdout)["chunks_embedded"]
    again = run_cli("check", "--json", str(root), "--index-dir", str(index_dir), env=env)
    return {
        "kind": kind, "free_bytes": free, "exit": run.returncode,
        "said": [line[:160] for line in run.stderr.strip().splitlines()][:3],
        "outcome": outcome,
        "failed_run_cache_rows": failed_cached,
        "merged": compactions(lists, lists_of(index_dir))["segments_merged"],
        "check_problems": index_problems(check),
        "search_ok": search.returncode == 0 and "river" in search.stdout.lower(),
        "half_written_left": sorted(left),
        "traceback": first_traceback(run.stderr, check.stderr, search.stderr, done.stderr,
                                     again.stderr),
        "next_run_exit": done.returncode,
        "next_run_embedded": embedded,
        "cache_rows_added": cache_rows() - cached,
        "next_run_completed": final is not None and not final.mixed and final.notes == want,
        "check_after": index_problems(again, files=True),
    }  # fmt: skip


def index_problems(check: subprocess.CompletedProcess[str], files: bool = False) -> list[str]:
    """What ``check --json`` found wrong with the index (``files``: also the vault's
    files not indexed yet, which a failed run leaves by design)."""
    with contextlib.suppress(ValueError, KeyError):
        return [
            p for p in json.loads(check.stdout)["problems"] if files or not p.startswith("files:")
        ]
    return [f"unreadable output (exit {check.returncode})"]


# --- 5. read-only and a second user ---------------------------------------------------
def read_only(root: Path, index_dir: Path, env: dict[str, str], work: Path) -> dict[str, object]:
    # current first: the sections before edit the vault (the full disk's on its own copy),
    # and `check` would then name those files, not anything read-only
    run_cli("index", str(root), "--index-dir", str(index_dir), "--quiet", env=env)
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
    lines += edit_rows(results)
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
    lines += disk_full_rows(results["disk_full"])  # type: ignore[arg-type]
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
    lines += damage_by_kind(c)
    if "parity" in results:
        lines += ["", "### Same results, and what a copy costs", "", str(results["parity"])]
    t = k["timings"]  # type: ignore[index]
    lines += ["", f"A full rebuild of the 300 notes took {t['--full']:.1f} s and an incremental run of 10 "
              f"changed notes {t['incremental']:.1f} s (each a new process, embeddings from the cache); "
              f"kills were sent at random moments inside those spans."]  # fmt: skip
    return "\n".join(lines)


def disk_full_rows(d: dict) -> list[str]:
    """The full-disk rows: the rebuild, and the edits by how much room was left."""
    if "skipped" in d:
        return [f"| Disk full | - | {d['skipped']} |"]
    out = []
    for r in d["rows"]:
        room = (
            f"tmpfs of {d['tmpfs_kb']} KB, room for half the rebuild"
            if r["kind"] == "--full"
            else f"{r['free_bytes'] // 1024} KB left"
        )
        what = "`index --full`" if r["kind"] == "--full" else "a 2-note edit primed to merge"
        said = f'exit {r["exit"]} "{r["said"][0] if r["said"] else ""}"'
        merged = f", {r['merged']} segments merged by it or the next run" if r["merged"] else ""
        out.append(
            f"| Disk full during {what} ({room}) | 1 | {said}; outcome {r['outcome']}{merged}; "
            f"search ok {r['search_ok']}; `check` problems {len(r['check_problems'])}; "
            f"half-written files left {len(r['half_written_left'])}; space back, the same "
            f"run: exit {r['next_run_exit']}, completed {r['next_run_completed']}, "
            f"**embedded {r['next_run_embedded']}** (cache rows +{r['cache_rows_added']}), "
            f"`check` problems {len(r['check_after'])}; tracebacks {int(bool(r['traceback']))} |"
        )
    return out


def edit_rows(results: dict[str, object]) -> list[str]:
    """The rows of the edits under a reader and of the kills inside a merge."""
    lines = []
    r: dict = results.get("rebuilds")  # type: ignore[assignment]
    if r and "reader_failed" in r:
        lines.append(
            f"| Reader during rebuilds | {r['edits']} | reader failed: {r['reader_failed'][-200:]} |"
        )
    elif r:
        lines.append(
            f"| Reader searching (keyword, semantic, hybrid) during `index --full` (300 notes) | "
            f"{r['edits']} rebuilds, {r['searches']} searches over {r['generations_searched']} "
            f"generations | **wrong {r['wrong']}** of {r['verified'] + r['wrong']} compared with a "
            f"fresh reader of the same generation ({r['ambiguous']} straddled a publish, "
            f"{r['unverified']} of a generation not compared), errors {r['errors']}, failed "
            f"rebuilds {r['failed_edits']} |"
        )
    e: dict = results.get("edits")  # type: ignore[assignment]
    if e and "reader_failed" in e:
        lines.append(
            f"| Reader during small edits | {e['edits']} | reader failed: {e['reader_failed'][-200:]} |"
        )
    elif e:
        c = e["compactions"]
        lines.append(
            f"| Reader searching (keyword, semantic, hybrid) while a writer makes {e['edits']} "
            f"edits of 1–3 notes, each a new segment, so that segments merge | {e['searches']} "
            f"searches over {e['generations_searched']} generations; {c['runs']} runs merged "
            f"({c['segments_merged']} segments merged away, {c['hnsw_written']} HNSW files "
            f"written); most live segments {e['most_segments']['vectors']} vector / "
            f"{e['most_segments']['sentences']} sentence (MAX_SEGMENTS {e['max_segments']}) | "
            f"**wrong {e['wrong']}** of {e['verified'] + e['wrong']} compared with a fresh "
            f"reader of the same generation ({e['ambiguous']} straddled a publish, "
            f"{e['unverified']} of a generation not compared), errors {e['errors']}, "
            f"failed edits {e['failed_edits']} |"
        )
    m: dict = results.get("merge_kills")  # type: ignore[assignment]
    if m:
        rows = m["rows"]
        points = ", ".join(sorted({r["point"] for r in rows} - {"random"}))
        lines.append(
            f"| SIGKILL inside a merging edit: at {points} (the writer kills itself there) and "
            f"at random moments | {len(rows)} ({sum(r['killed'] for r in rows)} killed while "
            f"running) | previous {sum(r['outcome'] == 'previous' for r in rows)}, new "
            f"{sum(r['outcome'] == 'new' for r in rows)}, **mixed "
            f"{sum(r['outcome'].startswith('MIX') for r in rows)}**; `check` after the kill "
            f"found the index whole {sum(not r['index_problems'] for r in rows)}/{len(rows)} "
            f"(the edit it had not indexed aside); the next run "
            f"completed {sum(r['next_run_completed'] for r in rows)}/{len(rows)}; files left "
            f"unnamed after it {sum(r['leftover_files'] for r in rows)}; tracebacks "
            f"{sum(bool(r['traceback']) for r in rows)} |"
        )
    return lines


def damage_by_kind(rows: list[dict]) -> list[str]:
    """Damage cases per kind of file: found by ``check``, repaired, re-embedded."""
    kinds: dict[str, list[dict]] = {}
    for r in rows:
        kinds.setdefault(r.get("kind", "?"), []).append(r)
    out = ["", "Damage by kind of file (harmless: a flip that changed no stored row):", "",
           "| file kind | files | cases | harmless | detected | repaired | embedded | tracebacks |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for kind, rs in sorted(kinds.items()):
        real = [r for r in rs if not r["harmless"]]
        out.append(
            f"| {kind} | {len({r['file'] for r in rs})} | {len(rs)} | {len(rs) - len(real)} | "
            f"{sum(r['detected'] for r in real)}/{len(real)} | "
            f"{sum(r['recovered'] for r in rs)}/{len(rs)} | {sum(r['embedded'] for r in rs)} | "
            f"{sum(r['tracebacks'] for r in rs)} |"
        )
    return out


SECTIONS = ("kills", "rebuilds", "edits", "merge_kills", "corruption", "disk_full", "read_only")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer cases, for a smoke run")
    ap.add_argument("--work", type=Path, help="keep the work folder here")
    ap.add_argument("--only", help=f"comma-separated sections of {','.join(SECTIONS)}")
    ap.add_argument("--counts", metavar="K,R,E,P,T",
                    help="kills, rebuilds, edits, kills at each merge point, timed merge kills")  # fmt: skip
    ap.add_argument("--one-per-kind", action="store_true",
                    help="damage one file of each kind, not every file")  # fmt: skip
    ap.add_argument("--ann-threshold", type=int, default=2,
                    help="index.ann_threshold: segments of more rows get an HNSW file")  # fmt: skip
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
    os.environ["VAULTSEARCH_INDEX_ANN_THRESHOLD"] = str(args.ann_threshold)
    os.environ["HF_HUB_OFFLINE"] = "1"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    root, index_dir = work / "vault", work / "index"
    versions = dict.fromkeys(range(300), 0)
    write_vault(root, versions)
    first = run_cli("index", str(root), "--index-dir", str(index_dir), "--quiet", env=env)
    assert first.returncode == 0, first.stderr
    n_kills, n_rebuilds, n_edits, repeats, timed = (
        (4, 3, 12, 1, 2) if args.quick else (26, 20, 40, 3, 8)
    )
    if args.counts:
        n_kills, n_rebuilds, n_edits, repeats, timed = (int(n) for n in args.counts.split(","))
    results = {}
    if "kills" in only:
        results["kills"] = kills(root, index_dir, env, versions, n_kills)
    if "rebuilds" in only:
        results["rebuilds"] = edits_under_reader(
            root, index_dir, env, work, versions, n_rebuilds, full=True
        )
    if "edits" in only:
        results["edits"] = edits_under_reader(root, index_dir, env, work, versions, n_edits)
    if "merge_kills" in only:
        results["merge_kills"] = merge_kills(root, index_dir, env, versions, repeats, timed)
    if "corruption" in only:
        results["corruption"] = corruption(root, index_dir, work, args.one_per_kind)
    if "disk_full" in only:
        results["disk_full"] = disk_full(root, index_dir, env, work, versions)
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
