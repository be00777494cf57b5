"""The surfaces over a Milvus store (Milvus Lite, in-process on a .db file, in its own
subprocess): ``vaultsearch mcp --store-uri`` driven by the SDK's own client, ``serve``'s
status naming the store, and the engine's errors (unreachable, refused credentials,
missing collection, another schema version) as one sentence on the CLI and over MCP.

Milvus Lite serves one process per file and keeps serving the process that opened it,
so this process never opens a store: pushes, edits of the store and servers are
subprocesses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("pymilvus", reason="pip install 'vaultsearch[milvus]'")
pytest.importorskip("milvus_lite", reason="pip install 'vaultsearch[milvus]'")

import grpc
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import HANG_GUARD
from tests.test_mcp_http import free_port, http_server
from tests.test_milvus import NOTES, PREFIX, SRC, _cli, _write
from vaultsearch import Vault
from vaultsearch.config import load_config
from vaultsearch.embedding import Embedder
from vaultsearch.store.milvus.schema import SCHEMA_VERSION
from vaultsearch.store.milvus.target import MilvusTarget, store_status

ENV = {**os.environ, "PYTHONPATH": SRC, "HF_HUB_OFFLINE": "1"}
STORE_TOOLS = {"search", "read_note", "index_status"}


@pytest.fixture(scope="module")
def pushed(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> tuple[Path, int]:
    """A store pushed from a vault that is then deleted: (store, chunks)."""
    base = tmp_path_factory.mktemp("surfaces")
    root = base / "vault"
    for rel, text in NOTES.items():
        _write(root, rel, text)
    with Vault.open(root) as vault:
        vault.index()
        chunks = vault.status()["chunks"]
    store = base / "team.db"
    done = _cli("push", str(root), "--to", str(store), "--collection", PREFIX, cwd=base)
    assert done.returncode == 0, done.stderr
    shutil.rmtree(root)
    return store, chunks


def _python(code: str, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=ENV, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr


def _copy(store: Path, to: Path) -> Path:
    shutil.copytree(store, to) if store.is_dir() else shutil.copy(store, to)
    return to


def _session(args: list[str], cwd: Path, calls: list[tuple[str, dict[str, Any]]]) -> Any:
    """Open an MCP session with ``vaultsearch mcp ARGS`` and make ``calls``: the tool
    names listed, the instructions and each call's result, plus the server's log."""
    log = cwd / "mcp.log"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vaultsearch.cli", "mcp", *args],
        env={**ENV, "VAULTSEARCH_MCP_LOG": str(log)},
        cwd=str(cwd),
    )
    out: dict[str, Any] = {}

    async def run() -> None:
        with (cwd / "stderr.log").open("w") as err:
            async with Client(
                stdio_client(params, errlog=err), mode="legacy", read_timeout_seconds=300
            ) as c:
                out["instructions"] = c.instructions
                out["tools"] = {t.name for t in (await c.list_tools()).tools}
                out["results"] = [await c.call_tool(name, a) for name, a in calls]

    anyio.run(run)
    out["log"] = [json.loads(line) for line in log.read_text().splitlines()]
    out["stderr"] = (cwd / "stderr.log").read_text()
    return out


def _text(result: Any) -> str:
    return str(result.content[0].text)


def test_an_mcp_session_over_the_store_reads_and_refuses_writes(
    pushed: tuple[Path, int], tmp_path: Path
) -> None:
    store, chunks = pushed
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"query": "aphids on tomatoes"}),
        ("search", {"query": "planning", "mode": "keyword", "where": {"status": "draft"}}),
        ("search", {"query": "planning", "mode": "keyword", "tags": ["garden"]}),
        ("read_note", {"path": "Inbox.md"}),
        ("read_note", {"path": "Nowhere.md"}),
        ("index_status", {}),
        ("reindex", {}),
        ("write_note", {"path": "New.md", "content": "# New\n"}),
        ("search", {"query": "x", "top_k": 0}),
    ]
    args = ["--store-uri", str(store), "--collection", PREFIX]
    s = _session(args, tmp_path, calls)
    assert s["tools"] == STORE_TOOLS
    assert "Milvus store" in s["instructions"]
    hybrid, draft, none, note, missing, status, reindex, write, bad = s["results"]

    assert not hybrid.is_error, _text(hybrid)
    top = hybrid.structured_content["hits"][0]
    assert top["path"] == "Garden/Tomatoes.md" and top["start_line"] >= 1
    assert "uri" not in top  # no note:// resources without the files
    assert [h["path"] for h in draft.structured_content["hits"]] == ["Work/Quarterly planning.md"]
    assert none.structured_content["hits"] == []

    assert not note.is_error and "Rotate the API keys" in _text(note)
    assert note.structured_content["chunks"][0]["start_line"] == 1
    assert missing.is_error and "has no note 'Nowhere.md'" in _text(missing)

    assert not status.is_error, _text(status)
    assert status.structured_content["chunks"] == chunks
    assert status.structured_content["store"] == "milvus"

    for refused in (reindex, write):
        assert refused.is_error and "only reads the Milvus store" in _text(refused)
        assert "vaultsearch push VAULT --to" in _text(refused)
    assert bad.is_error and _text(bad) == "top_k should be greater than or equal to 1 (got 0)."

    assert "Traceback" not in s["stderr"]
    shook = [r for r in s["log"] if r.get("event") == "handshake"]
    assert shook and all(r["sdk_agrees"] for r in shook)  # the early answer's instructions


class _Refuse(grpc.GenericRpcHandler):
    """Every call refused as a Milvus server with authentication on refuses a wrong
    token: gRPC status UNAUTHENTICATED with Milvus's own details."""

    def service(self, handler_call_details: Any) -> Any:
        def refuse(request: Any, context: Any) -> None:
            context.abort(
                grpc.StatusCode.UNAUTHENTICATED,
                "auth check failure, please check username and password are correct",
            )

        return grpc.unary_unary_rpc_method_handler(refuse)


