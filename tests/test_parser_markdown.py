from __future__ import annotations

import json
from datetime import UTC, datetime
from itertools import pairwise

import pytest

from vaultsearch.models import Link, ParsedNote
from vaultsearch.parsers.markdown import MarkdownParser


@pytest.fixture(scope="module")
def parser() -> MarkdownParser:
    return MarkdownParser()


def parse(parser: MarkdownParser, text: str, path: str = "folder/My Note.md") -> ParsedNote:
    return parser.parse(path, text)


def section_texts(note: ParsedNote) -> list[str]:
    return [note.text[s.start_char : s.end_char] for s in note.sections]


def link(note: ParsedNote, target: str) -> Link:
    matches = [lk for lk in note.links if lk.target == target]
    assert len(matches) == 1, (target, note.links)
    return matches[0]


# --- title -------------------------------------------------------------------------------


def test_title_prefers_frontmatter(parser: MarkdownParser) -> None:
    note = parse(parser, "---\ntitle: From YAML\n---\n# From Heading\n")
    assert note.title == "From YAML"


def test_title_falls_back_to_first_h1(parser: MarkdownParser) -> None:
    note = parse(parser, "## Second level\n\n# The **Real** Title\n\n# Later\n")
    assert note.title == "The Real Title"


def test_title_falls_back_to_file_stem(parser: MarkdownParser) -> None:
    assert parse(parser, "just text\n## Not an H1\n").title == "My Note"
    assert parse(parser, "", path="a/b/report.v2.md").title == "report.v2"


def test_blank_frontmatter_title_is_ignored(parser: MarkdownParser) -> None:
    assert parse(parser, "---\ntitle: '  '\n---\n# H\n").title == "H"


# --- aliases and tags --------------------------------------------------------------------


def test_aliases_list_string_and_singular_key(parser: MarkdownParser) -> None:
    assert parse(parser, "---\naliases: [One, 'Two words']\n---\n").aliases == ("One", "Two words")
    assert parse(parser, "---\naliases: Solo\n---\n").aliases == ("Solo",)
    assert parse(parser, "---\nalias:\n  - A\n  - a\n  - B\n---\n").aliases == ("A", "B")


def test_frontmatter_tags_forms(parser: MarkdownParser) -> None:
    assert parse(parser, "---\ntags: [a, '#b', c/d]\n---\n").tags == ("a", "b", "c/d")
    assert parse(parser, "---\ntags: 'x, y z'\n---\n").tags == ("x", "y", "z")
    assert parse(parser, "---\ntag: '#solo'\n---\n").tags == ("solo",)
    assert parse(parser, "---\ntags: [2023, y2023]\n---\n").tags == ("y2023",)


def test_inline_tags_nested_and_deduplicated(parser: MarkdownParser) -> None:
    text = "---\ntags: [Project]\n---\nSee #project and #area/work/deep, also #Área and (#paren).\n"
    note = parse(parser, text)
    assert note.tags == ("Project", "area/work/deep", "Área", "paren")


def test_tags_not_taken_from_code_urls_links_or_headings(parser: MarkdownParser) -> None:
    text = (
        "# Heading #intitle\n"
        "## Plain heading ##\n"
        "Issue #123 and C#sharp and a#b are not tags; #real is.\n"
        "Visit http://x.com/#anchor or <https://y.com/#auto> or www.z.com/#w.\n"
        "Links [[Note#Section]] and [t](other.md#part) and [u](https://e.com/#frag).\n"
        "Inline `#code` span and \\#escaped.\n"
        "\n"
        "```\n#fenced\n```\n"
        "\n"
        "    #indented\n"
    )
    note = parse(parser, text)
    assert note.tags == ("intitle", "real")


def test_tag_may_not_be_all_digits_but_may_contain_digits(parser: MarkdownParser) -> None:
    note = parse(parser, "#2024 #y2024 #2024-review #1/2\n")
    assert note.tags == ("y2024", "2024-review")


# --- links -------------------------------------------------------------------------------


def test_all_wikilink_forms(parser: MarkdownParser) -> None:
    text = (
        "Intro [[Plain]] and [[Labelled|the label]]\n"
        "[[Doc#Some Heading]] [[Block#^abc123]] [[folder/Deep Note]] [[Ext.md]]\n"
        "![[Embedded]] ![[image.png]] ![[Pic.png|100]]\n"
    )
    note = parse(parser, text)
    assert link(note, "Plain") == Link("Plain", line=1)
    assert link(note, "Labelled") == Link("Labelled", label="the label", line=1)
    assert link(note, "Doc") == Link("Doc", heading="Some Heading", line=2)
    assert link(note, "Block") == Link("Block", block="abc123", line=2)
    assert link(note, "folder/Deep Note").line == 2
    assert link(note, "Ext.md").line == 2
    assert link(note, "Embedded") == Link("Embedded", embed=True, line=3)
    assert link(note, "image.png") == Link("image.png", embed=True, line=3)
    assert link(note, "Pic.png").label == "100"
    assert [lk.target for lk in note.links] == [
        "Plain",
        "Labelled",
        "Doc",
        "Block",
        "folder/Deep Note",
        "Ext.md",
        "Embedded",
        "image.png",
        "Pic.png",
    ]


