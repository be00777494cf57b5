"""docs/ is both the documentation and the demo vault: keep it true to the code.

Links are read with the product's own Markdown parser and link resolver, so a link
that works here also works in the demo index (and in Obsidian).
"""

from __future__ import annotations

import argparse
import doctest
import json
import re
import tomllib
from functools import cache
from pathlib import Path

import pytest

from vaultsearch.cli.main import build_parser
from vaultsearch.links import LinkResolver
from vaultsearch.models import ParsedNote
from vaultsearch.parsers.markdown import MarkdownParser

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
EXAMPLE_CONFIG = ROOT / "config.toml.example"

# Pages in docs/ that other people own: they may be linked before they exist.
WRITTEN_ELSEWHERE = {
    "MCP.md": "the MCP server's engineer",
    "benchmarks.md": "the bench/ scripts (make bench)",
}


@cache
def pages() -> dict[str, ParsedNote]:
    parser = MarkdownParser()
    return {
        p.name: parser.parse(p.name, p.read_text(encoding="utf-8"))
        for p in sorted(DOCS.glob("*.md"))
    }


def page(name: str) -> ParsedNote:
    return pages()[name]


_TABLE_PIPE_IN_LINK = re.compile(r"\[\[[^\]|]*(?<!\\)\|")
"""An unescaped | in a table row ends the cell, and cuts the link in two."""


def _norm(heading: str) -> str:
    return " ".join(heading.split()).casefold()


def section_text(note: ParsedNote, *heading_path: str) -> str:
    """The text of the section with this heading path and of every section below it."""
    n = len(heading_path)
    parts = [
        note.text[s.start_char : s.end_char]
        for s in note.sections
        if s.heading_path[:n] == heading_path
    ]
    assert parts, f"{note.path}: no section {' > '.join(heading_path)!r}"
    return "\n".join(parts)


# --- every page -------------------------------------------------------------------
def test_every_page_has_frontmatter() -> None:
    assert pages(), "docs/ has no pages"
    for name, note in pages().items():
        fm = note.frontmatter
        assert isinstance(fm.get("title"), str) and fm["title"], f"{name}: no title"
        assert isinstance(fm.get("tags"), list) and fm["tags"], f"{name}: no tags"
        if name not in WRITTEN_ELSEWHERE:
            assert "updated" in fm, f"{name}: no 'updated' date"
        assert not note.warnings, f"{name}: {note.warnings}"


def test_every_wikilink_resolves() -> None:
    known = {name: note.aliases for name, note in pages().items()}
    for name in WRITTEN_ELSEWHERE:
        known.setdefault(name, ())
    resolver = LinkResolver(known.items())
    problems = []
    for name, note in pages().items():
        for link in note.links:
            where = f"{name}:{link.line} [[{link.target}]]"
            target = resolver.resolve(link.target, name)
            if target is None:
                problems.append(f"{where} does not resolve to a page in docs/")
                continue
            if link.heading and target in pages():
                headings = {_norm(h.text) for h in page(target).headings}
                if _norm(link.heading) not in headings:
                    problems.append(f"{where}: {target} has no heading {link.heading!r}")
        for number, line in enumerate(note.text.splitlines(), 1):
            if line.startswith("|") and _TABLE_PIPE_IN_LINK.search(line):
                problems.append(f"{name}:{number}: a '|' in a link inside a table needs '\\|'")
    assert not problems, "\n".join(problems)


def test_pages_written_elsewhere_exist() -> None:
    missing = [f"docs/{n} ({who})" for n, who in WRITTEN_ELSEWHERE.items() if n not in pages()]
    if missing:
        pytest.skip("linked but not written yet: " + ", ".join(missing))


def test_home_links_every_page() -> None:
    home = page("Home.md")
    resolver = LinkResolver((name, note.aliases) for name, note in pages().items())
    linked = {resolver.resolve(link.target, "Home.md") for link in home.links}
    missing = set(pages()) - {"Home.md"} - linked
    assert not missing, f"Home.md does not link {sorted(missing)}"
    assert {"MCP", "benchmarks"} <= {link.target for link in home.links}


# --- CLI.md -------------------------------------------------------------------------
def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("build_parser() has no subcommands")


