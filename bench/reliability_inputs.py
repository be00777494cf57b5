"""Reliability against hostile inputs: odd files, odd query strings, OS watches.

1. Every case of tests/hostile_files.py in its own vault beside normal notes: `index`,
   `index --check` and `check` through the Python API in a worker process that loads the
   model once; the parent gives each case a time limit and kills a worker that hangs.
   Cases that need a user other than root run in a second worker under setpriv.
2. Hostile query strings through the CLI (argv bytes too), the Python API and a real MCP
   stdio session with the SDK client, plus malformed JSON-RPC lines on the server's stdin.
3. OS (inotify) watches for 50 notes beside large .git and node_modules folders:
   watchdog's recursive observer (what `watch` used before) against `vaultsearch watch`.

Results go to docs/benchmarks.md, section "Reliability: hostile inputs".
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
from tests.hostile_files import (  # noqa: E402
    CASES,
    NORMAL_WORDS,
    Case,
    catalog_view,
    outcome_ok,
    run_case_outcome,
    write_normal_notes,
)

from _report import CACHE, write_section  # noqa: E402

PARTS = CACHE / "reliability"
FAST_LIMIT = 120.0
SLOW_LIMIT = 900.0
PY = sys.executable
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1"}


# --- 1. hostile files --------------------------------------------------------------
def worker(tmp: Path) -> None:
    """Read case names on stdin, answer one JSON line per case on stdout."""
    from vaultsearch import Vault
    from vaultsearch.app.browse import Browser

    by_name = {c.name: c for c in CASES}
    for n, line in enumerate(sys.stdin):
        case = by_name[line.strip()]
        work = tmp / f"case{n}"
        root, index_dir = work / "vault", work / "index"
        root.mkdir(parents=True)
        work.chmod(0o755)
        result: dict[str, Any] = {"case": case.name}
        try:
            write_normal_notes(root)
            case.make(root)
            vault = Vault.open(root, index_dir=index_dir)
            t0 = time.perf_counter()
            summary = vault.index()
            result["index_s"] = round(time.perf_counter() - t0, 2)
            result["check"] = vault.check().status
            result["verify_ok"] = vault.manager().verify().ok
            notes, failures = catalog_view(index_dir)
            outcome, reason = run_case_outcome(notes, failures, case)
            result.update(outcome=outcome, reason=reason, chunks=summary.chunks_written)
            lost = [
                w
                for w, p in NORMAL_WORDS.items()
                if p not in [h.path for h in vault.search(w, mode="keyword", top_k=50)]
            ]
            result["lost"] = lost
            if case.word and outcome == "indexed":
                hits = [h.path for h in vault.search(case.word, mode="hybrid", top_k=50)]
                result["found"] = case.path in hits
            if case.path.endswith(".md") and os.path.isfile(root / case.path):
                t0 = time.perf_counter()
                try:
                    Browser(vault).read_note(case.path, end_line=5)
                    result["read_note"] = "ok"
                except Exception as exc:  # a VaultsearchError is a clear answer too
                    from vaultsearch.errors import VaultsearchError

                    if not isinstance(exc, VaultsearchError):
                        raise
                    result["read_note"] = "error"
                result["read_note_s"] = round(time.perf_counter() - t0, 3)
            vault.close()
        except Exception:
            result["crash"] = traceback.format_exc()[-2000:]
        print(json.dumps(result), flush=True)
        shutil.rmtree(work, ignore_errors=True)


class Worker:
    def __init__(self, tmp: Path, as_nobody: bool) -> None:
        self.tmp, self.as_nobody = tmp, as_nobody
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> subprocess.Popen[str]:
        cmd = [PY, __file__, "--worker", str(self.tmp)]
        env = ENV
        if self.as_nobody:
            home = self.tmp / "home"
            home.mkdir(exist_ok=True)
            home.chmod(0o777)
            env = {**ENV, "HOME": str(home)}
            cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
        return subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT
        )

    def run(self, case: Case, limit: float) -> dict[str, Any]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self.start()
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(case.name + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], limit)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            hung = self.proc.poll() is None
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            return {"case": case.name, "hang" if hung else "crash": f"no answer in {limit} s"}
        return dict(json.loads(line))

    def close(self) -> None:
        if self.proc is not None:
            assert self.proc.stdin
            self.proc.stdin.close()
            self.proc.wait(60)


def hostile_files(tmp: Path) -> tuple[list[dict[str, Any]], str]:
    nobody_ok = os.geteuid() == 0 and shutil.which("setpriv") is not None
    tmp.chmod(0o777)
    workers = {False: Worker(tmp, False), True: Worker(tmp, True)}
    rows = []
    for case in CASES:
        if case.non_root and not nobody_ok:
            rows.append({"case": case.name, "skipped": "needs root and setpriv to switch user"})
            continue
        w = workers[case.non_root and os.geteuid() == 0]
        t0 = time.perf_counter()
        row = w.run(case, SLOW_LIMIT if case.slow else FAST_LIMIT)
        row["wall_s"] = round(time.perf_counter() - t0, 1)
        row["expect"] = case.expect
        row["ok"] = (
            "crash" not in row
            and "hang" not in row
            and outcome_ok(case, row.get("outcome", ""))
            and (row.get("outcome") != "failed" or bool(row.get("reason")))
            and not row.get("lost")
            and row.get("found", True)
            and row.get("check") == "current"
            and row.get("verify_ok") is True
        )
        rows.append(row)
        print(
            f"{'ok ' if row['ok'] else 'BAD'} {case.name}: {row.get('outcome')} {row.get('reason') or ''}"
        )
    for w in workers.values():
        w.close()
    return rows, files_table(rows)


def files_table(rows: list[dict[str, Any]]) -> str:
    ran = [r for r in rows if "skipped" not in r]
    crashes = sum("crash" in r for r in ran)
    hangs = sum("hang" in r for r in ran)
    skipped = [r for r in ran if r.get("outcome") == "failed"]
    unexplained = sum(not r.get("reason") for r in skipped)
    lost = sum(bool(r.get("lost")) for r in ran)
    bad = [r for r in ran if not r["ok"]]
    out = [
        f"{len(rows)} cases ({len(ran)} run), each in its own vault beside 3 normal notes: "
        f"**{crashes} crashes, {hangs} hangs, {len(skipped)} skipped of which "
        f"{unexplained} without a reason, {lost} runs lost a normal note, "
        f"{len(bad)} not as expected**. Each case: `index`, `index --check` (`current`), "
        f"`check` (consistent), keyword search for every normal note, hybrid search for the "
        f"case's own word, `read_note` on the file. Before this work (figures from issue 9): "
        f"a FIFO hung every run, a non-UTF-8 name or a symlink loop aborted every run, the "
        f"alias bomb took 29 s and 1.67 GB, 100,000 headings became 100,026 chunks and "
        f"831 s, `read_note` on the 45 MB note took 17 s a call, and the NUL-padded note "
        f"was dropped after an edit.\n",
        "| case | expected | outcome | recorded reason | index s | read_note s |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        outcome = r.get("outcome") or next((k for k in ("skipped", "hang", "crash") if k in r), "?")
        reason = (r.get("reason") or r.get("skipped") or r.get("hang") or "").replace("|", "\\|")
        name = r["case"].replace("|", "\\|")
        mark = "" if r.get("ok", True) else " **(!)**"
        out.append(
            f"| {name} | {r.get('expect', '')} | {outcome}{mark} | {reason[:90]} | "
            f"{r.get('index_s', '')} | {r.get('read_note_s', '')} |"
        )
    return "\n".join(out)


# --- 2. hostile query strings ------------------------------------------------------
QUERIES: list[str] = [
    "\ud800",
    "a\ud800b",
    "\udfff\ud800",
    "\udcff",
    "\x00",
    "plums\x00kumquats",
    "x" * 100_000,
    "plums " * 20_000,
    "\x01\x02\x1b[31mred\x1b[0m",
    "\x7f\x9b",
    "",
    "   ",
    "\t\n\r",
    '"',
    '"unclosed phrase',
    "(",
    ")",
    "plums AND",
    "OR",
    "NOT",
    "-",
    "--",
    "-plums",
    "+",
    "*",
    "?",
    "~",
    "^2",
    "plums^",
    "a:b",
    "title:",
    "tag:",
    "path:",
    "path:../../etc",
    "[",
    "{",
    "}",
    "\\",
    "/",
    "a:[1 TO",
    "🍑",
    "\u202eplums",
    "\ufeff",
    "\uffff",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "ＰＬＵＭＳ",
    "' OR 1=1 --",
    "<script>alert(1)</script>",
    "%s%n%x",
    "${jndi:ldap://x}",
]
MODES = ("hybrid", "keyword", "semantic")


def query_vault(tmp: Path) -> tuple[Path, Path]:
    from vaultsearch import Vault

    root, index_dir = tmp / "qvault", tmp / "qindex"
    root.mkdir()
    write_normal_notes(root)
    Vault.open(root, index_dir=index_dir).index()
    return root, index_dir


def python_queries(root: Path, index_dir: Path) -> dict[str, int]:
    from vaultsearch import Vault
    from vaultsearch.errors import VaultsearchError

    vault = Vault.open(root, index_dir=index_dir)
    counts = {"calls": 0, "results": 0, "clear errors": 0, "tracebacks": 0}
    for q in QUERIES:
        for mode in MODES:
            counts["calls"] += 1
            try:
                vault.search(q, mode=mode, tags=[q[:50]] if q else None)
                counts["results"] += 1
            except VaultsearchError:
                counts["clear errors"] += 1
            except Exception:
                counts["tracebacks"] += 1
                print("python traceback:", repr(q[:30]), mode, traceback.format_exc()[-300:])
    vault.close()
    return counts


def cli_queries(root: Path, index_dir: Path) -> dict[str, int]:
    counts = {"calls": 0, "results": 0, "clear errors": 0, "tracebacks": 0, "not in argv": 0}
    argvs: list[tuple[bytes | str, str]] = [(q, "keyword") for q in QUERIES]
    argvs += [(q, "hybrid") for q in ("\ud800", "\udcff", "plums", "")]
    argvs += [(b"caf\xe9 plums", "keyword"), (b"\xff\xfe", "hybrid"), (b"\xed\xa0\x80", "keyword")]
    for q, mode in argvs:
        arg = os.fsencode(q) if isinstance(q, str) and _encodable(q) else q
        if isinstance(arg, str) or b"\x00" in arg or len(arg) > 100_000:
            counts["not in argv"] += 1  # a NUL, a lone surrogate or 100 KB cannot be an argument
            continue
        counts["calls"] += 1
        cmd: list[str | bytes] = [PY, "-m", "vaultsearch.cli", "search", "--vault", str(root)]
        cmd += ["--index-dir", str(index_dir), "--mode", mode, "--json", "--", arg]
        done = subprocess.run(cmd, capture_output=True, env=ENV, timeout=180)
        if b"Traceback" in done.stderr:
            counts["tracebacks"] += 1
            print("cli traceback:", arg[:30], done.stderr[-400:])
        elif done.returncode == 0:
            json.loads(done.stdout)
            counts["results"] += 1
        elif done.returncode == 2 and done.stderr.startswith(b"error: "):
            counts["clear errors"] += 1
        else:
            counts["tracebacks"] += 1
            print("cli odd exit:", arg[:30], done.returncode, done.stderr[-300:])
    return counts


def _utf8(q: str) -> bool:
    """The SDK client cannot even send a lone surrogate (it fails to encode the
    request): those strings go to the server as raw JSON escapes instead."""
    try:
        q.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _encodable(q: str) -> bool:
    try:
        os.fsencode(q)
    except UnicodeEncodeError:
        return False
    return True


def mcp_queries(root: Path, index_dir: Path, log: Path) -> dict[str, int]:
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    counts = {"calls": 0, "results": 0, "tool errors": 0, "no reply": 0}
    params = StdioServerParameters(
        command=PY,
        args=["-m", "vaultsearch.cli", "mcp", str(root), "--index-dir", str(index_dir)],
        env={**ENV, "VAULTSEARCH_MCP_LOG": str(log)},
        cwd=str(ROOT),
    )
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"query": q, "mode": m}) for q in QUERIES if _utf8(q) for m in MODES
    ]
    for bad in ("\x00", "../../etc/passwd", "x" * 10_000, "", "-", "🍑.md", "\u202e.md"):
        calls += [
            ("read_note", {"path": bad}),
            ("related", {"path": bad}),
            ("list_notes", {"folder": bad, "tag": bad}),
            ("search", {"query": "plums", "tags": [bad], "folders": [bad]}),
        ]

    async def session() -> None:
        async with Client(params, read_timeout_seconds=120) as c:
            for name, args in calls:
                counts["calls"] += 1
                try:
                    with anyio.fail_after(120):
                        r = await c.call_tool(name, args)
                except TimeoutError:
                    counts["no reply"] += 1
                    continue
                except Exception as exc:  # an MCPError reply is still a reply
                    counts["tool errors"] += 1
                    print("mcp error reply:", name, repr(args)[:60], str(exc)[:120])
                    continue
                counts["tool errors" if r.is_error else "results"] += 1

    anyio.run(session)
    return counts


RAW_LINES: list[bytes] = [
    b"not json",
    b"{",
    b"[1, 2]",
    b"[]",
    b'"a string"',
    b"null",
    b"42",
    b'{"jsonrpc": "1.0", "id": 7, "method": "ping"}',
    b'{"id": 8, "method": "ping"}',
    b'{"jsonrpc": "2.0", "id": 9}',
    b'{"jsonrpc": "2.0", "id": {}, "method": "ping"}',
    b'{"jsonrpc": "2.0", "id": 10, "method": 5}',
    b'{"jsonrpc": "2.0", "id": 11, "method": "ping", "params": "x"}',
    b"\xff\xfe\x00garbage",
    b'{"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": '
    b'{"name": "search", "arguments": {"query": "\\ud800", "mode": "semantic"}}}',
    b'{"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": '
    b'{"name": "search", "arguments": {"query": "\\udfff\\ud800"}}}',
    b'{"jsonrpc": "2.0", "id": 14, "method": "no/such/method"}',
    *(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 100 + i,
                "method": "tools/call",
                "params": {"name": tool, "arguments": args},
            }
        ).encode()
        for i, (tool, args) in enumerate(
            [("search", {"query": q, "mode": m}) for q in QUERIES if not _utf8(q) for m in MODES]
            + [
                ("read_note", {"path": "\ud800.md"}),
                ("related", {"path": "\udcff"}),
                ("list_notes", {"folder": "\ud800", "tag": "\udfff"}),
                ("search", {"query": "plums", "tags": ["\ud800"], "folders": ["\udcff"]}),
            ]
        )
    ),
    b"[" * 100_000,
    b'{"jsonrpc": "2.0", "id": 15, "method": "ping", "x": "' + b"y" * 1_000_000 + b'"}',
]


def raw_lines(root: Path, index_dir: Path) -> dict[str, int]:
    """Each line gets exactly one reply, and the server still answers a ping after all."""
    cmd = [PY, "-m", "vaultsearch.cli", "mcp", str(root), "--index-dir", str(index_dir)]
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV
    )
    assert proc.stdin and proc.stdout

    def send(line: bytes) -> None:
        assert proc.stdin
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()

    def reply(limit: float = 120) -> dict[str, Any] | None:
        assert proc.stdout
        ready, _, _ = select.select([proc.stdout], [], [], limit)
        return json.loads(proc.stdout.readline()) if ready else None

    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "b", "version": "1"},
    }
    send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}).encode())
    reply()
    send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    counts = {"lines": 0, "error replies": 0, "results": 0, "no reply": 0}
    for line in RAW_LINES:
        counts["lines"] += 1
        send(line)
        answer = reply()
        if answer is None:
            counts["no reply"] += 1
            print("no reply to", line[:80])
        elif "error" in answer:
            counts["error replies"] += 1
        else:
            counts["results"] += 1
    send(b'{"jsonrpc": "2.0", "id": 99, "method": "ping"}')
    alive = reply() == {"jsonrpc": "2.0", "id": 99, "result": {}}
    proc.stdin.close()
    proc.wait(60)
    err = proc.stderr.read() if proc.stderr else b""
    counts["tracebacks"] = err.count(b"Traceback")
    counts["still serving"] = int(alive)
    return counts


# --- 3. OS watches -------------------------------------------------------------------
def watch_vault(tmp: Path) -> Path:
    root = tmp / "wvault"
    for i in range(50):
        folder = root / "notes" / f"f{i % 5}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"n{i}.md").write_text(f"# Note {i}\n\nText {i}.\n", encoding="utf-8")
    for top, count in ((".git/objects", 10_240), ("node_modules", 12_000)):
        for i in range(count):
            (root / top / f"d{i // 100}" / f"e{i % 100}").mkdir(parents=True, exist_ok=True)
    return root


def inotify_watches(pid: int | str) -> int:
    total = 0
    for fd in Path(f"/proc/{pid}/fdinfo").iterdir():
        try:
            total += fd.read_text().count("inotify wd:")
        except OSError:
            continue
    return total


def watches_before(root: Path) -> int:
    """watchdog's recursive inotify observer on the vault, as `watch` scheduled it before."""
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers import Observer

    base = inotify_watches("self")
    observer = Observer()
    observer.schedule(FileSystemEventHandler(), str(root), recursive=True)
    observer.start()
    try:
        return inotify_watches("self") - base
    finally:
        observer.stop()
        observer.join()


