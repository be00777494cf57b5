"""The browsing commands on one indexed vault, text and ``--json``, and the same answers
the MCP tools give (both print one ``Answer``). A few run as real processes; the rest
call the command's ``main`` in this process, which is the same code without the start-up
time of a new interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import HANG_GUARD, write_files
from tests.test_mcp_economy import FILES
from vaultsearch import Vault
from vaultsearch.app.browse import Browser
from vaultsearch.app.listing import related
from vaultsearch.app.navigate import links
from vaultsearch.cli.main import main

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("browse-cli")
    root = write_files(base / "vault", FILES)
    Vault.open(root, index_dir=base / "index").index()
    return root, base / "index"


@pytest.fixture(scope="module")
def shared(indexed: tuple[Path, Path]) -> list[str]:
    return ["--vault", str(indexed[0]), "--index-dir", str(indexed[1])]


def spawn(shared: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "vaultsearch.cli", *args, *shared]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=HANG_GUARD)


@pytest.fixture
def run(shared: list[str], capsys: pytest.CaptureFixture[str]) -> Run:
    def call(*args: str) -> subprocess.CompletedProcess[str]:
        try:
            code = main([*args, *shared])
        except SystemExit as exc:  # argparse refusing the command line
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(list(args), code, out, err)

    return call


def as_json(run: Run, *args: str) -> Any:
    done = run(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_get_reads_ranges_and_says_what_failed(shared: list[str], run: Run) -> None:
    done = spawn(shared, "get", "garden/Tomatoes.md:10:3", "work/Budget")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [
        "== garden/Tomatoes.md lines 10-12 of 16",
        "10| ## Pests",
    ]
    assert "== work/Budget.md lines 1-3 of 3" in done.stdout

    from_line = as_json(run, "get", "garden/Tomatoes.md:14", "--context", "1")
    assert [(x["start_line"], x["end_line"]) for x in from_line["items"]] == [(13, 16)]

    some = run("get", "Lonely.md", "nowhere.md")
    assert some.returncode == 1 and "There is no note 'nowhere.md'" in some.stdout
    assert "== Lonely.md lines 1-3 of 3" in some.stdout

    alone = spawn(shared, "get", "nowhere.md:3")
    assert alone.returncode == 2 and alone.stdout == ""
    assert alone.stderr.startswith("error: There is no note 'nowhere.md'")
    zero = run("get", "Lonely.md:0")
    assert zero.returncode == 2 and "lines are counted from 1" in zero.stderr


def test_links_in_text_and_json(shared: list[str], run: Run) -> None:
    done = spawn(shared, "links", "broken")
    assert done.returncode == 0 and done.stdout.splitlines() == [
        "3 broken links in 3 note -> target pairs:",
        "Inbox.md -> [[Someday]]",
        "garden/Composting.md -> [[Missing Note]]",
        "work/Meetings.md -> [[Nowhere]]",
    ]
    orphans = as_json(run, "links", "orphans")
    assert [x["path"] for x in orphans["items"]] == ["Inbox.md", "Lonely.md"]
    route = as_json(run, "links", "path", "Basil", "--to", "Budget")
    assert route["hops"] == 4 and route["target"] == "work/Budget.md"
    cut = run("links", "most_linked", "--limit", "1")
    assert "1 of 3 linked notes (raise limit for more)" in cut.stdout
    missing = run("links", "outlinks")
    assert missing.returncode == 2 and "needs path" in missing.stderr
    wrong = run("links", "popular")
    assert wrong.returncode == 2 and "invalid choice: 'popular'" in wrong.stderr


def test_list_tags_related_outline_folders(run: Run) -> None:
    page = as_json(run, "list", "--limit", "3")
    assert page["total"] == 7 and len(page["notes"]) == 3 and page["next_cursor"]
    rest = as_json(run, "list", "--limit", "10", "--cursor", page["next_cursor"])
    assert len(rest["notes"]) == 4 and "next_cursor" not in rest
    garden = as_json(run, "list", "--folder", "garden", "--sort", "date")
    assert {n["path"] for n in garden["notes"]} == {
        "garden/Tomatoes.md",
        "garden/Composting.md",
        "garden/herbs/Basil.md",
    }

    tags = run("tags")
    assert tags.stdout.splitlines()[1:] == ["garden 1 (0 direct)", "garden/vegetables 1"]

    rel = run("related", "garden/Composting.md", "--depth", "2", "--limit", "1")
    assert rel.returncode == 0 and "Cut at limit=1: backlinks 1 of 2" in rel.stdout

    outline = run("outline", "garden/Tomatoes.md")
    assert outline.stdout.splitlines() == [
        "garden/Tomatoes.md: 3 headings",
        "# Tomatoes  (5-16)",
        "  ## Pests  (10-16)",
        "    ### Hornworm eggs  (14-16)",
    ]
    folders = as_json(run, "folders", "garden")
    assert [(f["folder"], f["notes"], f["all"]) for f in folders["items"]] == [
        ("garden", 2, 3),
        ("garden/herbs", 1, 1),
    ]
    nowhere = run("folders", "attic")
    assert nowhere.returncode == 2 and "no folder 'attic'" in nowhere.stderr


def test_the_cli_prints_what_the_tools_answer(indexed: tuple[Path, Path], run: Run) -> None:
    """One implementation: the command's JSON is the Answer's data, as the MCP tool sends it."""
    root, index_dir = indexed
    with Vault.open(root, index_dir=index_dir) as vault:
        browser = Browser(vault)
        for args, answer in (
            (
                ("links", "backlinks", "garden/Tomatoes.md"),
                links(browser, "backlinks", "garden/Tomatoes.md"),
            ),
            (
                ("related", "work/Meetings.md", "--depth", "2"),
                related(browser, "work/Meetings.md", 2),
            ),
        ):
            assert as_json(run, *args) == json.loads(json.dumps(answer.data))
            assert run(*args).stdout.rstrip("\n") == answer.text


# --- any indexed file from the terminal: a source's code, a PDF page, a chunk ----------
def test_get_and_outline_read_code_pdf_pages_and_chunks(
    tmp_path: Path, embedder: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.pdfs import make_pdf
    from tests.test_code_pdf_indexing import CART

    root = write_files(
        tmp_path / "vault",
        {
            "Home.md": "# Home\n\nSee the shop.\n",
            "papers/energy.pdf": make_pdf(
                [["Solar panels", "Photovoltaic cells."], ["Wind turbines", "Long blades."]]
            ),
        },
    )
    write_files(tmp_path / "shop", {"cart.py": CART})
    vault = ["--vault", str(root)]

    def cli(*argv: str) -> Any:
        code = main([*argv, *vault, "--json"])
        out = capsys.readouterr().out
        assert code == 0, out
        return json.loads(out)

    assert main(["sources", *vault, "add", "shop", str(tmp_path / "shop")]) == 0
    assert main(["index", *vault, "--quiet"]) == 0
    capsys.readouterr()

    got = cli("get", "shop:cart.py:8:3")["items"][0]
    assert got["path"] == "shop:cart.py" and got["start_line"] == 8
    assert "def total_price" in got["text"]
    page = cli("get", "papers/energy.pdf", "--page", "2")["items"][0]
    assert "Long blades" in page["text"] and "Photovoltaic" not in page["text"]
    hit = Vault.open(root).search("photovoltaic cells", top_k=1)[0]
    chunk = cli("get", "--chunk", str(hit.chunk_id))["items"][0]
    assert chunk["path"] == "papers/energy.pdf" and "Photovoltaic" in chunk["text"]

    names = {i["text"]: i for i in cli("outline", "shop:cart.py")["items"]}
    cls = next(n for n in names if n.endswith("Cart"))
    method = next(n for n in names if n.endswith("Cart.total_price"))
    assert names[method]["level"] == names[cls]["level"] + 1
    assert names[method]["line"] == 8
    pages = [i["text"] for i in cli("outline", "papers/energy.pdf")["items"]]
    assert pages == ["page 1", "page 2"]
