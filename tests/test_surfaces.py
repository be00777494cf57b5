"""One search, four doors: Python, the CLI, MCP and REST give the same hits for the same
request, and every search parameter is taken by every surface.

The CLI runs as a subprocess, MCP as a server subprocess driven by the SDK's client over
stdio, REST under uvicorn on a free port, all on one index built here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import write_files
from tests.test_rest import serve
from vaultsearch.app.searchanswer import lines_reader
from vaultsearch.app.vault import Vault
from vaultsearch.errors import QueryError
from vaultsearch.search.request import SearchRequest, parameters
from vaultsearch.server.http.rest import ControlContext, rest_app

ROOT = Path(__file__).resolve().parents[1]
NOTES = {
    "garden/Tomatoes.md": """
        ---
        tags: [garden, garden/vegetables]
        status: done
        updated: 2026-03-10
        ---
        # Tomatoes

        Tomatoes need full sun and deep watering twice a week.

        ## Feeding

        Feed tomatoes with compost before planting; water the roots, not the leaves.
        """,
    "garden/Composting.md": """
        ---
        tags: [garden]
        status: draft
        updated: 2026-01-05
        ---
        # Composting

        A compost heap turns kitchen scraps and leaves into soil for the garden beds.
        """,
    "Team Notes/Planning.md": """
        ---
        tags: [work]
        status: draft
        updated: 2026-02-01
        ---
        # Planning

        The team plans the garden budget and the watering schedule every Monday.
        """,
    "dev/hooks/pre-commit.md": "# Pre-commit hook\n\nThe hook waters nothing; it runs the linters.\n",
    "dev/hooks/deploy/post.md": "# Post-deploy hook\n\nAfter a deploy the hook warms caches.\n",
}
CODE = {
    "water.py": '''
        def water_plants(litres: int) -> str:
            """Water the garden beds with the given litres, tomatoes first."""
            return f"watered {litres} litres"
        ''',
}
CASES: list[dict[str, Any]] = [
    {"query": "watering tomatoes"},
    {"query": "watering the garden", "mode": "keyword", "top_k": 3, "tags": ["garden"]},
    {"query": "garden budget", "mode": "semantic", "folders": ["Team Notes"], "explain": True},
    {"query": "hook", "mode": "keyword", "folders": ["**/hooks/**"], "snippet_chars": 40},
    {"query": "compost", "after": "2026-01-01", "before": "2026-03-01", "chunks": 2},
    {"query": "garden", "where": {"status": ["draft", "done"]}, "min_score": 0.01},
    {"query": "tomatoes watering", "min_similarity": 0.05, "full_text": True},
    {"query": "water", "sources": ["code"], "kinds": ["code"], "path_prefix": ["water"]},
    {"query": "water plants", "mode": "keyword", "files": ["code:water.py", "garden/Tomatoes.md"]},
    {"query": 'budget path:"Team Notes"', "mode": "keyword"},
]


def test_cases_cover_every_parameter() -> None:
    used = {key for case in CASES for key in case}
    assert used == {name for name, _, _ in parameters()}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("surfaces")
    root = write_files(base / "vault", NOTES)
    write_files(base / "code", CODE)
    (root / ".vaultsearch").mkdir()
    (root / ".vaultsearch" / "config.toml").write_text(
        '[[sources]]\nname = "code"\npath = "../code"\n', encoding="utf-8"
    )
    Vault.open(root, index_dir=base / "index").index()
    return root, base / "index"


def python_hits(vault: Vault, case: dict[str, Any]) -> list[dict[str, Any]]:
    answer = vault.search_answer(SearchRequest(**case))
    plain = vault.search(**{k: v for k, v in case.items() if k in _SEARCH_ARGS})
    assert [(h.path, h.chunk_id, h.score) for h in plain] == [
        (h.path, h.chunk_id, h.score) for h in answer.hits
    ]  # the keyword form and the request form are one search
    return list(json.loads(json.dumps(answer.to_dict(lines_reader(vault))))["hits"])


_SEARCH_ARGS = {"query", "top_k", "mode", "tags", "folders", "after", "before", "where",
                "explain", "min_score", "sources", "kinds", "path_prefix", "files",
                "min_similarity"}  # fmt: skip


def cli_argv(case: dict[str, Any]) -> list[str]:
    """The case as a user types it, flags named as ``SearchRequest`` publishes them."""
    flags = {name: meta["cli"] for name, _, meta in parameters()}
    argv = [case["query"]]
    for name, value in case.items():
        if name == "query":
            continue
        if name == "where":
            for key, v in value.items():
                argv += [flags[name], f"{key}={','.join(v) if isinstance(v, list) else v}"]
        elif isinstance(value, bool):
            argv += [flags[name]] if value else []
        elif isinstance(value, list):
            for v in value:
                argv += [flags[name], v]
        else:
            argv += [flags[name], str(value)]
    return argv


def cli_hits(root: Path, index_dir: Path, case: dict[str, Any]) -> list[dict[str, Any]]:
    argv = ["--vault", str(root), "--index-dir", str(index_dir), "--json", *cli_argv(case)]
    done = subprocess.run(
        [sys.executable, "-m", "vaultsearch.cli", "search", *argv],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ),
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout))


def mcp_hits(root: Path, index_dir: Path) -> list[list[dict[str, Any]]]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vaultsearch.cli", "mcp", str(root), "--index-dir", str(index_dir)],
        env=dict(os.environ),
    )
    out: list[list[dict[str, Any]]] = []

    async def session() -> None:
        async with Client(stdio_client(params), read_timeout_seconds=600) as c:
            for case in CASES:
                result = await c.call_tool("search", case)
                assert not result.is_error, result.content[0].text
                assert isinstance(result.structured_content, dict)
                out.append(result.structured_content["hits"])

    anyio.run(session)
    return out


def rest_hits(vault: Vault) -> list[list[dict[str, Any]]]:
    out = []
    with (
        serve(rest_app(ControlContext.for_vault(vault))) as url,
        httpx.Client(base_url=url, timeout=600) as c,
    ):
        for case in CASES:
            r = c.post("/query_documents", json={"explain": False, **case})
            assert r.status_code == 200, r.text
            out.append(r.json()["hits"])
    return out


def same(a: Any, b: Any, where: str = "") -> list[str]:
    """Where two answers differ: floats may differ by 1e-6 (a score computed in another
    process), everything else must be equal."""
    if isinstance(a, float) or isinstance(b, float):
        ok = isinstance(a, int | float) and isinstance(b, int | float) and abs(a - b) <= 1e-6
        return [] if ok else [f"{where}: {a!r} != {b!r}"]
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{where}: keys {sorted(set(a) ^ set(b))}"]
        return [d for k in a for d in same(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} != {len(b)} items"]
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in same(x, y, f"{where}[{i}]")
        ]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def test_four_surfaces_give_the_same_hits(indexed: tuple[Path, Path]) -> None:
    root, index_dir = indexed
    with Vault.open(root, index_dir=index_dir) as vault:
        python = [python_hits(vault, case) for case in CASES]
        rest = rest_hits(vault)
    mcp = mcp_hits(root, index_dir)
    cli = [cli_hits(root, index_dir, case) for case in CASES]
    for i, case in enumerate(CASES):
        assert python[i], f"case {case} finds nothing: it would compare nothing"
        for name, other in (("cli", cli[i]), ("mcp", mcp[i]), ("rest", rest[i])):
            assert not same(python[i], other), (case, name, same(python[i], other)[:5])
    # what the cases were written to exercise really happened
    assert {h["path"] for h in python[3]} == {"dev/hooks/pre-commit.md", "dev/hooks/deploy/post.md"}
    assert [h["path"] for h in python[9]] == ["Team Notes/Planning.md"]
    assert {h["path"] for h in python[7]} == {"code:water.py"}
    assert python[7][0]["uri"] == "code://code/water.py"
    assert all("explain" in h for h in python[2]) and "explain" not in python[0][0]
    assert all(len(h.get("snippet", "")) <= 41 for h in python[3])
    assert all("text" in h for h in python[6])


def test_min_similarity_is_the_confidence_in_every_mode(indexed: tuple[Path, Path]) -> None:
    root, index_dir = indexed
    with Vault.open(root, index_dir=index_dir) as vault:
        for mode in ("hybrid", "keyword", "semantic"):
            everything = vault.search("watering tomatoes", mode=mode)
            assert everything, mode
            line = sorted(h.confidence for h in everything)[len(everything) // 2]
            kept = vault.search("watering tomatoes", mode=mode, min_similarity=line)
            assert [h.path for h in kept] == [h.path for h in everything if h.confidence >= line]
            assert 0 < len(kept) <= len(everything)
        with pytest.raises(QueryError, match="'min_similarity' must be a number from 0 to 1"):
            vault.search("x", min_similarity=1.5)


def test_a_hit_passage_is_readable_by_its_chunk_uri(indexed: tuple[Path, Path]) -> None:
    root, index_dir = indexed
    with Vault.open(root, index_dir=index_dir) as vault:
        hit = vault.search_answer(SearchRequest("feed tomatoes compost")).to_dict()["hits"][0]
        lines = (root / hit["path"]).read_text(encoding="utf-8").split("\n")
        expected = "\n".join(lines[hit["start_line"] - 1 : hit["end_line"]])
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vaultsearch.cli", "mcp", str(root), "--index-dir", str(index_dir)],
        env=dict(os.environ),
    )

    async def session() -> None:
        async with Client(stdio_client(params), read_timeout_seconds=600) as c:
            body = (await c.read_resource(hit["chunk_uri"])).contents[0]
            assert getattr(body, "text", None) == expected
            code = (await c.read_resource("chunk://1-2/code:water.py")).contents[0]
            assert getattr(code, "text", "").startswith("def water_plants")

    anyio.run(session)


def test_the_docs_table_is_what_the_surfaces_take() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from search_params import surfaces, table
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    names = {name for name, _, _ in parameters()}
    for surface, got in surfaces().items():
        assert names <= got, f"{surface} lacks {sorted(names - got)}"
    assert table() in (ROOT / "docs" / "Search.md").read_text(encoding="utf-8")


def test_terminal_output_shows_what_the_shaping_flags_ask(
    indexed: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from vaultsearch.cli.main import main

    root, index_dir = indexed
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    base = ["search", "feed tomatoes", "--vault", str(root), "--index-dir", str(index_dir)]
    assert main([*base, "--mode", "keyword", "--full-text", "--top-k", "1"]) == 0
    whole = capsys.readouterr().out
    assert "Feed tomatoes with compost before planting; water the roots, not the leaves." in whole
    assert main([*base, "--mode", "keyword", "--snippet-chars", "20", "--top-k", "1"]) == 0
    short = capsys.readouterr().out
    assert "…" in short and "not the leaves" not in short
