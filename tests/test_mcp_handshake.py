"""The ``initialize`` answer sent before the SDK loads must be the SDK's own answer.

Each case runs a real server process on plain pipes; the server hands the same request
to the SDK once it has loaded, drops the SDK's answer and logs whether the two agreed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from tests.conftest import write_files
from vaultsearch.server.handshake import HANDSHAKE_VERSIONS, early_answer


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_files(tmp_path_factory.mktemp("hs") / "vault", {"a.md": "# Alpha\n\nOwls.\n"})


def converse(vault: Path, messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """Send the messages, read one answer per request, close stdin; the answers and the
    server's log (stdin is kept open until then: the SDK drops requests pending at EOF)."""
    argv = ["-m", "vaultsearch.cli", "mcp", str(vault), "--index-dir", str(vault.parent / "idx")]
    proc = subprocess.Popen(
        [sys.executable, *argv, "--no-watch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    for message in messages:
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    proc.stdin.flush()
    answers = [json.loads(proc.stdout.readline()) for m in messages if "id" in m]
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    assert not out.strip(), out
    return answers, err.decode()


def initialize(version: str, request_id: int | str = 1) -> dict[str, Any]:
    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    }
    return {"id": request_id, "method": "initialize", "params": params}


def handshake_events(log: str) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    return [e for e in events if e.get("event") == "handshake"]


def test_the_versions_are_the_sdks() -> None:
    assert tuple(HANDSHAKE_PROTOCOL_VERSIONS) == HANDSHAKE_VERSIONS
    assert HANDSHAKE_VERSIONS[-1] == LATEST_HANDSHAKE_VERSION


@pytest.mark.parametrize("version", [*HANDSHAKE_VERSIONS, "1999-01-01"])
def test_the_early_answer_is_the_sdks_answer(vault: Path, version: str) -> None:
    answers, log = converse(
        vault,
        [
            initialize(version, request_id="init-1"),
            {"method": "notifications/initialized"},
            {"id": 2, "method": "tools/list"},
        ],
    )
    assert [a["id"] for a in answers] == ["init-1", 2]  # one answer each, none twice
    result = answers[0]["result"]
    expected = version if version in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE_VERSION
    assert result["protocolVersion"] == expected
    assert result["serverInfo"]["name"] == "vaultsearch"
    assert "search" in {t["name"] for t in answers[1]["result"]["tools"]}
    assert [e["sdk_agrees"] for e in handshake_events(log)] == [True]


def test_a_malformed_initialize_gets_the_sdks_error(vault: Path) -> None:
    bad = {"id": 7, "method": "initialize", "params": {"protocolVersion": 2025}}
    answers, log = converse(vault, [bad])
    assert [a["id"] for a in answers] == [7]
    assert "error" in answers[0] and "result" not in answers[0]
    assert handshake_events(log) == []


@pytest.mark.parametrize(
    "line",
    [
        b"not json",
        b'{"jsonrpc": "2.0", "id": true, "method": "initialize", "params": {}}',
        b'{"jsonrpc": "1.0", "id": 1, "method": "initialize", "params": {}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", '
        b'"capabilities": {}, "clientInfo": {"name": "t", "version": "0"}, "_meta": {}}}',
    ],
    ids=["not json", "bool id", "jsonrpc 1.0", "not initialize", "extra field"],
)
def test_only_plain_initialize_requests_are_answered_early(line: bytes) -> None:
    assert early_answer(line) is None


def test_a_plain_request_is_answered_with_its_id() -> None:
    found = early_answer(json.dumps({"jsonrpc": "2.0", **initialize("2025-03-26", 42)}).encode())
    assert found is not None
    request_id, text = found
    answer = json.loads(text)
    assert request_id == 42 and answer["id"] == 42
    assert answer["result"]["protocolVersion"] == "2025-03-26"


def test_a_missing_vault_gets_its_error_and_no_handshake(tmp_path: Path) -> None:
    argv = ["-m", "vaultsearch.cli", "mcp", str(tmp_path / "nowhere")]
    line = json.dumps({"jsonrpc": "2.0", **initialize("2025-06-18")}).encode() + b"\n"
    done = subprocess.run([sys.executable, *argv], input=line, capture_output=True, timeout=60)
    assert done.returncode == 2 and done.stdout == b""
    assert b"does not exist" in done.stderr
