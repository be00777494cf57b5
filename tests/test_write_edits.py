"""Pure text changes behind the write tools: link rewriting after a move, note edits."""

from __future__ import annotations

import pytest

from vaultsearch.errors import QueryError
from vaultsearch.links import LinkResolver
from vaultsearch.writes.edits import append, find_replace, prepend, replace_section
from vaultsearch.writes.links import Move, rebase_links, rewrite_links

NOTES = ["folder/Old.md", "Other.md", "sub/Source.md", "Space Name.md"]
RESOLVER = LinkResolver((p, ()) for p in NOTES)
MOVE = Move("folder/Old.md", "archive/New.md", bare_name_unique=True)


def rewrite(text: str, source: str = "Other.md", move: Move = MOVE) -> tuple[str, int]:
    return rewrite_links(text, source, move, RESOLVER.resolve)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("See [[Old]].", "See [[New]]."),
        ("See [[Old|the old one]].", "See [[New|the old one]]."),
        ("See [[folder/Old#Heading]].", "See [[archive/New#Heading]]."),
        ("See [[folder/Old#Heading|label]].", "See [[archive/New#Heading|label]]."),
        ("![[Old]]", "![[New]]"),
        ("[[Old.md]]", "[[New.md]]"),
        ("[[old#^block]]", "[[New#^block]]"),
        ("| [[Old\\|cell]] |", "| [[New\\|cell]] |"),
        ("[x](folder/Old.md)", "[x](archive/New.md)"),
        ('[x](folder/Old.md#Part "title")', '[x](archive/New.md#Part "title")'),
        ("[x](<folder/Old.md>)", "[x](<archive/New.md>)"),
        (
            "[[Other]] and [[Old]] and [x](https://e.org/Old.md)",
            "[[Other]] and [[New]] and [x](https://e.org/Old.md)",
        ),
        ("`[[Old]]` but [[Old]]", "`[[Old]]` but [[New]]"),
        ("[[Nowhere]] [[Space Name]]", "[[Nowhere]] [[Space Name]]"),
    ],
)
def test_links_to_the_moved_note_change_and_nothing_else(before: str, after: str) -> None:
    assert rewrite(before)[0] == after


def test_links_in_fenced_code_stay() -> None:
    text = "```\n[[Old]]\n```\n~~~md\n[x](folder/Old.md)\n~~~\n[[Old]]\n"
    new, n = rewrite(text)
    assert new == "```\n[[Old]]\n```\n~~~md\n[x](folder/Old.md)\n~~~\n[[New]]\n" and n == 1


def test_relative_markdown_links_stay_relative() -> None:
    new, n = rewrite("[up](../folder/Old.md) [[../folder/Old]]", source="sub/Source.md")
    assert new == "[up](../archive/New.md) [[archive/New]]" and n == 2


def test_an_ambiguous_new_name_is_written_as_a_path_and_spaces_are_encoded() -> None:
    move = Move("folder/Old.md", "b/Other stuff.md", bare_name_unique=False)
    new, _ = rewrite("[[Old]] [a](folder/Old.md) [b](folder%2FOld.md)", move=move)
    assert new == "[[b/Other stuff]] [a](b/Other%20stuff.md) [b](b/Other%20stuff.md)"


def test_edits() -> None:
    note = "---\ntags: [x]\n---\n# T\n\nbody\n\n## A\n\none\n\n## B\n\ntwo\n"
    assert append(note, "end") == note + "\nend\n"
    assert prepend(note, "first").startswith("---\ntags: [x]\n---\nfirst\n\n# T")
    assert prepend("plain\n", "first") == "first\n\nplain\n"
    replaced = replace_section(note, "A", "uno")
    assert replaced.endswith("## A\nuno\n\n## B\n\ntwo\n")
    assert replace_section(note, "T > B", "dos").endswith("## B\ndos\n")
    with pytest.raises(QueryError, match="no heading 'C'; its headings: 'T', 'A', 'B'"):
        replace_section(note, "C", "x")
    assert find_replace(note, "one", "1", expected=1).count("1") == 1
    with pytest.raises(QueryError, match="occurs 2 times, not 1"):
        find_replace("a a", "a", "b", expected=1)
    with pytest.raises(QueryError, match="does not occur"):
        find_replace("a", "z", "b")


def test_a_heading_in_code_is_not_a_section() -> None:
    note = "# Real\n\n```\n# Fake\n```\ntext\n"
    with pytest.raises(QueryError, match="no heading 'Fake'"):
        replace_section(note, "Fake", "x")


def test_the_moved_note_keeps_its_own_links_working() -> None:
    notes = ["folder/Old.md", "folder/Sibling.md", "Top.md"]
    resolver = LinkResolver((p, ()) for p in notes)
    move = Move("folder/Old.md", "archive/deep/New.md", bare_name_unique=True)
    text = (
        "[s](Sibling.md) [t](../Top.md#H) [[Sibling]] [me](Old.md#Part) [[Old#Part]] "
        "[web](https://x.org/a.md) [abs](/Top.md) [gone](Missing.md)\n"
    )
    rebased, n_rebased = rebase_links(text, move, resolver.resolve)
    own, n_self = rewrite_links(rebased, move.new, move, resolver.resolve)
    assert own == (
        "[s](../../folder/Sibling.md) [t](../../Top.md#H) [[Sibling]] [me](New.md#Part) "
        "[[New#Part]] [web](https://x.org/a.md) [abs](/Top.md) [gone](Missing.md)\n"
    )
    assert (n_rebased, n_self) == (3, 2)