def watches_after(root: Path, index_dir: Path) -> int:
    cmd = [PY, "-m", "vaultsearch.cli", "watch", str(root), "--index-dir", str(index_dir)]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        assert proc.stderr
        for line in proc.stderr:
            if "indexed:" in line:
                break
        return inotify_watches(proc.pid)
    finally:
        proc.terminate()
        proc.wait(60)


# --- main --------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--only", choices=("files", "queries", "watches"), help="one part only")
    args = ap.parse_args()
    if args.worker:
        worker(Path(args.worker))
        return
    load = Path("/proc/loadavg").read_text().split()[:3]
    tmp = Path(tempfile.mkdtemp(prefix="vaultsearch-hostile-"))
    parts: dict[str, str] = {}
    try:
        if args.only in (None, "files"):
            t0 = time.perf_counter()
            _, table = hostile_files(tmp)
            parts["files"] = f"### Hostile files ({time.perf_counter() - t0:.0f} s)\n\n{table}"
        if args.only in (None, "queries"):
            root, index_dir = query_vault(tmp)
            py = python_queries(root, index_dir)
            cli = cli_queries(root, index_dir)
            mcp = mcp_queries(root, index_dir, tmp / "mcp.log")
            raw = raw_lines(root, index_dir)
            parts["queries"] = queries_table(py, cli, mcp, raw)
        if args.only in (None, "watches"):
            root = watch_vault(tmp)
            dirs = sum(1 for _ in root.rglob("*") if _.is_dir())
            before = watches_before(root)
            after = watches_after(root, tmp / "windex")
            parts["watches"] = (
                "### OS watches\n\n"
                f"50 notes in 6 folders beside `.git/objects` and `node_modules` "
                f"({dirs:,} folders in all), inotify watches counted in "
                "`/proc/<pid>/fdinfo`:\n\n| observer | inotify watches |\n| --- | --- |\n"
                f"| before: watchdog's recursive observer | {before:,} |\n"
                f"| after: `vaultsearch watch` | {after:,} |"
            )
    finally:
        for path in tmp.rglob("*"):
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(tmp, ignore_errors=True)
    # each part is kept, so `--only` re-measures one part and the section keeps the rest
    PARTS.mkdir(parents=True, exist_ok=True)
    for name, text in parts.items():
        (PARTS / f"{name}.md").write_text(f"{text}\n\n(Load average at start: {' '.join(load)}.)")
    kept = [PARTS / f"{n}.md" for n in ("files", "queries", "watches")]
    body = "\n\n".join(p.read_text() for p in kept if p.is_file())
    write_section("reliability", "Reliability: hostile inputs", body)


