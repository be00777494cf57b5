"""Every query string and every line on the wire gets results or a clear error."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import HANG_GUARD
from tests.hostile_files import write_normal_notes
from vaultsearch import Vault
from vaultsearch.server.jsonlimits import MAX_DEPTH
from vaultsearch.server.mcp.jsonrpc import INVALID_REQUEST, PARSE_ERROR, screen_line
from vaultsearch.validtext import valid_strings, valid_text

HOSTILE = ["\ud800", "a\ud800b", "\udfff\ud800", "\udcff", "\x00", "plums\x00", "x" * 50_000]
HOSTILE += ["", "   ", '"unclosed', "(", "a AND", "-", "*", "title:", "\\", "\x1b[31m", "🍑"]


def test_valid_text_replaces_only_lone_surrogates() -> None:
    assert valid_text("a\ud800b") == "a\ufffdb"
    assert valid_text("\ud83c\udf51") == "🍑"  # a pair, as a JSON escape gives it
    assert valid_text("caf\udce9") == "caf\ufffd"  # argv byte that was not UTF-8
    assert valid_text("plain") == "plain"
    assert valid_strings({"k\ud800": ["\udfff", 1]}) == {"k\ufffd": ["\ufffd", 1]}


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"not json", PARSE_ERROR),
        (b"{", PARSE_ERROR),
        (b"[" * 50_000, PARSE_ERROR),
        (b"[1, 2]", INVALID_REQUEST),
        (b'"text"', INVALID_REQUEST),
        (b'{"jsonrpc": "1.0", "id": 3, "method": "ping"}', INVALID_REQUEST),
        (b'{"id": 4, "method": "ping"}', INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": 5}', INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": 6, "method": 7}', INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": {}, "method": "ping"}', INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', INVALID_REQUEST),
    ],
)
def test_malformed_lines_are_answered(line: bytes, code: int) -> None:
    passed, error = screen_line(line)
    assert passed is None and error is not None
    reply = json.loads(error)
    assert reply["error"]["code"] == code and reply["jsonrpc"] == "2.0"


def test_a_valid_line_passes_cleaned() -> None:
    line = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"q": "\\ud800"}}'
    passed, error = screen_line(line)
    assert error is None and passed is not None
    assert json.loads(passed)["params"]["q"] == "\ufffd"
    assert screen_line(b"  \n") == (None, None)


@pytest.fixture(scope="module")
def small_vault(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("wire") / "vault"
    root.mkdir()
    write_normal_notes(root)
    index_dir = root.parent / "index"
    Vault.open(root, index_dir=index_dir).index()
    return root, index_dir


def test_python_api_answers_every_string(small_vault: tuple[Path, Path]) -> None:
    from vaultsearch.errors import VaultsearchError

    root, index_dir = small_vault
    vault = Vault.open(root, index_dir=index_dir)
    for q in HOSTILE:
        for mode in ("hybrid", "keyword", "semantic"):
            try:
                hits = vault.search(q, mode=mode, tags=[q] if q else None)
            except VaultsearchError:
                continue
            assert isinstance(hits, list)
    assert [h.path for h in vault.search("plums\ud800", mode="keyword")] == ["alpha.md"]


def test_cli_takes_query_bytes_that_are_not_utf8(small_vault: tuple[Path, Path]) -> None:
    root, index_dir = small_vault
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    cmd: list[str | bytes] = [sys.executable, "-m", "vaultsearch.cli", "search"]
    cmd += ["--vault", str(root), "--index-dir", str(index_dir), "--mode", "hybrid", "--json"]
    done = subprocess.run(
        [*cmd, b"plums caf\xe9 \xff"], capture_output=True, env=env, timeout=HANG_GUARD
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["path"] == "alpha.md"


def stdio_server(
    root: Path, index_dir: Path
) -> tuple[subprocess.Popen[bytes], Callable[[bytes], dict[str, Any]]]:
    """A real ``vaultsearch mcp`` over stdio, and ``ask``: one raw line in, one answer out."""
    cmd = [sys.executable, "-m", "vaultsearch.cli", "mcp", str(root), "--index-dir"]
    proc = subprocess.Popen(
        [*cmd, str(index_dir), "--no-watch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin and proc.stdout

    def ask(line: bytes) -> dict[str, Any]:
        assert proc.stdin and proc.stdout
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 120)  # a hang guard
        assert ready, f"no reply to {line[:60]!r}"
        return dict(json.loads(proc.stdout.readline()))

    return proc, ask


def test_stdio_server_answers_malformed_lines_and_keeps_serving(
    small_vault: tuple[Path, Path],
) -> None:
    root, index_dir = small_vault
    proc, ask = stdio_server(root, index_dir)
    assert proc.stdin

    try:
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        first = ask(
            json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}).encode()
        )
        assert "result" in first
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        assert ask(b"garbage")["error"]["code"] == PARSE_ERROR
        assert ask(b"\xff\xfe\x00")["error"]["code"] == PARSE_ERROR
        assert ask(b"[]")["error"]["code"] == INVALID_REQUEST
        assert ask(b'{"jsonrpc": "2.0", "id": 2}') == {
            "jsonrpc": "2.0",
            "id": 2,
            "error": {"code": INVALID_REQUEST, "message": 'Invalid Request: no "method"'},
        }
        call = {"name": "search", "arguments": {"query": "plums \ud800", "mode": "semantic"}}
        line = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
        answer = ask(line.encode())
        assert answer["id"] == 3 and not answer["result"].get("isError"), answer
        assert answer["result"]["structuredContent"]["hits"][0]["path"] == "alpha.md"
        assert ask(b'{"jsonrpc": "2.0", "id": 4, "method": "ping"}') == {
            "jsonrpc": "2.0",
            "id": 4,
            "result": {},
        }
    finally:
        proc.stdin.close()
        proc.wait(HANG_GUARD)
    assert b"Traceback" not in (proc.stderr.read() if proc.stderr else b"")


def _call(request_id: int, arguments: bytes) -> bytes:
    head = b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", ' % request_id
    return head + b'"params": {"name": "search", "arguments": ' + arguments + b"}}"


def _nested(depth: int) -> bytes:
    return b'{"query": ' + b"[" * depth + b"]" * depth + b"}"


def hostile_lines() -> list[tuple[bytes, int | None, int | None]]:
    """50 lines, each with the id its answer must carry and the error code it must
    have (None: the SDK answers it, with a result or an error of its own)."""
    mb = 1024 * 1024
    lines: list[tuple[bytes, int | None, int | None]] = []
    for i, depth in enumerate((61, 62, 100, 500, 700, 980, 1000, 5000, 20_000, 100_000)):
        code = None if depth + 3 <= MAX_DEPTH else PARSE_ERROR  # the call has three levels
        lines.append((_call(100 + i, _nested(depth)), 100 + i, code))
    for opener, request_id in (
        (b"[", None),
        (b"{", None),
        (b'{"a": ', None),
        (b'{"id": 5, "x": [', 5),
    ):
        for n in (500, 100_000):
            lines.append((opener * n, request_id, PARSE_ERROR))
    big = b"a" * (5 * mb)
    lines.append(
        (b'{"jsonrpc": "2.0", "id": 200, "method": "ping", "x": "' + big + b'"}', 200, -32600)
    )
    lines.append((b"x" * (6 * mb), None, INVALID_REQUEST))
    lines.append((b"[" * (5 * mb), None, INVALID_REQUEST))
    query = b'{"query": "' + b"plums " * (400_000) + b'"}'
    lines.append((_call(201, query), 201, None))
    inside = b'"' + b"[" * 100_000 + b'"'
    lines.append(
        (
            b'{"jsonrpc": "2.0", "id": 202, "method": "ping", "params": {"x": ' + inside + b"}}",
            202,
            None,
        )
    )
    for raw in (b"\xff\xfe\x00", b"\xc3\x28", b"\x80abc", b'{"a": "\xed\xa0\x80"', b"\x00"):
        lines.append((raw, None, PARSE_ERROR))
    lines.append((b'{"jsonrpc": "2.0", "id": 203, "method": "\xff\xfe"}', 203, None))
    for raw in (b"1", b'"x"', b"null", b"true", b"[]", b"[1, 2]", b"-0", b"1e999"):
        lines.append((raw, None, INVALID_REQUEST))
    for raw in (b'{"jsonrpc":', b"}}}}", b"]]]]", b'{"a": 1}}', b"{'a': 1}", b"NaN x"):
        lines.append((raw, None, PARSE_ERROR))
    lines.append((b'{"jsonrpc": "2.0", "id": 204, "method": "tools/call", "params": 5}', 204, None))
    lines.append((b'{"jsonrpc": "2.0", "id": 205, "method": "nope"}', 205, None))
    lines.append((_call(207, b'{"query": "\\ud800 plums"}'), 207, None))
    lines.append((_call(208, b'{"query": [' + b"1, " * 100_000 + b"1]}"), 208, None))
    lines.append((b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', None, INVALID_REQUEST))
    lines.append((b"\x1b[31m", None, PARSE_ERROR))
    lines.append((b'{"jsonrpc": "2.0", "id": 206, "method": "ping"}' * 3, None, PARSE_ERROR))
    return lines


def test_fifty_hostile_lines_never_deafen_the_stdio_server(
    small_vault: tuple[Path, Path],
) -> None:
    """Issue 22: one deeply nested line used to kill the thread that reads lines, and
    the server never answered again. Each line gets its answer, and then ping and a
    search still work."""
    root, index_dir = small_vault
    proc, ask = stdio_server(root, index_dir)
    assert proc.stdin

    lines = hostile_lines()
    assert len(lines) == 50
    try:
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        first = ask(
            json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}).encode()
        )
        assert "result" in first
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        for line, request_id, code in lines:
            reply = ask(line)
            assert reply.get("id") == request_id, (line[:80], reply)
            if code is not None:
                assert reply["error"]["code"] == code, (line[:80], reply)
                assert len(reply["error"]["message"]) < 200
        assert ask(b'{"jsonrpc": "2.0", "id": 1000, "method": "ping"}')["result"] == {}
        call = {"name": "search", "arguments": {"query": "plums", "mode": "hybrid"}}
        line = json.dumps({"jsonrpc": "2.0", "id": 1001, "method": "tools/call", "params": call})
        answer = ask(line.encode())
        assert answer["result"]["structuredContent"]["hits"][0]["path"] == "alpha.md"
    finally:
        proc.stdin.close()
        proc.wait(HANG_GUARD)
    assert b"Traceback" not in (proc.stderr.read() if proc.stderr else b"")


@pytest.mark.parametrize(
    ("raw", "depth"),
    [
        (b"{}", 1),
        (b'{"a": [[1], {"b": []}]}', 4),
        (b'{"a": "[[[[{{{{"}', 1),
        (b'{"a": "\\"[[[", "b": [1]}', 2),
        (b'["\\\\", [2]]', 2),
        (b"[" * 100_000, 100_000),
        (b"plain", 0),
    ],
)
def test_nesting_is_counted_from_bytes_outside_strings(raw: bytes, depth: int) -> None:
    from vaultsearch.server.jsonlimits import nesting_depth

    assert nesting_depth(raw) == depth


def test_too_deep_and_too_long_lines_carry_their_id() -> None:
    from vaultsearch.server.mcp.pipe import TooLong

    deep = b'{"jsonrpc": "2.0", "params": {"id": 1, "q": ' + b"[" * 70 + b"]" * 70 + b'}, "id": 7}'
    _, error = screen_line(deep)
    reply = json.loads(error or "")
    assert (reply["id"], reply["error"]["code"]) == (7, PARSE_ERROR)
    assert "deeper than 64" in reply["error"]["message"]
    _, error = screen_line(TooLong(b'{"id": "r-1", "jsonrpc": "2.0", "x": "aaa', 9_000_000))
    reply = json.loads(error or "")
    assert (reply["id"], reply["error"]["code"]) == ("r-1", INVALID_REQUEST)
    assert "9,000,000 bytes" in reply["error"]["message"]
