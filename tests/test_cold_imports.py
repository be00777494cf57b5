"""Commands that never embed must not import a model runtime (seconds and hundreds of
MB): each runs in a fresh process, as a user runs it, and reports what it imported."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import HANG_GUARD, write_files
from vaultsearch import Vault

RUNTIMES = {
    "openvino",
    "tokenizers",
    "torch",
    "transformers",
    "sentence_transformers",
    "llama_index",
    "onnxruntime",
}
INDEX_STACK = {"numpy", "faiss", "tantivy", "networkx"}
NEVER_IN_THE_SERVER = {
    "torch",
    "transformers",
    "sentence_transformers",
    "llama_index",
    "jinja2",
    "pypdf",
    "tree_sitter_python",
    "tree_sitter_javascript",
    "tree_sitter_typescript",
    "tree_sitter_go",
    "tree_sitter_rust",
    "tree_sitter_java",
}
"""Not in an idle ``vaultsearch mcp`` over stdio on a Markdown vault, even after
searches and link questions: the torch stack and what only reports, PDFs and code
files need. (uvicorn and starlette are not
listed: the MCP SDK imports them itself, for stdio too.)"""

PROBE = """
import json, sys
from vaultsearch.cli.main import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
sys.stdout.flush()
print(json.dumps({"code": code, "modules": sorted({m.split('.')[0] for m in sys.modules})}),
      file=sys.stderr)
"""


def imported(*argv: str) -> tuple[int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=HANG_GUARD
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report["code"], set(report["modules"])


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = write_files(
        tmp_path_factory.mktemp("cold") / "vault",
        {"a.md": "# Alpha\n\nRivers and owls. [[b]]\n", "b.md": "# Beta\n\nOwls at night.\n"},
    )
    with Vault.open(root) as vault:
        vault.index()
    return root


def test_version_imports_no_index_stack() -> None:
    code, modules = imported("--version")
    assert code == 0
    assert not modules & (RUNTIMES | INDEX_STACK), modules & (RUNTIMES | INDEX_STACK)


@pytest.mark.parametrize(
    "argv",
    [
        ("status", "{v}"),
        ("check", "{v}"),
        ("index", "{v}", "--check"),
        ("search", "owls", "--vault", "{v}", "--mode", "keyword"),
    ],
    ids=["status", "check", "index --check", "keyword search"],
)
def test_cold_commands_import_no_model_runtime(indexed: Path, argv: tuple[str, ...]) -> None:
    code, modules = imported(*(a.format(v=indexed) for a in argv))
    assert code == 0
    assert not modules & RUNTIMES, modules & RUNTIMES


def test_hybrid_search_imports_the_runtime_but_not_torch(indexed: Path) -> None:
    """The query path of the default backend: ONNX Runtime, never torch or llama-index."""
    code, modules = imported("search", "owls", "--vault", str(indexed))
    assert code == 0 and "onnxruntime" in modules
    assert not modules & {"torch", "llama_index", "transformers", "sentence_transformers"}


def test_the_stdio_pipe_answers_initialize_without_the_sdk() -> None:
    """``vaultsearch mcp`` claims stdio and answers ``initialize`` with only these loaded:
    the SDK (pydantic models), the index stack and the runtime come after."""
    probe = "import json, sys, vaultsearch.cli, vaultsearch.server.mcp.pipe; print(json.dumps(list(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=HANG_GUARD
    )
    modules = {m.split(".")[0] for m in json.loads(done.stdout)}
    heavy = (
        {"mcp", "mcp_types", "pydantic", "anyio", "tree_sitter", "yaml"} | RUNTIMES | INDEX_STACK
    )
    assert not modules & heavy, modules & heavy


SERVER_PROBE = """
import json, os, signal, sys
out = sys.argv.pop(1)


def report(*_):
    with open(out + ".tmp", "w") as f:
        json.dump(sorted({m.split(".")[0] for m in list(sys.modules)}), f)
    os.replace(out + ".tmp", out)


signal.signal(signal.SIGUSR1, report)
with open(out + ".pid", "w") as f:
    f.write(str(os.getpid()))
from vaultsearch.cli.main import main
sys.exit(main(sys.argv[1:]))
"""
"""``vaultsearch mcp`` that writes what it has imported when sent SIGUSR1, so a test
reads it while the session is open (not at an exit the client may cut short)."""


def test_idle_stdio_server_after_a_session_loads_only_what_it_used(indexed: Path) -> None:
    """A real ``vaultsearch mcp`` driven by the SDK's client: a hybrid search (the model
    loads), a keyword search, backlinks and related notes; then, still connected, the
    server reports everything it has imported."""
    out = indexed.parent / "mcp-modules.json"
    out.unlink(missing_ok=True)

    async def session() -> list[str]:
        argv = ["-c", SERVER_PROBE, str(out), "mcp", str(indexed), "--no-watch"]
        params = StdioServerParameters(command=sys.executable, args=argv, env=dict(os.environ))
        with open(os.devnull, "w") as quiet:
            async with Client(
                stdio_client(params, errlog=quiet), read_timeout_seconds=HANG_GUARD
            ) as c:
                for args in ({"query": "owls at night"}, {"query": "owls", "mode": "keyword"}):
                    found = await c.call_tool("search", args)
                    assert not found.is_error and (found.structured_content or {})["hits"]
                for tool, args in (
                    ("links", {"kind": "backlinks", "path": "b.md"}),
                    ("related", {"path": "a.md"}),
                ):
                    answer = await c.call_tool(tool, args)
                    assert not answer.is_error, answer.content
                    assert "a.md" in json.dumps(answer.structured_content)
                os.kill(int(Path(f"{out}.pid").read_text()), signal.SIGUSR1)
                with anyio.fail_after(HANG_GUARD):
                    while not out.is_file():
                        await anyio.sleep(0.05)
                    await c.call_tool("index_status", {})  # still serving after the report
        listed: list[str] = json.loads(out.read_text())
        return listed

    modules = set(anyio.run(session))
    assert modules & RUNTIMES, "the hybrid search must have loaded a model runtime"
    assert not modules & NEVER_IN_THE_SERVER, modules & NEVER_IN_THE_SERVER