def queries_table(
    py: dict[str, int], cli: dict[str, int], mcp: dict[str, int], raw: dict[str, int]
) -> str:
    return (
        f"### Hostile query strings\n\n{len(QUERIES)} strings (lone surrogates, NULs, "
        "100 KB strings, control characters, empty and blank, Tantivy syntax, injection-"
        "looking text), plus non-UTF-8 argv bytes on the CLI and hostile paths, tags and "
        "folders over MCP.\n\n"
        "| surface | calls | results | clear errors | tracebacks | no reply |\n"
        "| --- | --- | --- | --- | --- | --- |\n"
        f"| Python `Vault.search` (3 modes) | {py['calls']} | {py['results']} | "
        f"{py['clear errors']} | {py['tracebacks']} | 0 |\n"
        f"| CLI `vaultsearch search` ({cli['not in argv']} strings cannot be argv) | "
        f"{cli['calls']} | {cli['results']} | {cli['clear errors']} | {cli['tracebacks']} | 0 |\n"
        f"| MCP stdio, SDK client session | {mcp['calls']} | {mcp['results']} | "
        f"{mcp['tool errors']} | 0 | {mcp['no reply']} |\n"
        f"| MCP stdio, raw malformed lines | {raw['lines']} | {raw['results']} | "
        f"{raw['error replies']} | {raw['tracebacks']} | {raw['no reply']} |\n\n"
        f"After the raw lines the server still answers a ping: "
        f"{'yes' if raw['still serving'] else 'NO'}."
    )


if __name__ == "__main__":
    main()
