"""Where a one-note edit's CPU goes, by stage, in the writer and in a reader following it.

``bench/scale.py`` times an edit from the file's save to a search in another process
seeing it; on a loaded machine that wall time says little about what grows with the
index. This splits the same edit into the writer's stages (a long-lived writer set up as
``watch`` sets its manager up: the parse child kept, sentences deferred) and the
reader's (the first search after the publish: the snapshot followed, then the search),
by CPU time from ``cProfile`` with the process-time clock, and counts what each side
touches during the edit with ``strace`` (``--strace``): files opened, fsyncs, stats,
mappings, bytes read.

Run on a kept index (``bench/scale.py --keep``; never an index someone else reads):
``python bench/edit_stages.py VAULT INDEX [--edits 5] [--strace]``. The edited note
(``copy00``'s median-size note, as in ``scale.py``) is restored at the end, and one
last update puts the index back level with it.

``--notes``: instead of editing that note, each step is one of a new note's life in
``copy00``, in turn: added (with a wikilink to the edited note), edited, moved to
another folder, deleted; what each costs is reported by kind. These change the
vault's note names, which a content edit never does. With ``--trees``, give each tree
its own copy of the index (``--indexes``, one per tree, all of the same vault): a
writer that finds another process changed the names builds its link resolvers again,
so two trees' writers on one index would each see the other's changes as foreign.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import pstats
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child import LineChild

EDITED_COPY = "copy00"
MARK = "/vaultsearch-edit-stages-mark"
NOTE_STEPS = ("add", "edit", "move", "delete")


class Step:
    """One change to the vault, as a watcher would report it to the writer: the paths
    it names, and what a reader's keyword search for ``token`` must then show (``path``
    among the hits, or no longer, ``gone``)."""

    def __init__(
        self, kind: str, paths: list[str], path: str, token: str, gone: bool = False
    ) -> None:
        self.kind, self.paths, self.path, self.token, self.gone = kind, paths, path, token, gone


def note_step(vault: Path, i: int, tag: str, link_to: str) -> Step:
    """Step ``i`` of the new notes' lives (``NOTE_STEPS`` in turn): note ``i // 4`` is
    added with a wikilink, edited, moved, deleted. ``tag`` keeps tokens apart between
    runs and trees."""
    kind, n = NOTE_STEPS[i % len(NOTE_STEPS)], i // len(NOTE_STEPS)
    new = f"{EDITED_COPY}/edit-stages-new-{tag}-{n}.md"
    moved = f"{EDITED_COPY}/edit-stages-moved/edit-stages-note-{tag}-{n}.md"
    first, second = f"zqnew{tag}x{n}first", f"zqnew{tag}x{n}second"
    if kind == "add":
        (vault / new).write_text(f"# New {n}\n\n{first}: see [[{link_to}]].\n", "utf-8")
        return Step(kind, [new], new, first)
    if kind == "edit":
        text = f"# New {n}\n\n{second}: see [[{link_to}]] again.\n"
        (vault / new).write_text(text, "utf-8")
        return Step(kind, [new], new, second)
    if kind == "move":
        (vault / moved).parent.mkdir(exist_ok=True)
        (vault / new).rename(vault / moved)
        return Step(kind, [new, moved], moved, second)
    (vault / moved).unlink()
    return Step(kind, [moved], moved, second, gone=True)


def warm_up(original: str, stem: str, token: str) -> str:
    """The edited note with a wikilink more: a run resolves the note's links, so the
    writer builds its link resolvers there, before the steps that are counted."""
    return f"{original}\n\nEdited: {token} [[{stem}]]\n"


def undo_note_steps(vault: Path, tag: str) -> list[str]:
    """Remove what an interrupted ``--notes`` run left; returns the paths to update."""
    left = [
        p
        for pattern in (f"edit-stages-new-{tag}-*.md", f"edit-stages-moved/*-{tag}-*.md")
        for p in (vault / EDITED_COPY).glob(pattern)
    ]
    for p in left:
        p.unlink()
    with contextlib.suppress(OSError):
        (vault / EDITED_COPY / "edit-stages-moved").rmdir()
    return [p.relative_to(vault).as_posix() for p in left]


WRITER_STAGES: list[tuple[str, str, str]] = [
    ("update, all", "indexing/manager.py", "update"),
    ("lock, temps, sweep before", "indexing/manager.py", "_writing"),
    ("catalog header look", "indexing/manager.py", "_catalog_damage"),
    ("look at the named files", "indexing/looking.py", "look"),
    ("looks whole", "indexing/manager.py", "_looks_whole"),
    ("clone generation", "store/writer.py", "clone_generation"),
    ("open derived indexes", "store/writer.py", "__init__"),
    ("parse, embed, catalog rows", "indexing/manager.py", "_commit_batch"),
    ("  derived apply", "store/writer.py", "apply"),
    ("resolve links", "indexing/linking.py", "resolve_links"),
    ("commit", "store/writer.py", "commit"),
    ("  vectors + sentences commit", "store/derived/vectors.py", "commit"),
    ("  keywords commit", "store/derived/keywords.py", "commit"),
    ("  graph commit", "store/derived/graph.py", "commit"),
    ("  fsync_tree (commit and publish)", "store/atomic.py", "fsync_tree"),
    ("publish", "indexing/manager.py", "_publish"),
    ("  pointer switch", "store/generations.py", "publish"),
    ("  catalog checkpoint", "store/catalog.py", "checkpoint"),
    ("  sweep (both)", "store/generations.py", "sweep"),
    ("record sources", "indexing/manager.py", "_record_sources"),
    ("counts for status", "store/counts.py", "current_counts"),
    ("segment ids mapped", "store/segments.py", "ids"),
    ("segment id order", "store/segments.py", "order"),
]

READER_STAGES: list[tuple[str, str, str]] = [
    ("search, all", "app/vault.py", "search"),
    ("snapshot open", "search/snapshot.py", "open"),
    ("  hold published", "store/generations.py", "hold_published"),
    ("  derived readers", "search/snapshot.py", "_readers"),
    ("    vectors reader", "store/derived/vectors.py", "reader"),
    ("    sentences reader", "store/derived/sentences.py", "reader"),
    ("    keywords reader", "store/derived/keywords.py", "reader"),
    ("    keywords damage", "store/derived/keywords.py", "damage"),
    ("    graph reader", "store/derived/graph.py", "reader"),
    ("    vectors damage", "store/derived/vectors.py", "damage"),
    ("  note maps followed", "search/refresh.py", "follow"),
    ("  note maps loaded whole", "search/refresh.py", "load"),
    ("search itself", "search/orchestrator.py", "_search"),
    ("  boilerplate", "search/snapshot.py", "boilerplate_found"),
]


def _io() -> dict[str, int]:
    out = {}
    for line in Path("/proc/self/io").read_text().splitlines():
        key, _, value = line.partition(":")
        out[key] = int(value)
    return out


def _mark(text: str) -> None:
    """A failing stat of a path no one has: strace shows it, so the parent can cut the
    trace at the edit's start and end."""
    with contextlib.suppress(OSError):
        os.stat(f"{MARK}-{text}")