@contextmanager
def _refusing_server() -> Iterator[str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((_Refuse(),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop(None)


DROP = """
import sys
from vaultsearch.store.milvus.client import connect
from vaultsearch.store.milvus.target import MilvusTarget
client = connect(MilvusTarget.build(sys.argv[1], prefix=sys.argv[2]))
client.drop_collection(sys.argv[2] + "_g000001_chunks")
"""
VERSION = """
import sys
from vaultsearch.store.milvus.client import connect
from vaultsearch.store.milvus.target import MilvusTarget
client = connect(MilvusTarget.build(sys.argv[1], prefix=sys.argv[2]))
client.load_collection(sys.argv[2] + "_g000001_manifest")
rows = client.query(sys.argv[2], filter="id == 1", output_fields=["manifest"])
manifest = {**rows[0]["manifest"], "schema_version": 99}
client.upsert(sys.argv[2], [{"id": 1, "manifest": manifest, "pad": [1.0, 0.0]}])
"""


def test_engine_errors_are_one_sentence_on_the_cli_and_over_mcp(
    pushed: tuple[Path, int], tmp_path: Path
) -> None:
    store, _ = pushed
    dropped = _copy(store, tmp_path / "dropped.db")
    _python(DROP, str(dropped), PREFIX)
    versioned = _copy(store, tmp_path / "versioned.db")
    _python(VERSION, str(versioned), PREFIX)
    with _refusing_server() as refusing:
        cases = {
            "unreachable": (
                ["--store-uri", "http://127.0.0.1:9"],
                "Milvus at http://127.0.0.1:9 cannot be reached",
            ),
            "credentials": (
                ["--store-uri", refusing],
                f"Milvus at {refusing} refused the credentials (auth check failure",
            ),
            "no index": (
                ["--store-uri", str(store), "--collection", "other"],
                "(collections other_*) holds no index yet",
            ),
            "missing collection": (
                ["--store-uri", str(dropped), "--collection", PREFIX],
                "is missing a collection of its index (collection 'team_g000001_chunks' "
                "does not exist)",
            ),
            "schema version": (
                ["--store-uri", str(versioned), "--collection", PREFIX],
                f"has schema version 99, and this vaultsearch reads version {SCHEMA_VERSION}",
            ),
        }
        env_token = {"VAULTSEARCH_MILVUS_TOKEN": "root:s3cret"}
        for name, (args, said) in cases.items():
            env = {**ENV, **env_token}
            done = subprocess.run(
                [sys.executable, "-m", "vaultsearch.cli", "search", "tomatoes", *args],
                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            assert done.returncode == 2, (name, done.stderr)
            lines = done.stderr.splitlines()
            assert lines[0].startswith("error: ") and said in lines[0], (name, done.stderr)
            assert len(lines) == 2 and lines[1].startswith("fix: "), (name, done.stderr)
            assert "s3cret" not in done.stderr

            work = tmp_path / name.replace(" ", "-")
            work.mkdir()
            s = _session(args, work, [("search", {"query": "tomatoes"}), ("index_status", {})])
            for result in s["results"]:
                assert result.is_error and said in _text(result), (name, _text(result))
                assert "Traceback" not in _text(result) and "s3cret" not in _text(result)
            assert "Traceback" not in s["stderr"], name


def test_mcp_over_a_store_refuses_writes_with_a_sentence(tmp_path: Path) -> None:
    done = _cli("mcp", "--store-uri", str(tmp_path / "x.db"), "--allow-writes", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: --allow-writes does not apply to a server over a Milvus")


def test_mcp_over_a_store_on_streamable_http_reads_and_refuses_writes(
    pushed: tuple[Path, int], tmp_path: Path
) -> None:
    store, chunks = pushed
    port = free_port()
    args = ["-m", "vaultsearch.cli", "mcp", "--store-uri", str(store), "--collection", PREFIX]
    args += ["--http", "--port", str(port)]
    with http_server(args, port, env=ENV) as served:

        async def session() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=300) as c:
                assert {t.name for t in (await c.list_tools()).tools} == STORE_TOOLS
                found = await c.call_tool("search", {"query": "aphids on tomatoes"})
                assert not found.is_error, _text(found)
                assert found.structured_content["hits"][0]["path"] == "Garden/Tomatoes.md"
                status = await c.call_tool("index_status", {})
                assert status.structured_content["chunks"] == chunks
                write = await c.call_tool("write_note", {"path": "New.md", "content": "# New\n"})
                assert write.is_error and "only reads the Milvus store" in _text(write)

        anyio.run(session)
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=HANG_GUARD)
        assert page.status_code == 404  # no vault behind it, so no Index Console page
    assert served.code == 0 and b"Traceback" not in served.err
    assert f'"url": "http://127.0.0.1:{port}/mcp"'.encode() in served.err


def test_serve_names_the_store_and_never_its_token(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "vault"
    for rel, text in NOTES.items():
        _write(root, rel, text)
    with Vault.open(root) as vault:
        vault.index()
    store = tmp_path / "team.db"
    flags = ["store.backend=milvus", f"store.uri={store}", "store.collection=team"]
    flags.append("store.token=s3cret-token")
    serve = subprocess.Popen(
        [sys.executable, "-m", "vaultsearch.cli", "serve", str(root), "--no-open",
         *(a for f in flags for a in ("--set", f))],
        env=ENV, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert serve.stdout is not None
        line = serve.stdout.readline()
        assert line.startswith("Index Console for"), line + serve.stderr.read()
        url = line.rsplit(": ", 1)[1].strip()
        with httpx.Client(base_url=url, timeout=300) as c:
            status = c.get("/status")
            page = c.get("/").text + c.get("/assets/app.js").text
    finally:
        serve.terminate()
        serve.wait(timeout=HANG_GUARD)
    assert status.status_code == 200, status.text
    assert status.json()["store"] == {
        "backend": "milvus", "uri": str(store), "collection": "team", "token": "(set)",
    }  # fmt: skip
    assert "s3cret-token" not in status.text
    assert 'id="store"' in page and "storeLine" in page


def test_a_store_uri_is_shown_without_credentials_written_into_it() -> None:
    written = "http://alice:pa55@milvus.example:19530"
    config = load_config(None, None, ("store.backend=milvus", f"store.uri={written}"))
    shown = store_status(config)
    assert shown["uri"] == "http://milvus.example:19530" and "pa55" not in json.dumps(shown)
    assert MilvusTarget.from_config(config).shown() == (
        "http://milvus.example:19530 (collections vaultsearch_*)"
    )
    assert store_status(load_config(None)) == {"backend": "local"}


KILLED_SYNC = """
import os, signal, sys
from vaultsearch import Vault
from vaultsearch.app.milvus_push import push
from vaultsearch.store.milvus.target import MilvusTarget

vault = Vault.open(sys.argv[1])
push(vault, MilvusTarget.build(sys.argv[2], prefix=sys.argv[3]),
     mid_sync=lambda: os.kill(os.getpid(), signal.SIGKILL))
"""


def test_a_writer_killed_mid_sync_is_told_to_readers_and_finished_by_the_next_push(
    tmp_path: Path, embedder: Embedder
) -> None:
    root = tmp_path / "vault"
    for rel, text in NOTES.items():
        _write(root, rel, text)
    with Vault.open(root) as vault:
        vault.index()
    store = str(tmp_path / "team.db")
    at = ("--store-uri", store, "--collection", PREFIX)
    first = _cli("push", str(root), "--to", store, "--collection", PREFIX, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    _write(root, "Inbox.md", "# Inbox\n\nRenew the parking permit in March.\n")
    (root / "Garden" / "Companion planting.md").unlink()
    with Vault.open(root) as vault:
        vault.index()
        chunks = vault.status()["chunks"]

    killed = subprocess.run(
        [sys.executable, "-c", KILLED_SYNC, str(root), store, PREFIX],
        env=ENV, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr  # after the first batch of upserts
    status = _cli("status", *at, cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["syncing_since"]
    half = _cli("search", "basil whiteflies", "--mode", "keyword", "--json", *at, cwd=tmp_path)
    assert half.returncode == 0, half.stderr
    hits = json.loads(half.stdout)
    assert hits[0]["path"] == "Garden/Companion planting.md"  # its delete never ran
    assert hits[0]["degraded"].startswith("A push into this Milvus store started at")
    assert "warning: A push into this Milvus store" in half.stderr

    repaired = _cli("push", str(root), "--to", store, "--collection", PREFIX, "--json",
                    cwd=tmp_path)  # fmt: skip
    assert repaired.returncode == 0, repaired.stderr
    done = json.loads(repaired.stdout)
    assert not done["rebuilt"] and done["upserted_chunks"] == 0  # upserted before the kill
    assert done["deleted_chunks"] == 2  # the old Inbox chunk and the deleted note's
    after = json.loads(_cli("status", *at, cwd=tmp_path).stdout)
    assert "syncing_since" not in after and after["chunks"] == chunks
    whole = _cli("search", "basil whiteflies", "--mode", "keyword", "--json", *at, cwd=tmp_path)
    assert json.loads(whole.stdout) == [] and "warning" not in whole.stderr
    permit = _cli("search", "parking permit", "--mode", "keyword", "--json", *at, cwd=tmp_path)
    assert [h["path"] for h in json.loads(permit.stdout)] == ["Inbox.md"]
