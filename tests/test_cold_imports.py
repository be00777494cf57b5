"""Commands that never embed must not import a model runtime (seconds and hundreds of
MB): each runs in a fresh process, as a user runs it, and reports what it imported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_files
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

PROBE = """
import json, sys
from vaultsearch.cli import main
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
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120
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
    probe = "import json, sys, vaultsearch.cli, vaultsearch.server.pipe; print(json.dumps(list(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    modules = {m.split(".")[0] for m in json.loads(done.stdout)}
    heavy = (
        {"mcp", "mcp_types", "pydantic", "anyio", "tree_sitter", "yaml"} | RUNTIMES | INDEX_STACK
    )
    assert not modules & heavy, modules & heavy
