from __future__ import annotations

import pytest

from vaultsearch.parsers import DEFAULT_PARSER_MAP, ParserRegistry
from vaultsearch.parsers.code import CodeParser
from vaultsearch.parsers.codeplain import PlainCodeParser
from vaultsearch.parsers.markdown import MarkdownParser
from vaultsearch.parsers.pdf import PdfParser
from vaultsearch.parsers.text import PlainTextParser


def name_for(registry: ParserRegistry, path: str) -> str | None:
    parser = registry.parser_for(path)
    return None if parser is None else parser.name


def test_default_map_is_the_documented_one() -> None:
    code = ["py", "js", "mjs", "cjs", "jsx", "ts", "tsx", "go", "rs", "java"]
    plain = ["c", "h", "cc", "cpp", "hpp", "cs", "rb", "php", "swift", "kt", "scala", "sh", "lua"]
    assert list(DEFAULT_PARSER_MAP.items()) == [
        ("**/*.md", "markdown"),
        ("**/*.markdown", "markdown"),
        ("**/*.txt", "text"),
        *((f"**/*.{ext}", "code") for ext in code),
        *((f"**/*.{ext}", "code-plain") for ext in plain),
        ("**/*.pdf", "pdf"),
    ]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("Note.md", "markdown"),
        ("folder/Note.md", "markdown"),
        ("a/b/c/d/Deep Note.md", "markdown"),
        ("UPPER.MD", "markdown"),
        ("mixed/Case.Md", "markdown"),
        ("long.markdown", "markdown"),
        ("x/readme.txt", "text"),
        ("Ünïcødé/ノート.md", "markdown"),
        ("image.png", None),
        ("src/pkg/mod.py", "code"),
        ("web/App.TSX", "code"),
        ("cmd/main.go", "code"),
        ("lib.rs", "code"),
        ("a/B.java", "code"),
        ("x.mjs", "code"),
        ("scripts/run.sh", "code-plain"),
        ("native/x.cpp", "code-plain"),
        ("papers/Paper.PDF", "pdf"),
        ("data.json", None),
        ("folder/notes.md.bak", None),
        ("md", None),
        ("x.md/data.txt", "text"),
    ],
)
def test_default_registry_matching(path: str, expected: str | None) -> None:
    assert name_for(ParserRegistry(), path) == expected


def test_default_argument_and_positional_mapping_agree() -> None:
    assert name_for(ParserRegistry(DEFAULT_PARSER_MAP), "a/b.md") == "markdown"
    assert name_for(ParserRegistry(mapping=DEFAULT_PARSER_MAP), "a/b.md") == "markdown"


def test_first_matching_glob_wins_in_mapping_order() -> None:
    registry = ParserRegistry({"journal/**/*.md": "text", "**/*.md": "markdown"})
    assert name_for(registry, "journal/2024.md") == "text"
    assert name_for(registry, "journal/2024/01/05.md") == "text"
    assert name_for(registry, "other/journal/x.md") == "markdown"
    assert name_for(registry, "x.md") == "markdown"
    reversed_order = ParserRegistry({"**/*.md": "markdown", "journal/**/*.md": "text"})
    assert name_for(reversed_order, "journal/2024.md") == "markdown"


def test_double_star_in_the_middle_and_anchored_globs() -> None:
    registry = ParserRegistry({"docs/**/api/*.txt": "text", "/root-only.md": "markdown"})
    assert name_for(registry, "docs/api/a.txt") == "text"
    assert name_for(registry, "docs/v1/v2/api/a.txt") == "text"
    assert name_for(registry, "docs/api/deeper/a.txt") is None
    assert name_for(registry, "root-only.md") == "markdown"
    assert name_for(registry, "sub/root-only.md") is None


def test_single_star_does_not_cross_folders() -> None:
    registry = ParserRegistry({"notes/*.md": "markdown"})
    assert name_for(registry, "notes/a.md") == "markdown"
    assert name_for(registry, "notes/sub/a.md") is None


def test_paths_are_normalised_before_matching() -> None:
    registry = ParserRegistry()
    assert name_for(registry, "./a/b.md") == "markdown"
    assert name_for(registry, "a\\b.md") == "markdown"


def test_parser_instances_are_shared_and_typed() -> None:
    registry = ParserRegistry()
    first = registry.parser_for("a.md")
    assert isinstance(first, MarkdownParser)
    assert registry.parser_for("b/c.markdown") is first
    assert isinstance(registry.parser_for("t.txt"), PlainTextParser)
    assert isinstance(registry.parser_for("m.py"), CodeParser)
    assert registry.parser_for("m.go") is registry.parser_for("m.py")
    assert isinstance(registry.parser_for("m.rb"), PlainCodeParser)
    assert isinstance(registry.parser_for("p.pdf"), PdfParser)


def test_config_can_route_other_extensions_to_the_code_parsers() -> None:
    registry = ParserRegistry({"**/*.zig": "code-plain", "**/*.pyw": "code", "**/*.md": "markdown"})
    assert name_for(registry, "build.zig") == "code-plain"
    assert name_for(registry, "tool.pyw") == "code"
    assert name_for(registry, "x.py") is None  # a [parsers] table replaces the default


def test_known_parsers() -> None:
    assert ParserRegistry().known_parsers() == ["code", "code-plain", "markdown", "pdf", "text"]
    assert ParserRegistry({}).parser_for("a.md") is None


def test_unknown_parser_name_is_rejected_with_allowed_names() -> None:
    with pytest.raises(ValueError, match="asciidoc") as info:
        ParserRegistry({"**/*.adoc": "asciidoc"})
    assert "markdown" in str(info.value) and "text" in str(info.value)


@pytest.mark.parametrize("glob", ["", "   ", "!*.md", "# comment"])
def test_unusable_globs_are_rejected(glob: str) -> None:
    with pytest.raises(ValueError, match="glob"):
        ParserRegistry({glob: "markdown"})


def test_plain_text_parser() -> None:
    parser = PlainTextParser()
    text = "# not a heading\nSee [[not a link]] and #notatag\nlast line\n"
    note = parser.parse("folder/My File.txt", text)
    assert note.title == "My File"
    assert (note.links, note.tags, note.headings, note.frontmatter) == ((), (), (), {})
    assert len(note.sections) == 1
    section = note.sections[0]
    assert section.heading_path == ()
    assert (section.start_line, section.end_line) == (1, 3)
    assert text[section.start_char : section.end_char] == text


def test_plain_text_parser_blank_and_bom() -> None:
    parser = PlainTextParser()
    assert parser.parse("a.txt", "").sections == ()
    assert parser.parse("a.txt", " \n\t\n").sections == ()
    note = parser.parse("a.txt", "\ufeffhello")
    assert note.text[note.sections[0].start_char : note.sections[0].end_char] == "hello"
    assert (note.sections[0].start_line, note.sections[0].end_line) == (1, 1)
