"""Code beside the docs that describe it: in one index of docs pages and this project's
own source (a git source), a plain-words description of a function finds the function's
qualified name among the first three hits, although the docs pages explain the same
thing in prose (issue 27; the full 20-query set is ``bench/mixed_code.py``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from vaultsearch import Vault
from vaultsearch.search.ranking import bound_gifts
from vaultsearch.sourceconfig import source_from_table

ROOT = Path(__file__).resolve().parent.parent
DOCS = ("Sources.md", "Search.md", "Architecture.md", "MCP.md", "Configuration.md")
CODE = ("gitvalues.py", "app/linkmap.py", "_limits.py", "uris.py", "search/typos.py",
        "search/confidence.py", "search/expansion.py", "search/boilerplate.py")  # fmt: skip
CHECKED = (
    "vaultsearch.gitvalues.branch_problem",
    "vaultsearch.search.confidence.first_hit_answers",
    "vaultsearch._limits.child_command",
    "vaultsearch.search.typos.surface",
    "vaultsearch.uris.file_uri",
    "vaultsearch.search.boilerplate.find",
    "vaultsearch.search.typos.unknown_typos",  # its module docstring chunk stood for it
)
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
CALENDAR_FREE = ("search.recency=false",)
"""The pages' ``updated:`` dates and the checkout's file times say nothing here, and with
recency on the ranks moved with the calendar: on 2026-11-28 two pages passed the 7-day
tier (×1.2 → ×1.1) that every file had shared, and a check that had passed failed."""


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> Vault:
    base = tmp_path_factory.mktemp("mixed")
    (base / "vault").mkdir()
    for name in DOCS:
        shutil.copy2(ROOT / "docs" / name, base / "vault" / name)
    for rel in CODE:
        target = base / "repo" / "src" / "vaultsearch" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / "src" / "vaultsearch" / rel, target)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "src"]):
        subprocess.run([*GIT, *args], cwd=base / "repo", check=True, capture_output=True)
    v = Vault.open(base / "vault", index_dir=base / "index", flags=CALENDAR_FREE)
    table = {"name": "vaultsearch", "type": "git", "url": (base / "repo").as_uri(),
             "branch": "main", "include": ["src/"], "parsers": {"**/*.py": "code"}}  # fmt: skip
    v.add_source(source_from_table(table, "", 0))
    v.index()
    return v


def queries() -> dict[str, str]:
    lines = (ROOT / "bench" / "mixed_code_queries.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in lines.splitlines()]
    return {r["expected"]: r["query"] for r in rows if "query" in r}


@pytest.mark.parametrize("expected", CHECKED)
def test_a_described_function_is_in_the_top_three(vault: Vault, expected: str) -> None:
    hits = vault.search(queries()[expected], top_k=3)
    assert expected in [h.qualified_name for h in hits], [(h.path, h.qualified_name) for h in hits]


def test_a_link_gift_lifts_no_note_over_a_better_one_of_another_source(vault: Vault) -> None:
    # links join docs pages only; a page's gift from its own source must not carry it
    # past a code definition the branches rated above it (recency included)
    passed = []
    for query in queries().values():
        hits = vault.search(query, top_k=10, explain=True)
        for i, above in enumerate(hits):
            e = above.explain
            assert e is not None and abs(e.total - above.score) < 1e-9
            if e.graph_added <= 0 or not e.branches or above.kind == "code":
                continue  # code holds no links: its gift is a docs page's reference
            own = (e.fused + e.name_added) * e.recency_multiplier
            for below in hits[i + 1 :]:
                b = below.explain
                assert b is not None
                if (
                    below.source != above.source
                    and (b.fused + b.name_added) * (b.recency_multiplier) > own + 1e-9
                ):
                    passed.append((query, above.path, below.qualified_name))
    assert passed == []


def test_bound_gifts_cut_only_across_sources() -> None:
    graph = {1: (0.1, "a.md"), 3: (0.2, "a.md")}
    bases, mults = {1: 0.5, 2: 0.55, 3: 0.0}, {1: 1.0, 2: 1.0, 3: 1.0}
    cut = bound_gifts(graph, bases, mults, {1: "", 2: "code", 3: ""})
    assert cut[1][0] == pytest.approx(0.05) and cut[1][0] < 0.05  # stays below note 2
    assert cut[3] == (0.2, "a.md")  # only the link brought it in: nothing to keep it under
    assert bound_gifts(graph, bases, mults, {1: "", 2: "", 3: ""}) == graph
    # recency counts: note 2 is older, so note 1 already ranks above it without gifts
    assert bound_gifts(graph, bases, {1: 1.2, 2: 1.0, 3: 1.0}, {1: "", 2: "c", 3: ""}) == graph


def test_a_docs_passage_naming_a_definition_lifts_its_file(vault: Vault) -> None:
    # MCP.md's `links` tool lists `orphans` among its kinds; linkmap.py defines it (and
    # no other file does): the page's reference lifts the file into the top three
    expected = "vaultsearch.app.linkmap.orphans"

    def top3() -> list[str]:
        return [h.qualified_name for h in vault.search(queries()[expected], top_k=3)]

    assert expected in top3()
    shipped = vault.orchestrator.config
    vault.orchestrator.config = shipped.with_search(code_ref_weight=0.0)
    try:
        assert expected not in top3()
    finally:
        vault.orchestrator.config = shipped