def _documented(parser: argparse.ArgumentParser, section: str, where: str) -> list[str]:
    problems = []
    for action in parser._actions:
        options = [o for o in action.option_strings if o not in ("-h", "--help")]
        if not options:
            continue
        for option in options:
            if f"`{option}`" not in section:
                problems.append(f"{where}: option `{option}` is not documented")
        for choice in action.choices or ():
            if f"{choice}" not in section:
                problems.append(f"{where}: {options[0]} choice {choice!r} is not documented")
        default = action.default
        if default not in (None, False, argparse.SUPPRESS) and f"`{default}`" not in section:
            problems.append(f"{where}: {options[0]} default `{default}` is not documented")
    return problems


def test_cli_doc_covers_every_command_and_option() -> None:
    cli = page("CLI.md")
    h2 = {h.text for h in cli.headings if h.level == 2}
    problems = []
    for name, sub in _subcommands().items():
        heading = f"vaultsearch {name}"
        if heading not in h2:
            problems.append(f"no '## {heading}' heading")
            continue
        problems += _documented(sub, section_text(cli, "CLI", heading), heading)
    problems += _documented(build_parser(), section_text(cli, "CLI", "Global options"), "global")
    assert not problems, "\n".join(problems)


# --- Configuration.md -----------------------------------------------------------------
def _example_keys() -> tuple[dict[str, dict[str, object]], set[str]]:
    """The template's tables, and the keys whose comment marks them [rebuild]."""
    text = EXAMPLE_CONFIG.read_text(encoding="utf-8")
    rebuild: set[str] = set()
    section, comments = "", list[str]()
    for line in text.splitlines():
        stripped = line.strip()
        if m := re.fullmatch(r"\[(\w+)\]", stripped):
            section, comments = m[1], []
        elif stripped.startswith("#"):
            comments.append(stripped)
        elif m := re.match(r'"?([^"=]+?)"?\s*=', stripped):
            if any("[rebuild]" in c for c in comments):
                rebuild.add(f"{section}.{m[1]}")
            comments = []
    return tomllib.loads(text), rebuild


def test_configuration_doc_covers_every_key() -> None:
    doc = page("Configuration.md")
    raw, rebuild = _example_keys()
    rows = {m[1]: m[0] for m in re.finditer(r"^\| `(\w+\.\w+)` \|.*$", doc.text, re.M)}
    problems = []
    for section, table in raw.items():
        for key, default in table.items():
            name = f"{section}.{key}"
            if section == "parsers":
                if f'"{key}" = "{default}"' not in doc.text:
                    problems.append(f"parser glob {key!r} = {default!r} is not shown")
                continue
            row = rows.get(name)
            if row is None:
                problems.append(f"`{name}` has no row")
                continue
            cells = [c.strip() for c in row.strip("|").split("|")]
            if cells[1] != f"`{json.dumps(default)}`":
                problems.append(f"`{name}`: default {cells[1]} != `{json.dumps(default)}`")
            wanted = "**yes**" if name in rebuild else "no"
            if cells[2] != wanted:
                problems.append(f"`{name}`: rebuild column {cells[2]!r}, expected {wanted!r}")
    if any(k.startswith("parsers.") for k in rebuild):
        assert "[rebuild]" in section_text(
            doc, "Configuration", "Parsers decide which files are notes"
        )
    invented = set(rows) - {f"{s}.{k}" for s, t in raw.items() for k in t}
    problems += [f"`{k}` is documented but not in config.toml.example" for k in invented]
    assert not problems, "\n".join(problems)


# --- Python API.md ----------------------------------------------------------------------
_NOTE_FILE = re.compile(r"^`notes/([^`]+)`:\n\n```markdown\n(.*?)^```$", re.M | re.S)
_PYCON = re.compile(r"^```pycon\n(.*?)^```$", re.M | re.S)


def test_python_api_examples_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: object
) -> None:
    path = DOCS / "Python API.md"
    text = path.read_text(encoding="utf-8")
    notes = _NOTE_FILE.findall(text)
    assert len(notes) >= 2, "the page must show the notes its examples search"
    for rel, content in notes:
        target = tmp_path / "notes" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    monkeypatch.chdir(tmp_path)

    parser = doctest.DocTestParser()
    examples = []
    for block in _PYCON.finditer(text):
        first_line = text.count("\n", 0, block.start(1))
        for example in parser.get_examples(block[1], path.name):
            example.lineno += first_line
            examples.append(example)
    assert len(examples) >= 30, f"only {len(examples)} examples found"

    test = doctest.DocTest(examples, {}, path.name, str(path), 0, None)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []
    result = runner.run(test, out=report.append)
    assert result.failed == 0, "".join(report)