def test_markdown_links_to_local_notes_only(parser: MarkdownParser) -> None:
    text = (
        "[one](path/to/note.md) [two](<path with spaces.md>) [three](Note%20Name.md#My%20Heading)\n"
        "[web](https://example.com/page.md) [mail](mailto:a@b.c) [pic](image.png)\n"
        "[anchor](#local) ![emb](Embedded.md) [blk](x.md#^b1)\n"
    )
    note = parse(parser, text)
    assert all(lk.kind == "markdown" for lk in note.links)
    assert link(note, "path/to/note.md") == Link(
        "path/to/note.md", label="one", kind="markdown", line=1
    )
    assert link(note, "path with spaces.md").label == "two"
    three = link(note, "Note Name.md")
    assert (three.heading, three.line) == ("My Heading", 1)
    assert link(note, "Embedded.md").embed is True
    assert link(note, "x.md").block == "b1"
    assert {lk.target for lk in note.links} == {
        "path/to/note.md",
        "path with spaces.md",
        "Note Name.md",
        "Embedded.md",
        "x.md",
    }


def test_links_inside_code_are_ignored(parser: MarkdownParser) -> None:
    text = (
        "Real [[Yes]] but `[[NoSpan]]` and ``[x](no.md)``\n"
        "\n"
        "```markdown\n[[NoFence]] [y](no2.md)\n```\n"
        "\n"
        "~~~\n[[NoTilde]]\n~~~\n"
        "\n"
        "    [[NoIndented]]\n"
        "\n"
        "<div>\n[[NoHtml]]\n</div>\n"
    )
    assert [lk.target for lk in parse(parser, text).links] == ["Yes"]


def test_links_in_lists_quotes_and_tables(parser: MarkdownParser) -> None:
    text = (
        "- item [[InList]]\n"
        "  continued [[Continued]]\n"
        "> quoted [[InQuote]]\n"
        "\n"
        "| a | b |\n"
        "|---|---|\n"
        "| [[Cell\\|shown]] | x |\n"
    )
    note = parse(parser, text)
    assert [(lk.target, lk.line) for lk in note.links] == [
        ("InList", 1),
        ("Continued", 2),
        ("InQuote", 3),
        ("Cell", 7),
    ]
    assert link(note, "Cell").label == "shown"


def test_self_heading_links_and_multiline_brackets_are_skipped(parser: MarkdownParser) -> None:
    note = parse(parser, "[[#Local heading]] [[broken\nacross lines]] [[ ]]\n")
    assert note.links == ()


def test_link_lines_count_frontmatter(parser: MarkdownParser) -> None:
    note = parse(parser, "---\na: 1\nb: 2\n---\n\n[[Target]]\n")
    assert link(note, "Target").line == 6


# --- headings and sections ---------------------------------------------------------------


def test_heading_tree_atx_and_setext(parser: MarkdownParser) -> None:
    text = "Setup\n=====\n## Linux ##\n### Debian *family*\n## `Windows`\nOther\n-----\n# Next\n"
    note = parse(parser, text)
    assert [(h.level, h.text, h.line, h.parent) for h in note.headings] == [
        (1, "Setup", 1, None),
        (2, "Linux", 3, 0),
        (3, "Debian family", 4, 1),
        (2, "Windows", 5, 0),
        (2, "Other", 6, 0),
        (1, "Next", 8, None),
    ]


def test_heading_text_keeps_wikilink_label_and_link_text(parser: MarkdownParser) -> None:
    note = parse(parser, "# About [[Target|the target]] and [docs](x.md) C#\n")
    assert note.headings[0].text == "About the target and docs C#"
    assert link(note, "Target").line == 1


def test_headings_inside_quotes_and_code_are_not_structure(parser: MarkdownParser) -> None:
    text = "# Top\n> # Quoted\n\n```\n# Code\n```\n- # Listed\n"
    assert [h.text for h in parse(parser, text).headings] == ["Top"]