def _stages(profile: cProfile.Profile, wanted: list[tuple[str, str, str]]) -> dict[str, float]:
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    out: dict[str, float] = {}
    for label, suffix, func in wanted:
        total = 0.0
        for (filename, _, name), (_, _, _, cumulative, _) in stats.items():
            if name == func and filename.endswith(suffix):
                total += cumulative
        out[label] = total * 1000
    return out


def _measured(call: Any, profile: bool, wanted: list[tuple[str, str, str]]) -> dict[str, Any]:
    io0, cpu0, t0 = _io(), time.process_time(), time.perf_counter()
    prof = cProfile.Profile(time.process_time) if profile else None
    _mark("start")
    if prof is not None:
        prof.enable()
    result = call()
    if prof is not None:
        prof.disable()
        if dump := os.environ.get("EDIT_STAGES_DUMP"):
            prof.dump_stats(f"{dump}-{os.getpid()}-{time.time_ns()}.prof")
    _mark("end")
    cpu, io1 = time.process_time() - cpu0, _io()
    return {
        "seconds": time.perf_counter() - t0,
        "cpu_ms": cpu * 1000,
        "read_syscalls": io1["syscr"] - io0["syscr"],
        "read_bytes": io1["rchar"] - io0["rchar"],
        "stages": _stages(prof, wanted) if prof is not None else {},
        "result": result,
    }


def _counts(summary: Any) -> dict[str, int]:
    return {k: getattr(summary, k) for k in ("added", "updated", "moved", "removed")}


