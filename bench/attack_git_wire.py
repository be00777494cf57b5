"""Reliability battery, issue 22 parts 1, 4, 8 and 10: git sources and the wire.

Against the real product: `vaultsearch` subprocesses (`index`, `sources add`, `mcp`
over stdio and over HTTP), real git repositories, raw sockets for the HTTP cases.

1. git source: option-shaped branches and urls in sources.toml and through
   `sources add`, `fd::`/`ext::` transports, a remote whose default branch is named like
   an option; after every case no marker file exists anywhere; a plain local-path git
   source still clones and then follows a new commit.
2. stdio MCP: 50 hostile lines (deep nesting 61-100,000 levels, lines over 4 MiB,
   invalid UTF-8, non-object JSON, ...), each answered, then `ping` and a real search.
3. HTTP: Host and Origin near misses on /mcp and REST, deep and huge bodies on both, a
   100 MB body sent for real (the server's peak memory before and after), then a
   session.

    python bench/attack_git_wire.py
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))
from tests.test_sources import LIB, git, make_repo, push_change  # noqa: E402
from tests.test_wire_robustness import hostile_lines  # noqa: E402

PY = sys.executable
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1"}
HOSTILE_BRANCH = "--upload-pack=touch pwned; git-upload-pack"
MARK = "pwned"
NOTES = {
    "alpha.md": "# Alpha\n\nPlums ripen in late summer beside the old wall.\n",
    "beta.md": "# Beta\n\nHerons wait in shallow water.\n",
}
Row = dict[str, Any]


def row(surface: str, case: str, expected: str, observed: str, ok: bool) -> Row:
    return {"surface": surface, "case": case, "expected": expected, "observed": observed,
            "ok": bool(ok)}  # fmt: skip


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "vaultsearch.cli", *args],
        cwd=cwd, env=ENV, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip


def markers(tmp: Path) -> list[Path]:
    return [p for p in tmp.rglob(f"{MARK}*")] + [p for p in (Path("/tmp"),) if (p / MARK).exists()]


def first_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return (lines[0] if lines else "(nothing)")[:110]


def new_vault(tmp: Path, name: str) -> Path:
    vault = tmp / name / "vault"
    vault.mkdir(parents=True)
    for rel, text in NOTES.items():
        (vault / rel).write_text(text, encoding="utf-8")
    return vault


# --- 1. git source ------------------------------------------------------------------
def git_cases(tmp: Path) -> list[Row]:
    rows: list[Row] = []
    base = tmp / "git"
    work, bare = make_repo(base / "repo", LIB)
    vault = new_vault(base, "v1")
    managed = vault / ".vaultsearch" / "sources.toml"
    managed.parent.mkdir()
    managed.write_text(
        f'[[sources]]\nname = "lib"\ntype = "git"\nurl = "{bare}"\nbranch = "main"\n'
    )
    first = cli("index", str(vault), "--quiet", cwd=base)
    clone = vault / ".vaultsearch" / "clones" / "lib"
    managed.write_text(managed.read_text().replace('"main"', json.dumps(HOSTILE_BRANCH)))
    runs = [cli("index", str(vault), cwd=base) for _ in range(2)]
    codes = [r.returncode for r in runs]
    managed.write_text(managed.read_text().replace(json.dumps(HOSTILE_BRANCH), '"main"'))
    ok = (
        first.returncode == 0 and (clone / ".git").is_dir() and codes == [2, 2]
        and all("git would read it as an option" in r.stderr for r in runs) and not markers(tmp)
    )  # fmt: skip
    rows.append(row("git source", f"sources.toml branch {HOSTILE_BRANCH!r}, clone exists, 2 index runs",
                    "exit 2 with one sentence, nothing run", f"exit {codes}; {first_line(runs[0].stderr)}; "
                    f"{len(markers(tmp))} marker files", ok))  # fmt: skip

    for url in ("fd::3", f"ext::sh -c touch% {tmp}/{MARK}-file"):
        good = managed.read_text()
        managed.write_text(good.replace(f'"{bare}"', json.dumps(url)))
        start = time.perf_counter()
        done = cli("index", str(vault), cwd=base)
        took = time.perf_counter() - start
        managed.write_text(good)
        ok = done.returncode == 2 and "is refused" in done.stderr and not markers(tmp)
        rows.append(row("git source", f"sources.toml url {url[:24]!r}, index",
                        "exit 2 with one sentence, nothing run",
                        f"exit {done.returncode} in {took:.1f} s; {first_line(done.stderr)}", ok))  # fmt: skip

    add_cases = [
        ("sources add --branch option", ["lib2", str(bare), "--branch", HOSTILE_BRANCH]),
        ("sources add url fd::3", ["lib2", "fd::3"]),
        ("sources add url ext::sh", ["lib2", f"ext::sh -c touch% {tmp}/{MARK}-ext"]),
        ("sources add url --upload-pack=", ["lib2", "--type", "git", "--", f"--upload-pack=touch {MARK}"]),
        ("sources add url ssh://-oProxyCommand", ["lib2", f"ssh://-oProxyCommand=touch%20{MARK}/x"]),
        ("sources add url git://", ["lib2", "git://127.0.0.1:9/lib.git"]),
        ("sources add branch +main (force refspec)", ["lib2", str(bare), "--branch", "+main"]),
    ]  # fmt: skip
    before = managed.read_text()
    for case, args in add_cases:
        start = time.perf_counter()
        done = cli("sources", "--vault", str(vault), "add", *args, cwd=base)
        took = time.perf_counter() - start
        ok = done.returncode == 2 and managed.read_text() == before and not markers(tmp)
        ok = ok and ("is refused" in done.stderr or "not a branch name git takes" in done.stderr)
        rows.append(row("git source", case, "refused in one sentence, file unchanged",
                        f"exit {done.returncode} in {took:.1f} s; {first_line(done.stderr)}", ok))  # fmt: skip

    # a remote whose default branch is named like an option; the source names no branch
    odd = "--upload-pack=./x.sh"
    hook = work / "x.sh"
    hook.write_text(f'#!/bin/sh\ntouch {tmp}/{MARK}-x\nexec git-upload-pack "$@"\n')
    hook.chmod(0o755)
    git(work, "add", "x.sh")
    git(work, "commit", "-qm", "x.sh")
    made = subprocess.run(["git", "push", "-q", str(bare), f"HEAD:refs/heads/{odd}"], cwd=work,
                          capture_output=True, text=True, check=False)  # fmt: skip
    if made.returncode == 0:
        git(bare, "symbolic-ref", "HEAD", f"refs/heads/{odd}")
        vault2 = new_vault(base, "v2")
        (vault2 / ".vaultsearch").mkdir()
        (vault2 / ".vaultsearch" / "sources.toml").write_text(
            f'[[sources]]\nname = "lib"\ntype = "git"\nurl = "{bare}"\n'
        )
        runs = [cli("index", str(vault2), "--quiet", cwd=work) for _ in range(2)]
        ok = all(r.returncode == 0 for r in runs) and not markers(tmp)
        got = (vault2 / ".vaultsearch" / "clones" / "lib" / "x.sh").exists()
        rows.append(row("git source", f"remote HEAD is branch {odd!r} tracking x.sh, 2 index runs",
                        "cloned and fetched, x.sh never run", f"exit {[r.returncode for r in runs]}; "
                        f"x.sh cloned: {got}; {len(markers(tmp))} marker files", ok and got))  # fmt: skip
        git(bare, "symbolic-ref", "HEAD", "refs/heads/main")
    else:
        rows.append(row("git source", f"remote branch {odd!r}", "cloned, never run",
                        f"git refused to create the ref: {first_line(made.stderr)}", True))  # fmt: skip

    vault3 = new_vault(base, "v3")
    assert cli("sources", "--vault", str(vault3), "add", "lib", str(bare), "--type", "git",
               "--branch", "main", cwd=base).returncode == 0  # fmt: skip
    one = cli("index", str(vault3), "--quiet", "--json", cwd=base)
    push_change(work, bare, {"index.md": "# Index\n\nNow about damsons.\n"})
    two = cli("index", str(vault3), "--quiet", "--json", cwd=base)
    found = cli(
        "search", "damsons", "--vault", str(vault3), "--json", "--mode", "keyword", cwd=base
    )
    paths = [h["path"] for h in json.loads(found.stdout or "[]")]
    ok = one.returncode == two.returncode == 0 and "lib:index.md" in paths
    rows.append(row("git source", "plain local path source: clone, push, second index",
                    "cloned, then the new commit indexed", f"exit {one.returncode}/{two.returncode}; "
                    f"search 'damsons' -> {paths[:2]}", ok))  # fmt: skip

    from vaultsearch.gitvalues import branch_problem

    names = ["main", "feature/x", "v1.2", "é", "-x", "--upload-pack=x", "a..b", "a b", "a~1",
             "a^", "a:b", "a?", "a*", "a[", "a\\b", "HEAD", "a.lock", "a/.b", ".a", "a/", "/a",
             "a//b", "a.", "x@{y", "@{-1}", "a\tb", "a\x7fb", "refs/heads/x", "a@b"]  # fmt: skip
    agree = sum(
        (branch_problem(n) is None)
        == (subprocess.run(["git", "check-ref-format", "--branch", n], cwd="/",
                           capture_output=True, check=False).returncode == 0)
        for n in names
    )  # fmt: skip
    rows.append(row("git source", "branch rules vs git check-ref-format --branch",
                    "agree on every name", f"{agree} of {len(names)} agree", agree == len(names)))  # fmt: skip
    return rows


# --- 2. stdio MCP -------------------------------------------------------------------
def indexed_vault(tmp: Path) -> tuple[Path, Path]:
    vault = new_vault(tmp, "wire")
    index_dir = vault.parent / "index"
    done = cli("index", str(vault), "--index-dir", str(index_dir), "--quiet", cwd=tmp)
    assert done.returncode == 0, done.stderr
    return vault, index_dir


def stdio_cases(vault: Path, index_dir: Path) -> list[Row]:
    rows: list[Row] = []
    argv = [PY, "-m", "vaultsearch.cli", "mcp", str(vault), "--index-dir", str(index_dir),
            "--no-watch"]  # fmt: skip
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=ENV)  # fmt: skip
    assert proc.stdin and proc.stdout

    def ask(line: bytes) -> dict[str, Any] | None:
        assert proc.stdin and proc.stdout
        try:
            proc.stdin.write(line + b"\n")
            proc.stdin.flush()
        except BrokenPipeError:
            return None
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        return dict(json.loads(proc.stdout.readline())) if ready else None

    init = {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}  # fmt: skip
    ask(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}).encode())
    proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    answered = 0
    for line, request_id, code in hostile_lines():
        reply = ask(line)
        got = "no answer" if reply is None else (
            f"id {reply.get('id')}, " + (f"error {reply['error']['code']}" if "error" in reply
                                         else "result"))  # fmt: skip
        ok = reply is not None and reply.get("id") == request_id
        ok = ok and (code is None or (reply or {}).get("error", {}).get("code") == code)
        answered += ok
        want = f"id {request_id}, " + (f"error {code}" if code is not None else "SDK's answer")
        shown = line[:40].decode("utf-8", "replace").replace("|", "\\|").replace("\n", " ")
        rows.append(row("stdio MCP", f"{len(line):,} B: {shown!r}"[:90], want, got, ok))
    ping = ask(b'{"jsonrpc": "2.0", "id": 1000, "method": "ping"}')
    call = {"name": "search", "arguments": {"query": "plums", "mode": "hybrid"}}
    found = ask(json.dumps({"jsonrpc": "2.0", "id": 1001, "method": "tools/call",
                            "params": call}).encode())  # fmt: skip
    hits = ((found or {}).get("result") or {}).get("structuredContent", {}).get("hits", [])
    ok = (
        ping == {"jsonrpc": "2.0", "id": 1000, "result": {}}
        and bool(hits)
        and hits[0]["path"] == "alpha.md"
    )
    rows.append(row("stdio MCP", f"after {len(hostile_lines())} hostile lines: ping and a search",
                    "both answered", f"ping {'ok' if ping else 'none'}; top hit "
                    f"{hits[0]['path'] if hits else None}; {answered} lines answered as expected", ok))  # fmt: skip
    proc.stdin.close()
    proc.wait(60)
    err = proc.stderr.read() if proc.stderr else b""
    rows.append(row("stdio MCP", "stderr after the session", "no traceback",
                    f"{err.count(b'Traceback')} tracebacks", b"Traceback" not in err))  # fmt: skip
    return rows


# --- 3. HTTP ------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def exchange(
    port: int, head: bytes, body: bytes | Callable[[socket.socket], None]
) -> tuple[int, bytes]:
    """Send a request on a bare socket; the answer's status and body."""
    with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
        s.sendall(head + b"\r\n\r\n")
        with contextlib.suppress(OSError):  # the server answered and closed mid-body
            if callable(body):
                body(s)
            else:
                s.sendall(body)
        answer = b""
        while True:
            try:
                chunk = s.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            answer += chunk
            head_end = answer.find(b"\r\n\r\n")
            if head_end >= 0:
                length = [
                    ln
                    for ln in answer[:head_end].split(b"\r\n")
                    if ln.lower().startswith(b"content-length:")
                ]
                if length and len(answer) - head_end - 4 >= int(length[0].split(b":")[1]):
                    break
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else 0
    return status, answer.partition(b"\r\n\r\n")[2]