def test_sections_split_at_every_heading(parser: MarkdownParser) -> None:
    text = (
        "---\ntitle: T\n---\nIntro line\n\n# Setup\nsetup text\n## Linux\nlinux text\n\n# Usage\n"
    )
    note = parse(parser, text)
    assert [(s.heading_path, s.start_line, s.end_line) for s in note.sections] == [
        ((), 4, 5),
        (("Setup",), 6, 7),
        (("Setup", "Linux"), 8, 10),
        (("Usage",), 11, 11),
    ]
    assert section_texts(note) == [
        "Intro line\n\n",
        "# Setup\nsetup text\n",
        "## Linux\nlinux text\n\n",
        "# Usage\n",
    ]


def test_no_leading_section_for_blank_preamble(parser: MarkdownParser) -> None:
    note = parse(parser, "---\na: 1\n---\n\n\n# Only\nbody")
    assert [s.heading_path for s in note.sections] == [("Only",)]
    assert section_texts(note) == ["# Only\nbody"]
    assert note.sections[0].start_line == 6


def test_sections_cover_body_without_gaps(parser: MarkdownParser) -> None:
    text = "pre\n# A\na\n## B\nb\n### C\n# D\nd"
    note = parse(parser, text)
    assert "".join(section_texts(note)) == text
    for before, after in pairwise(note.sections):
        assert before.end_char == after.start_char
        assert before.end_line + 1 == after.start_line


# --- encodings and line endings ----------------------------------------------------------


def test_crlf_line_endings(parser: MarkdownParser) -> None:
    text = "---\r\ntitle: Win\r\ntags: [w]\r\n---\r\nIntro #x\r\n\r\n# Head\r\nbody [[L]]\r\n"
    note = parse(parser, text)
    assert note.title == "Win"
    assert note.tags == ("w", "x")
    assert note.headings[0].text == "Head" and note.headings[0].line == 7
    assert link(note, "L").line == 8
    assert section_texts(note) == ["Intro #x\r\n\r\n", "# Head\r\nbody [[L]]\r\n"]
    assert [(s.start_line, s.end_line) for s in note.sections] == [(5, 6), (7, 8)]


def test_bom_and_unicode(parser: MarkdownParser) -> None:
    text = "\ufeff---\ntitle: Ünïcødé 🚀\n---\n# Überblick\n日本語 [[Café Notes]] #日本 ✓ [[Ω]]\n"
    note = parse(parser, text)
    assert note.title == "Ünïcødé 🚀"
    assert note.headings[0].text == "Überblick"
    assert [(lk.target, lk.line) for lk in note.links] == [("Café Notes", 5), ("Ω", 5)]
    assert note.tags == ("日本",)
    assert section_texts(note) == ["# Überblick\n日本語 [[Café Notes]] #日本 ✓ [[Ω]]\n"]


def test_bom_without_frontmatter_is_not_in_a_section(parser: MarkdownParser) -> None:
    note = parse(parser, "\ufeff# Title\ntext")
    assert note.title == "Title"
    assert section_texts(note) == ["# Title\ntext"]


def test_empty_and_frontmatter_only_files(parser: MarkdownParser) -> None:
    empty = parse(parser, "")
    assert (empty.title, empty.sections, empty.links, empty.warnings) == ("My Note", (), (), ())
    only = parse(parser, "---\ntitle: Just YAML\ntags: [t]\n---\n")
    assert (only.title, only.tags, only.sections) == ("Just YAML", ("t",), ())
    no_newline = parse(parser, "---\ntitle: X\n---")
    assert (no_newline.title, no_newline.sections) == ("X", ())


def test_unclosed_frontmatter_is_body_text(parser: MarkdownParser) -> None:
    note = parse(parser, "---\ntitle: nope\n\nSome text\n")
    assert note.frontmatter == {}
    assert note.title == "My Note"
    assert note.sections[0].start_char == 0


# --- broken YAML -------------------------------------------------------------------------


def test_invalid_yaml_is_recorded_not_raised(parser: MarkdownParser) -> None:
    text = "---\ntitle: [unclosed\ntags: : :\n---\n# Still Parsed\nBody [[Link]] #tag\n"
    note = parse(parser, text)
    assert note.frontmatter == {}
    assert len(note.warnings) == 1
    assert note.warnings[0].startswith("invalid YAML frontmatter: ")
    assert note.title == "Still Parsed"
    assert note.headings[0].line == 5
    assert link(note, "Link").line == 6
    assert note.tags == ("tag",)
    assert section_texts(note) == ["# Still Parsed\nBody [[Link]] #tag\n"]


