"""The answer to the opening request sent before the SDK loads must be the SDK's own.

Each case runs a real server process on plain pipes; the server hands the same request
to the SDK once it has loaded, drops the SDK's answer and logs whether the two agreed.
Both eras: ``initialize`` (legacy clients, the MCP Inspector, SDK clients in ``legacy``
mode) and ``server/discover`` (an SDK 2.3 client in its default ``auto`` mode).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from mcp_types.version import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    LATEST_MODERN_VERSION,
    MODERN_PROTOCOL_VERSIONS,
)

from tests.conftest import HANG_GUARD, write_files
from vaultsearch.server.mcp import handshake
from vaultsearch.server.mcp.handshake import HANDSHAKE_VERSIONS, MODERN_VERSIONS, early_answer


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
    answers.sort(key=lambda a: [str(m.get("id")) for m in messages].index(str(a["id"])))
    out, err = proc.communicate(timeout=HANG_GUARD)
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


def discover(version: str, request_id: int | str = 1, **extra: Any) -> dict[str, Any]:
    """The probe an SDK client in ``auto`` mode opens with."""
    meta = {
        mcp_types.PROTOCOL_VERSION_META_KEY: version,
        mcp_types.CLIENT_INFO_META_KEY: {"name": "t", "version": "0"},
        mcp_types.CLIENT_CAPABILITIES_META_KEY: {},
        **extra,
    }
    return {"id": request_id, "method": "server/discover", "params": {"_meta": meta}}


def enveloped(method: str, request_id: int) -> dict[str, Any]:
    """A modern request: it carries the same envelope as the probe."""
    return {**discover(LATEST_MODERN_VERSION, request_id), "method": method}


def handshake_events(log: str) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    return [e for e in events if e.get("event") == "handshake"]


def test_the_versions_and_envelope_keys_are_the_sdks() -> None:
    assert tuple(HANDSHAKE_PROTOCOL_VERSIONS) == HANDSHAKE_VERSIONS
    assert HANDSHAKE_VERSIONS[-1] == LATEST_HANDSHAKE_VERSION
    assert tuple(MODERN_PROTOCOL_VERSIONS) == MODERN_VERSIONS
    assert (
        handshake.VERSION_KEY,
        handshake.CLIENT_INFO_KEY,
        handshake.CLIENT_CAPABILITIES_KEY,
        handshake.SERVER_INFO_KEY,
    ) == (
        mcp_types.PROTOCOL_VERSION_META_KEY,
        mcp_types.CLIENT_INFO_META_KEY,
        mcp_types.CLIENT_CAPABILITIES_META_KEY,
        mcp_types.SERVER_INFO_META_KEY,
    )


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


@pytest.mark.parametrize("version", MODERN_VERSIONS)
def test_the_early_discover_answer_is_the_sdks_answer(vault: Path, version: str) -> None:
    """What a new SDK client sends first: answered at once, and the SDK, given the same
    probe, serves the modern era that answer promised."""
    answers, log = converse(vault, [discover(version, "probe"), enveloped("tools/list", 2)])
    assert [a["id"] for a in answers] == ["probe", 2]
    result = answers[0]["result"]
    assert result["supportedVersions"] == list(MODERN_VERSIONS)
    assert result["_meta"][mcp_types.SERVER_INFO_META_KEY]["name"] == "vaultsearch"
    assert "search" in {t["name"] for t in answers[1]["result"]["tools"]}
    events = handshake_events(log)
    assert [(e["method"], e["sdk_agrees"]) for e in events] == [("server/discover", True)]


def test_an_initialize_after_a_probe_gets_the_sdks_refusal(vault: Path) -> None:
    """A client whose probe timed out while the server started sends ``initialize``: only
    the SDK's refusal (-32022, naming the modern versions) sends it back to the probe,
    and an early success would leave it speaking the other era to a modern connection."""
    answers, log = converse(
        vault,
        [
            discover(LATEST_MODERN_VERSION),
            initialize(LATEST_HANDSHAKE_VERSION, request_id=2),
            {"method": "notifications/initialized"},
            enveloped("tools/list", 3),
        ],
    )
    assert [a["id"] for a in answers] == [1, 2, 3]
    assert answers[1]["error"]["code"] == mcp_types.UNSUPPORTED_PROTOCOL_VERSION
    assert answers[1]["error"]["data"]["supported"] == list(MODERN_VERSIONS)
    assert "search" in {t["name"] for t in answers[2]["result"]["tools"]}
    events = handshake_events(log)
    assert [(e["method"], e["sdk_agrees"]) for e in events] == [("server/discover", True)]


@pytest.mark.parametrize(
    ("opening", "era"),
    [
        (discover("2099-01-01"), "modern"),
        (discover(LATEST_MODERN_VERSION, progressToken=5), "modern"),
        ({"id": 1, "method": "tools/list"}, "legacy"),
    ],
    ids=["unknown version", "extra envelope key", "another request"],
)
def test_only_the_opening_request_is_answered_early(
    vault: Path, opening: dict[str, Any], era: str
) -> None:
    """Whatever the first request, the SDK picks the era on it: an ``initialize`` after
    it is the SDK's to answer (refused on a modern connection), never the early answer's."""
    answers, log = converse(vault, [opening, initialize(LATEST_HANDSHAKE_VERSION, 2)])
    assert [a["id"] for a in answers] == [1, 2]
    if era == "modern":
        assert answers[1]["error"]["code"] == mcp_types.UNSUPPORTED_PROTOCOL_VERSION
    else:
        assert answers[1]["result"]["protocolVersion"] == LATEST_HANDSHAKE_VERSION
    assert handshake_events(log) == []


def test_a_notification_before_the_opening_request_does_not_decide(vault: Path) -> None:
    answers, log = converse(
        vault,
        [
            {"method": "notifications/cancelled", "params": {"requestId": 0}},
            initialize(LATEST_HANDSHAKE_VERSION),
            {"method": "notifications/initialized"},
            {"id": 2, "method": "tools/list"},
        ],
    )
    assert "result" in answers[0] and "tools" in answers[1]["result"]
    assert [e["method"] for e in handshake_events(log)] == ["initialize"]


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
        json.dumps({"jsonrpc": "2.0", **discover("2025-11-25")}).encode(),
        json.dumps({"jsonrpc": "2.0", **discover(LATEST_MODERN_VERSION, progressToken=1)}).encode(),
        json.dumps(
            {"jsonrpc": "2.0", **discover(LATEST_MODERN_VERSION), "params": {"_meta": {}}}
        ).encode(),
        json.dumps({"jsonrpc": "2.0", **enveloped("tools/list", 1)}).encode(),
        json.dumps({"jsonrpc": "2.0", "method": "server/discover"}).encode(),
    ],
    ids=[
        "not json",
        "bool id",
        "jsonrpc 1.0",
        "not initialize",
        "extra field",
        "discover at a handshake version",
        "discover with an extra key",
        "discover without envelope",
        "another modern request",
        "discover as a notification",
    ],
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
    found = early_answer(
        json.dumps({"jsonrpc": "2.0", **discover(LATEST_MODERN_VERSION, "d")}).encode()
    )
    assert found is not None and found[0] == "d"
    assert json.loads(found[1])["result"]["supportedVersions"] == [LATEST_MODERN_VERSION]


def test_a_missing_vault_gets_its_error_and_no_handshake(tmp_path: Path) -> None:
    argv = ["-m", "vaultsearch.cli", "mcp", str(tmp_path / "nowhere")]
    line = json.dumps({"jsonrpc": "2.0", **initialize("2025-06-18")}).encode() + b"\n"
    done = subprocess.run(
        [sys.executable, *argv], input=line, capture_output=True, timeout=HANG_GUARD
    )
    assert done.returncode == 2 and done.stdout == b""
    assert b"does not exist" in done.stderr