def peak_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def http_cases(vault: Path, index_dir: Path) -> list[Row]:
    rows: list[Row] = []
    port, other = free_port(), free_port()
    argv = [PY, "-m", "vaultsearch.cli", "mcp", str(vault), "--index-dir", str(index_dir),
            "--no-watch", "--http", "--port", str(port)]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    try:
        for _ in range(600):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}}).encode()  # fmt: skip

        def request(path: str, body: bytes, host: str | None = None, origin: str | None = None,
                    extra: bytes = b"") -> tuple[int, bytes]:  # fmt: skip
            head = b"POST %s HTTP/1.1\r\nHost: %s\r\n" % (
                path.encode(),
                (host or f"127.0.0.1:{port}").encode(),
            )
            head += (
                b"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            )
            if origin:
                head += b"Origin: " + origin.encode() + b"\r\n"
            head += b"Connection: close\r\n" + (extra or b"Content-Length: %d" % len(body))
            return exchange(port, head, body)

        for surface, path, body in (
            ("HTTP /mcp", "/mcp", init),
            ("REST", "/cancel-indexing", b"{}"),
        ):
            for case, host, origin, want in (
                ("Host 127.0.0.1:PORT.evil.com", f"127.0.0.1:{port}.evil.com", None, 421),
                ("Host of another local port", f"127.0.0.1:{other}", None, 421),
                ("Origin of another local port", None, f"http://127.0.0.1:{other}", 403),
                ("Origin localhost, another port", None, f"http://localhost:{other}", 403),
                ("Origin https:// on this port", None, f"https://127.0.0.1:{port}", 403),
                ("Origin of this server", None, f"http://127.0.0.1:{port}", 200),
            ):
                status, _ = request(path, body, host, origin)
                rows.append(row(surface, case, str(want), str(status), status == want))

        deep = b'{"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {"name": "search", '
        deep += b'"arguments": {"query": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}}"
        huge_head = b'{"jsonrpc": "2.0", "id": 42, "x": "'
        for surface, path in (("HTTP /mcp", "/mcp"), ("REST", "/query_documents")):
            status, answer = request(path, deep)
            rows.append(row(surface, "body nested 100,000 deep", "400 and a JSON error",
                            f"{status}: {answer[:90].decode(errors='replace')}",
                            status == 400 and b"deeper than 64" in answer))  # fmt: skip
            status, answer = request(path, huge_head, extra=b"Content-Length: 104857600")
            rows.append(row(surface, "Content-Length 100 MB, 36 bytes sent", "413 at once",
                            f"{status}: {answer[:90].decode(errors='replace')}",
                            status == 413 and b"over the limit" in answer))  # fmt: skip
        before = peak_kb(proc.pid)
        mb = b" " * (1 << 20)

        def stream(s: socket.socket) -> None:
            s.sendall(b"%x\r\n%s\r\n" % (len(huge_head), huge_head))
            for _ in range(100):
                s.sendall(b"%x\r\n%s\r\n" % (len(mb), mb))
            s.sendall(b"0\r\n\r\n")

        for surface, path in (("REST", "/query_documents"), ("HTTP /mcp", "/mcp")):
            status, answer = exchange(
                port,
                b"POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                b"Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked"
                % (path.encode(), port),
                stream,
            )
            grew = (peak_kb(proc.pid) - before) / 1024
            rows.append(row(surface, "100 MB body sent chunked", "413, server peak memory +<50 MB",
                            f"{status}; peak memory +{grew:.0f} MB", status == 413 and grew < 50))  # fmt: skip

        import anyio
        from mcp import Client

        async def session() -> list[str]:
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=120) as c:
                result = await c.call_tool("search", {"query": "plums", "mode": "keyword"})
                return [h["path"] for h in (result.structured_content or {}).get("hits", [])]

        paths = anyio.run(session)
        rows.append(row("HTTP /mcp", "a session after all of the above", "search answers",
                        f"top hit {paths[:1]}", paths[:1] == ["alpha.md"]))  # fmt: skip
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    err = proc.stderr.read() if proc.stderr else b""
    rows.append(row("HTTP /mcp", "server stderr and exit", "exit 0, no traceback",
                    f"exit {proc.returncode}, {err.count(b'Traceback')} tracebacks",
                    proc.returncode == 0 and b"Traceback" not in err))  # fmt: skip
    return rows


def run(tmp: Path) -> list[Row]:
    rows = git_cases(tmp)
    vault, index_dir = indexed_vault(tmp)
    rows += stdio_cases(vault, index_dir)
    rows += http_cases(vault, index_dir)
    return rows


def table(rows: list[Row]) -> str:
    out = ["| surface | case | expected | observed | ok |", "|---|---|---|---|---|"]
    for r in rows:
        cells = [str(r[k]).replace("|", "\\|").replace("\n", " ") for k in
                 ("surface", "case", "expected", "observed")]  # fmt: skip
        out.append("| " + " | ".join(cells) + f" | {'yes' if r['ok'] else '**no**'} |")
    return "\n".join(out)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="attack-git-wire-") as folder:
        found = run(Path(folder))
    print(table(found))
    print(f"\n{sum(r['ok'] for r in found)} of {len(found)} ok")