@pytest.mark.parametrize(
    "yaml_block",
    [
        "- just\n- a list\n",
        "plain scalar\n",
        "date: 2023-13-45\n",
        "a: &x [*x]\nb: !!python/tuple [1]\n",
    ],
)
def test_odd_yaml_never_raises(parser: MarkdownParser, yaml_block: str) -> None:
    note = parse(parser, f"---\n{yaml_block}---\ntext\n")
    assert note.frontmatter == {}
    assert note.warnings and note.warnings[0].startswith("invalid YAML frontmatter: ")
    assert section_texts(note) == ["text\n"]


def test_recursive_yaml_anchor_is_json_safe(parser: MarkdownParser) -> None:
    note = parse(parser, "---\na: &x [1, *x]\n---\n")
    json.dumps(note.frontmatter)


# --- dates and frontmatter ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("yaml_value", "expected"),
    [
        ("2023-01-05", datetime(2023, 1, 5, tzinfo=UTC)),
        ("2023-01-05 10:00:00", datetime(2023, 1, 5, 10, tzinfo=UTC)),
        ("'2023-01-05 10:00'", datetime(2023, 1, 5, 10, tzinfo=UTC)),
        ("2023-01-05T10:00:00+02:00", datetime(2023, 1, 5, 8, tzinfo=UTC)),
        ("'2023-01-05T10:00:00Z'", datetime(2023, 1, 5, 10, tzinfo=UTC)),
        ("'2023/01/05'", datetime(2023, 1, 5, tzinfo=UTC)),
        ("1672912800", datetime(2023, 1, 5, 10, tzinfo=UTC)),
        ("1672912800000", datetime(2023, 1, 5, 10, tzinfo=UTC)),
        ("not a date", None),
        ("true", None),
    ],
)
def test_date_forms(parser: MarkdownParser, yaml_value: str, expected: datetime | None) -> None:
    assert parse(parser, f"---\ndate: {yaml_value}\n---\n").date == expected


def test_date_key_precedence_and_fallthrough(parser: MarkdownParser) -> None:
    text = (
        "---\ncreated: 2020-01-01\ndate: 2021-01-01\n"
        "modified: 2022-01-01\nupdated: 2023-01-01\n---\n"
    )
    assert parse(parser, text).date == datetime(2023, 1, 1, tzinfo=UTC)
    text = "---\ncreated: 2020-01-01\nupdated: garbage\n---\n"
    assert parse(parser, text).date == datetime(2020, 1, 1, tzinfo=UTC)
    assert parse(parser, "no frontmatter").date is None


def test_frontmatter_is_json_safe(parser: MarkdownParser) -> None:
    text = (
        "---\n"
        "title: T\n"
        "when: 2023-01-05\n"
        "stamp: 2023-01-05 10:00:00\n"
        "nested: {a: [1, 2.5, null, true], 3: x}\n"
        "---\n"
    )
    fm = parse(parser, text).frontmatter
    assert fm == {
        "title": "T",
        "when": "2023-01-05",
        "stamp": "2023-01-05T10:00:00",
        "nested": {"a": [1, 2.5, None, True], "3": "x"},
    }
    assert json.loads(json.dumps(fm)) == fm


# --- robustness and speed ----------------------------------------------------------------


def test_pathological_inputs_do_not_raise(parser: MarkdownParser) -> None:
    for text in [
        "[[" * 500,
        "`" * 1000,
        "> " * 300 + "# deep",
        "- " * 300 + "[[x]]",
        "\x00\x01 binary-ish \udcff text",
        "#" * 100,
        "[a](<unclosed.md",
        "\r\r\r# lone CR\r",
    ]:
        note = parse(parser, text)
        assert isinstance(note, ParsedNote)


def test_parser_instance_is_reusable(parser: MarkdownParser) -> None:
    first = parse(parser, "# One\n[[A]]\n")
    second = parse(parser, "# Two\n[[B]]\n")
    assert [lk.target for lk in first.links] == ["A"]
    assert [lk.target for lk in second.links] == ["B"]


def test_typical_note_parses_in_one_pass(parser: MarkdownParser) -> None:
    """Speed lives in bench/ (no wall clock here); this pins the work a note costs."""
    paragraph = (
        "Some prose with a [[Wiki Link]], a [md](other.md), #tag and `code`, and **bold** text. "
    )
    blocks = [f"## Section {i}\n{paragraph * 4}\n- item [[X{i}]]\n" for i in range(12)]
    text = "---\ntitle: Perf\ntags: [a]\n---\n# Perf\n" + "\n".join(blocks)
    assert 4000 < len(text) < 7000
    note = parse(parser, text)
    assert len(note.sections) == 13
    assert len(note.links) == 12 * 4 * 2 + 12
    assert note.warnings == ()