def child_writer(vault: str, index_dir: str) -> None:
    from vaultsearch import Vault

    with Vault.open(Path(vault), index_dir=Path(index_dir)) as v:
        manager = v.manager()
        manager.keep_parse_child = True  # as LiveIndex sets it up (watch, mcp)
        manager.defer_sentences = True
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            cmd = json.loads(line)
            paths = cmd.get("paths") or [cmd["path"]]
            out = _measured(
                lambda paths=paths: _counts(manager.update(paths=paths)),
                cmd["profile"],
                WRITER_STAGES,
            )
            print(json.dumps(out), flush=True)


def child_reader(vault: str, index_dir: str) -> None:
    from vaultsearch import Vault

    with Vault.open(Path(vault), index_dir=Path(index_dir)) as v:
        v.search("warm up")
        v.search("warm up", mode="keyword")
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            cmd = json.loads(line)
            if "t0" in cmd:  # as bench/scale.py's reader: a search every 10 ms until found
                want = not cmd.get("gone", False)
                cpu = time.process_time()
                while want != any(
                    h.path == cmd["path"] for h in v.search(cmd["token"], mode="keyword")
                ):
                    time.sleep(0.01)
                seconds = time.monotonic() - cmd["t0"]
                cpu_ms = (time.process_time() - cpu) * 1000  # its refresh and polls, all threads
                print(json.dumps({"seconds": seconds, "cpu_ms": cpu_ms}), flush=True)
                continue
            out = _measured(
                lambda cmd=cmd: (
                    cmd.get("gone", False)
                    != any(h.path == cmd["path"] for h in v.search(cmd["token"], mode="keyword"))
                ),
                cmd["profile"],
                READER_STAGES,
            )
            print(json.dumps(out), flush=True)


class Child(LineChild):
    def __init__(
        self,
        role: str,
        vault: Path,
        index_dir: Path,
        trace: Path | None = None,
        tree: Path | None = None,
    ) -> None:
        """``tree``: a source tree (its ``src`` on ``PYTHONPATH``) to run instead of this one."""
        env = dict(os.environ)
        if tree is not None:
            env["PYTHONPATH"] = str(tree / "src")
        cmd = [sys.executable, __file__, "--child", role, str(vault), str(index_dir)]
        if trace is not None:
            calls = (
                "openat,open,fsync,fdatasync,mmap,newfstatat,statx,stat,lstat,rename,read,pread64"
            )
            cmd = ["strace", "-f", "-y", "-e", f"trace={calls}", "-o", str(trace), *cmd]
        super().__init__(cmd, env=env)


_CALL = re.compile(r"^(?:\d+\s+)?(\w+)\((.*)$")
_FD_PATH = re.compile(r"<([^>]*)>")


def trace_counts(trace: Path) -> list[dict[str, Any]]:
    """Per marked edit: calls by name, files opened (and how many distinct), fsyncs and
    the files they synced. Only the lines between a start and an end mark count."""
    edits: list[dict[str, Any]] = []
    inside = False
    calls: Counter[str] = Counter()
    opened: list[str] = []
    synced: list[str] = []
    read: Counter[str] = Counter()
    for line in trace.read_text(errors="replace").splitlines():
        if f"{MARK}-start" in line:
            inside, calls, opened, synced, read = True, Counter(), [], [], Counter()
            continue
        if f"{MARK}-end" in line:
            inside = False
            edits.append(
                {
                    "calls": dict(calls),
                    "opened": len(opened),
                    "opened_distinct": len(set(opened)),
                    "fsyncs": len(synced),
                    "fsynced": sorted(set(synced)),
                    "opened_by_kind": dict(Counter(_kind(p) for p in opened)),
                    "read_bytes_by_kind": dict(read),
                }
            )
            continue
        if not inside or "resumed>" in line:
            continue
        m = _CALL.match(line)
        if m is None:
            continue
        name, rest = m.groups()
        calls[name] += 1
        if name in ("openat", "open") and "= -1" not in rest:
            path = re.search(r'"([^"]*)"', rest)
            if path:
                opened.append(path.group(1))
        if name in ("read", "pread64") and (fd := _FD_PATH.search(rest)):
            size = re.search(r"= (\d+)$", rest)
            read[_kind(fd.group(1))] += int(size.group(1)) if size else 0
        if name in ("fsync", "fdatasync"):
            fd = _FD_PATH.search(rest)
            synced.append(fd.group(1) if fd else "?")
    return edits


