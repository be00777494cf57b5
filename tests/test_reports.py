"""Report templates (shipped, overridden, sandboxed, described) and where reports land."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from vaultsearch.errors import PathOutsideVaultError, QueryError
from vaultsearch.reports import library
from vaultsearch.reports.report import cite, file_name_for, slug, write_report
from vaultsearch.writes.guard import note_path

SOURCES = [
    {"number": 1, "path": "a.md", "start_line": 2, "end_line": 3, "title": "A"},
    {"number": 2, "path": "b/c.md", "start_line": 1, "end_line": 1, "title": "C"},
]


def test_each_shipped_template_renders_its_variables(tmp_path: Path) -> None:
    paper = library.render(
        tmp_path,
        "paper",
        {"title": "T", "body": "x [1] y [2]", "sources": SOURCES, "generated_at": "now"},
    )
    assert paper.startswith("# T\n")
    assert re.findall(r"^\[(\d)\] (\S+), lines (\d+)-(\d+)", paper, re.M) == [
        ("1", "a.md", "2", "3"), ("2", "b/c.md", "1", "1"),
    ]  # fmt: skip
    assert "## Abstract" not in paper  # optional and not given
    basic = library.render(tmp_path, "basic", {"title": "T", "answer": "A.", "question": "Q?"})
    assert "> Q?" in basic and "A." in basic and "## Sources" not in basic
    points = library.render(
        tmp_path,
        "bullet_points",
        {"title": "T", "points": ["one", {"text": "two", "cites": [1, 2]}], "sources": SOURCES},
    )
    assert "- one\n" in points and "- two [1] [2]\n" in points and "1. a.md:2-3" in points


def test_the_schema_lists_what_the_template_uses_with_descriptions(tmp_path: Path) -> None:
    info = library.info(tmp_path, "paper").to_dict()
    assert info["origin"] == "shipped" and "citations" in info["description"]
    variables = info["variables"]
    assert set(variables) == {
        "title",
        "authors",
        "abstract",
        "body",
        "conclusion",
        "sources",
        "generated_at",
    }
    assert variables["body"]["required"] and not variables["abstract"]["required"]
    assert all(v["description"] for v in variables.values())
    assert set(library.names(tmp_path)) == {"basic", "paper", "bullet_points"}


def test_a_vault_template_overrides_and_adds(tmp_path: Path) -> None:
    folder = tmp_path / ".vaultsearch" / "templates"
    folder.mkdir(parents=True)
    (folder / "paper.md.j2").write_text(
        "{#---\ndescription: Mine.\n---#}\n{{ title }} by {{ who }}\n"
    )
    (folder / "memo.md.j2").write_text("Memo: {{ subject }}\n")
    assert library.render(tmp_path, "paper", {"title": "T", "who": "me"}) == "T by me\n"
    info = library.info(tmp_path, "paper")
    assert info.origin == ".vaultsearch/templates/paper.md.j2" and info.description == "Mine."
    assert [v.name for v in info.variables] == ["title", "who"]
    assert [v.name for v in library.info(tmp_path, "memo").variables] == ["subject"]
    assert "memo" in library.names(tmp_path)
    with pytest.raises(
        QueryError, match="no template 'nope'; templates: basic, bullet_points, memo, paper"
    ):
        library.render(tmp_path, "nope", {})
    with pytest.raises(QueryError, match="not a template name"):
        library.info(tmp_path, "../paper")


def test_templates_cannot_reach_python_internals(tmp_path: Path) -> None:
    folder = tmp_path / ".vaultsearch" / "templates"
    folder.mkdir(parents=True)
    (folder / "evil.md.j2").write_text("{{ title.__class__.__mro__[1].__subclasses__() }}\n")
    (folder / "broken.md.j2").write_text("{% if %}\n")
    with pytest.raises(QueryError, match=r"'evil'.*is not allowed to"):
        library.render(tmp_path, "evil", {"title": "x"})
    with pytest.raises(QueryError, match=r"'broken'.*line 1"):
        library.render(tmp_path, "broken", {})
    raw = library.render(tmp_path, "basic", {"title": "<b>&</b>", "answer": "*md*"})
    assert "# <b>&</b>" in raw and "*md*" in raw  # Markdown: nothing escaped


def test_missing_required_variables_are_named(tmp_path: Path) -> None:
    with pytest.raises(QueryError, match=r"'paper' needs the variable\(s\) body, sources"):
        library.render(tmp_path, "paper", {"title": "T"})


def test_citations_are_checked_against_the_notes() -> None:
    notes = {"a.md": ["# A", "one", "two"]}

    def read(path: str) -> tuple[str, list[str]]:
        if path not in notes:
            raise QueryError(f"There is no note {path!r}.")
        return path, notes[path]

    (only,) = cite([{"path": "a.md", "start_line": 2, "end_line": 3}], read)
    assert only["number"] == 1 and only["text"] == "one\ntwo" and only["uri"] == "note://a.md"
    for bad, message in (
        (
            [{"path": "a.md", "start_line": 3, "end_line": 9}],
            "cites lines 3-9, but the note has 3 lines",
        ),
        ([{"path": "a.md", "start_line": 0}], "start_line must be a line number"),
        ([{"path": "z.md"}], "no note 'z.md'"),
        ([{"start_line": 1}], "needs a path"),
        ("a.md", "must be a list"),
    ):
        with pytest.raises(QueryError, match=re.escape(message)):
            cite(bad, read)


def test_names_and_where_reports_may_go(tmp_path: Path) -> None:
    now = datetime(2026, 11, 23, 9, 5, 7, tzinfo=UTC)
    assert (
        file_name_for(now, "Café: Ünïcode & more!", None) == "20261123_090507_cafe-unicode-more.md"
    )
    assert file_name_for(now, "", "notes") == "notes.md" and slug("!!!") == "report"
    with pytest.raises(QueryError, match="bare file name"):
        file_name_for(now, "t", "../x.md")
    root = tmp_path / "vault"
    root.mkdir()
    first = write_report(root, "rag-reports", "20261123_090507_t.md", "one")
    second = write_report(root, "rag-reports", "20261123_090507_t.md", "two")
    assert (first, second) == (
        "rag-reports/20261123_090507_t.md",
        "rag-reports/20261123_090507_t_2.md",
    )
    assert (root / second).read_text() == "two"
    assert write_report(root, "", "mine.md", "x") == "mine.md"
    with pytest.raises(QueryError, match="exists already"):
        write_report(root, "", "mine.md", "y")
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "link").symlink_to(outside)
    for folder in ("../outside", str(outside), "link", "link/deeper"):
        with pytest.raises(PathOutsideVaultError, match="Refusing to write"):
            write_report(root, folder, "r.md", "x")
    with pytest.raises(PathOutsideVaultError, match="hidden"):
        write_report(root, ".obsidian", "r.md", "x")
    assert list(outside.iterdir()) == []
    assert note_path(root, "a/b") == ("a/b.md", root.resolve() / "a/b.md")
    with pytest.raises(QueryError, match="not a Markdown note"):
        note_path(root, "picture.png")


def test_the_toolbox_config_keys_are_checked_and_reports_are_not_scanned(tmp_path: Path) -> None:
    from vaultsearch import Vault
    from vaultsearch.config import config_from_dict
    from vaultsearch.errors import ConfigError

    for raw, message in (
        ({"sessions": {"max_sessions": 0}}, "'sessions.max_sessions' = 0 is invalid"),
        ({"reports": {"folder": "../out"}}, "'reports.folder' = '../out' is invalid"),
        ({"writes": {"documents_folder": "/abs"}}, "'writes.documents_folder' = '/abs' is invalid"),
        ({"writes": {"enabled": "yes"}}, "'writes.enabled' = 'yes' is invalid"),
        ({"reports": {"template": " "}}, "'reports.template' = ' ' is invalid"),
    ):
        with pytest.raises(ConfigError, match=re.escape(message)):
            config_from_dict(raw)
    root = tmp_path / "vault"
    for rel in ("a.md", "out/r.md", "out/sub/r.md", "rag-reports/r.md", "docs/out/r.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("# x\n")
    cfg = config_from_dict({"reports": {"folder": "out"}})
    assert sorted(Vault.open(root, config=cfg).manager().scan()) == [
        "a.md", "docs/out/r.md", "rag-reports/r.md",
    ]  # fmt: skip
    assert "rag-reports/r.md" not in Vault.open(root).manager().scan()


BOMBS = {
    "range": (
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "ran longer than reports.render_timeout (2 s) allows",
    ),
    "doubling": (
        '{% set ns = namespace(s="ab") %}{% for i in range(40) %}'
        "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
        "needed more than 256 MB to render",
    ),
    "macro": (
        "{% macro down(n) %}{{ down(n + 1) }}{% endmacro %}{{ down(0) }}",
        "calls itself without end",
    ),
    "self-include": ('{% include "self-include.md.j2" %}', "calls itself without end"),
    "output": (
        '{% for i in range(100000) %}{{ "x" * 100 }}{% endfor %}',
        "wrote more than reports.max_output_bytes (1,000 bytes)",
    ),
    "include-up": (
        '{% include "../../secret.md" %}',
        "cannot include, import or extend '../../secret.md'",
    ),
    "import-absolute": (
        '{% import "/etc/passwd" as p %}{{ p }}',
        "cannot include, import or extend '/etc/passwd'",
    ),
    "extends-shipped": ('{% extends "basic.md.j2" %}', "cannot include, import or extend"),
    "include-link": ('{% include "link.md.j2" %}', "cannot include, import or extend 'link.md.j2'"),
}


@pytest.mark.parametrize("bomb", list(BOMBS))
def test_a_template_without_bounds_is_stopped_in_one_sentence(tmp_path: Path, bomb: str) -> None:
    """Rendered in a child process with a deadline, a memory cap and an output cap,
    and a loader of the vault's template folder only: each is refused with a sentence
    naming what it ran into, and the next report renders."""
    from vaultsearch.config import ReportsConfig

    folder = tmp_path / "vault" / ".vaultsearch" / "templates"
    folder.mkdir(parents=True)
    (tmp_path / "secret.md").write_text("outside the vault\n")
    (folder / "link.md.j2").symlink_to(tmp_path / "secret.md")
    body, expected = BOMBS[bomb]
    (folder / f"{bomb}.md.j2").write_text(body)
    # only the endless loop meets the deadline; the others have one far above their need
    limits = ReportsConfig(render_timeout=2 if bomb == "range" else 600, max_output_bytes=1000)
    with pytest.raises(QueryError) as refused:
        library.render(tmp_path / "vault", bomb, {}, limits)
    message = refused.value.message
    assert message.startswith(f"Template {bomb!r} (.vaultsearch/templates/{bomb}.md.j2) ")
    assert expected in message and "\n" not in message and "Traceback" not in message
    assert "outside the vault" not in message
    done = library.render(tmp_path / "vault", "basic", {"title": "T", "answer": "A."}, limits)
    assert done.startswith("# T\n")


def test_a_template_includes_one_of_its_folder(tmp_path: Path) -> None:
    folder = tmp_path / ".vaultsearch" / "templates"
    folder.mkdir(parents=True)
    (folder / "part.md.j2").write_text("part for {{ title }}\n")
    (folder / "macros.md.j2").write_text("{% macro shout(x) %}{{ x | upper }}!{% endmacro %}")
    (folder / "whole.md.j2").write_text(
        '{% import "macros.md.j2" as m %}{{ m.shout(title) }}\n{% include "part.md.j2" %}'
    )
    assert library.render(tmp_path, "whole", {"title": "t"}) == "T!\npart for t\n"


def test_template_bombs_over_mcp_get_one_sentence_and_the_server_goes_on(
    tmp_path: Path, embedder: object
) -> None:
    """A real server over stdio: each bomb's call ends with one sentence, the log has
    no traceback, and the same server then answers a ping, writes a report and searches."""
    from tests.hostile_files import write_normal_notes
    from tests.rawmcp import RawSession
    from vaultsearch import Vault

    root, index_dir = tmp_path / "vault", tmp_path / "index"
    folder = root / ".vaultsearch" / "templates"
    folder.mkdir(parents=True)
    write_normal_notes(root)
    (root / ".vaultsearch" / "config.toml").write_text("[reports]\nrender_timeout = 2\n")
    bombs = ("range", "macro", "include-up")
    for name in bombs:
        (folder / f"{name}.md.j2").write_text(BOMBS[name][0])
    Vault.open(root, index_dir=index_dir).index()

    session = RawSession(root, index_dir, "--allow-writes")
    try:
        for name in bombs:
            failed, text = session.call("create_rag_report", {"template": name, "variables": {}})
            assert failed and text.startswith(f"Template {name!r} ("), text
            assert BOMBS[name][1] in text and "\n" not in text.strip()
        assert session.request("ping")["result"] == {}
        failed, text = session.call(
            "create_rag_report", {"variables": {"title": "After", "answer": "Plums."}}
        )
        assert not failed and (root / "rag-reports").is_dir(), text
        failed, text = session.call("search", {"query": "plums", "mode": "keyword"})
        assert not failed and "alpha.md" in text
    finally:
        log = session.close()
    assert "Traceback" not in log


def test_reading_a_template_evaluates_nothing_in_the_server(tmp_path: Path) -> None:
    """The schema is read in the server's process, by Jinja's code generator, which
    folds constant expressions: ``{{ "a" * 10 ** 10 }}`` took 10 GB there before any
    render. Nothing may fold in the environment that reads templates."""
    from jinja2 import nodes
    from jinja2.nodes import EvalContext, Impossible

    env = library.environment()
    for expr in ("6 * 7", "-(6 ** 7)", '"a" | center(9)', "9 is divisibleby 3", '"a" ~ "b" * 3'):
        output = env.parse("{{ " + expr + " }}").find(nodes.Output)
        assert output is not None
        with pytest.raises(Impossible):
            output.nodes[0].as_const(EvalContext(env))
    folder = tmp_path / ".vaultsearch" / "templates"
    folder.mkdir(parents=True)
    (folder / "mul.md.j2").write_text('{{ title }}{{ "a" * 10 ** 10 }}')
    (folder / "deep.md.j2").write_text("{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}")
    (folder / "alias.md.j2").write_text(
        "{#---\ndescription: &d [[a, b], [c]]\nvariables:\n  title: *d\nrequired: [title, *d]\n"
        "---#}\n{{ title }}\n"
    )
    assert [v.name for v in library.info(tmp_path, "mul").variables] == ["title"]
    with pytest.raises(QueryError, match=r"'deep' .* nests its expressions too deep"):
        library.info(tmp_path, "deep")
    alias = library.info(tmp_path, "alias").to_dict()
    assert alias["description"] == "" and alias["variables"] == {
        "title": {"description": "", "required": True}
    }