def _kind(path: str) -> str:
    for key in ("/segments/", "/keywords/", "/graph", "/catalogs/", "/generations/", "/proc/"):
        if key in path:
            return key.strip("/")
    return "other"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", nargs=3, metavar=("ROLE", "VAULT", "INDEX"))
    parser.add_argument("vault", type=Path, nargs="?")
    parser.add_argument("index", type=Path, nargs="?")
    parser.add_argument("--edits", type=int, default=5)
    parser.add_argument("--strace", type=Path, help="a folder for the two traces")
    parser.add_argument("--no-profile", action="store_true", help="CPU totals only")
    parser.add_argument("--tree", type=Path, help="a source tree to split instead of this one")
    parser.add_argument(
        "--trees",
        type=Path,
        nargs="+",
        help="source trees to compare: edit -> searchable in one interleaved run",
    )
    parser.add_argument(
        "--notes",
        action="store_true",
        help="steps of new notes' lives (add, edit, move, delete) instead of edits of one",
    )
    parser.add_argument(
        "--indexes",
        type=Path,
        nargs="+",
        help="with --trees: one copy of the index per tree (INDEX is then unused)",
    )
    args = parser.parse_args()
    if args.child:
        role, vault, index = args.child
        {"writer": child_writer, "reader": child_reader}[role](vault, index)
        return
    vault, index = args.vault.resolve(), args.index.resolve()
    notes = sorted(
        (vault / EDITED_COPY).rglob("*.md"), key=lambda p: (p.stat().st_size, p.as_posix())
    )
    note = notes[len(notes) // 2]
    rel = note.relative_to(vault).as_posix()
    original = note.read_text(encoding="utf-8")
    if args.trees:
        if args.indexes is not None and len(args.indexes) != len(args.trees):
            parser.error("--indexes: one index per tree")
        if args.notes and args.indexes is None and len(args.trees) > 1:
            parser.error("--notes --trees: give each tree its own index (--indexes)")
        indexes = [i.resolve() for i in args.indexes] if args.indexes else None
        visible(vault, index, note, args.trees, args.edits, indexes, args.notes)
        return
    traces = None
    if args.strace is not None:
        args.strace.mkdir(parents=True, exist_ok=True)
        traces = {r: args.strace / f"{r}.trace" for r in ("writer", "reader")}
    writer = Child("writer", vault, index, traces and traces["writer"], args.tree)
    reader = Child("reader", vault, index, traces and traces["reader"], args.tree)
    tag = str(os.getpid())
    rows: list[dict[str, Any]] = []
    try:
        writer.ask()
        reader.ask()
        if args.notes:  # a writer's first run builds its link resolvers: not counted
            note.write_text(warm_up(original, note.stem, tag), encoding="utf-8")
            writer.ask({"path": rel, "profile": False})
        for i in range(args.edits):
            if args.notes:
                step = note_step(vault, i, tag, note.stem)
            else:
                token = f"zqstages{os.getpid()}x{i}token"
                note.write_text(f"{original}\n\nEdited: {token}\n", encoding="utf-8")
                step = Step("edit", [rel], rel, token)
            w = writer.ask({"paths": step.paths, "profile": not args.no_profile})
            ask = {"path": step.path, "token": step.token, "gone": step.gone}
            r = reader.ask({**ask, "profile": not args.no_profile})
            if not r["result"]:
                raise SystemExit(f"step {i} ({step.kind}): the reader did not see it")
            rows.append({"kind": step.kind, "writer": w, "reader": r})
            print(
                json.dumps(
                    {
                        "edit": i,
                        "kind": step.kind,
                        "writer_cpu_ms": w["cpu_ms"],
                        "reader_cpu_ms": r["cpu_ms"],
                    }
                )
            )
    finally:
        note.write_text(original, encoding="utf-8")
        try:
            writer.ask({"paths": [rel, *undo_note_steps(vault, tag)], "profile": False})
        finally:
            writer.close()
            reader.close()
    if not args.notes and len(rows) > 1:
        rows = rows[1:]  # a writer's first run builds its resolvers
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_kind.setdefault(row["kind"], []).append(row)
    for kind, counted in by_kind.items():
        summary: dict[str, Any] = {"note": rel, "kind": kind, "edits": len(counted)}
        for side in ("writer", "reader"):
            summary[side] = {
                "cpu_ms_median": statistics.median(r[side]["cpu_ms"] for r in counted),
                "read_bytes_median": statistics.median(r[side]["read_bytes"] for r in counted),
                "read_syscalls_median": statistics.median(
                    r[side]["read_syscalls"] for r in counted
                ),
                "stages_ms_median": {
                    k: round(statistics.median(r[side]["stages"][k] for r in counted), 2)
                    for k in counted[0][side]["stages"]
                },
            }
            if traces is not None and not args.notes:
                summary[side]["trace"] = trace_counts(traces[side])[: len(rows) + 1]
        print(json.dumps(summary, indent=1))


def visible(
    vault: Path,
    index: Path,
    note: Path,
    trees: list[Path],
    edits: int,
    indexes: list[Path] | None = None,
    notes: bool = False,
) -> None:
    """Edit -> searchable (bench/scale.py's measure: the file saved, a long-lived writer's
    update, a reader in another process polling a keyword search) for each source tree in
    turn, ABBA order. On one shared index each tree makes its own edit, and after it every
    other tree's reader follows too (untimed), so each timed follow is of one generation.
    With ``indexes`` (one per tree) each change is made to the vault once and every tree's
    writer brings its own index level with it, timed from its own start; ``notes``: the
    changes are steps of new notes' lives (``note_step``)."""
    rel = note.relative_to(vault).as_posix()
    original = note.read_text(encoding="utf-8")
    own = indexes or [index] * len(trees)
    pairs = [
        (Child("writer", vault, i, tree=t), Child("reader", vault, i, tree=t))
        for t, i in zip(trees, own, strict=True)
    ]
    tag = str(os.getpid())
    rows: dict[str, list[dict[str, Any]]] = {str(t): [] for t in trees}
    try:
        for w, r in pairs:
            w.ask()
            r.ask()
        for i in range(-1, edits):  # -1: each writer's first run builds its link resolvers
            order = list(range(len(trees)))
            shared: Step | None = None
            if indexes is not None and i >= 0 and notes:
                shared = note_step(vault, i, tag, note.stem)
            elif indexes is not None:
                token = f"zqvisible{tag}x{i}token"
                text = warm_up(original, note.stem, token) if notes else None
                note.write_text(text or f"{original}\n\nEdited: {token}\n", encoding="utf-8")
                shared = Step("edit", [rel], rel, token)
            for n in order if i % 2 == 0 else order[::-1]:
                t0 = time.monotonic()
                if shared is not None:
                    step = shared
                else:
                    token = f"zqvisible{tag}x{i}x{n}token"
                    note.write_text(f"{original}\n\nEdited: {token}\n", encoding="utf-8")
                    step = Step("edit", [rel], rel, token)
                done = pairs[n][0].ask({"paths": step.paths, "profile": False})
                ask = {"path": step.path, "token": step.token, "gone": step.gone, "t0": t0}
                seen = pairs[n][1].ask(ask)
                if indexes is None:
                    for m, (_, other) in enumerate(pairs):
                        if m != n:
                            other.ask(ask)
                row = {
                    "kind": step.kind,
                    "visible_s": seen["seconds"],
                    "writer_s": done["seconds"],
                    "writer_cpu_ms": done["cpu_ms"],
                    "reader_s": seen["seconds"] - done["seconds"],
                    "reader_cpu_ms": seen.get("cpu_ms", 0.0),
                    "load1": os.getloadavg()[0],
                }
                if i >= 0:
                    rows[str(trees[n])].append(row)
                print(json.dumps({"edit": i, "tree": str(trees[n]), **row}), flush=True)
    finally:
        note.write_text(original, encoding="utf-8")
        left = undo_note_steps(vault, tag)
        try:
            for w, _ in pairs if indexes is not None else pairs[:1]:
                w.ask({"paths": [rel, *left], "profile": False})
        finally:
            for w, r in pairs:
                w.close()
                r.close()
    for tree, got in rows.items():
        for kind in dict.fromkeys(x["kind"] for x in got):
            of_kind = [x for x in got if x["kind"] == kind]
            summary = {
                k: round(statistics.median(x[k] for x in of_kind), 3)
                for k in (
                    "visible_s",
                    "writer_s",
                    "writer_cpu_ms",
                    "reader_s",
                    "reader_cpu_ms",
                    "load1",
                )
            }
            print(
                json.dumps({"tree": tree, "kind": kind, "edits": len(of_kind), "median": summary})
            )


if __name__ == "__main__":
    main()
