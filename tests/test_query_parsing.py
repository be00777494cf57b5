"""Any text a user types parses; the operators do what they say."""

from __future__ import annotations

import pytest

from vaultsearch.search.query import parse_query


def test_operators() -> None:
    q = parse_query('install "exact phrase here" -windows tag:project/alpha path:notes/ linux')
    assert q.terms == ("install", "linux")
    assert q.phrases == (("exact", "phrase", "here"),)
    assert q.excluded == ("windows",)
    assert q.tags == ("project/alpha",)
    assert q.paths == ("notes/",)
    assert q.text == "install exact phrase here linux"


def test_quoted_operator_values_keep_their_spaces() -> None:
    q = parse_query('budget path:"Team Notes" Tag:"#project/big plans" -"old draft"')
    assert q.paths == ("Team Notes",)
    assert q.tags == ("project/big plans",)
    assert q.terms == ("budget",) and q.excluded == ("old", "draft")
    assert parse_query('path:"" x').paths == ()


@pytest.mark.parametrize(
    "text",
    [
        "C++",
        '"',
        "a:b",
        "(",
        "*",
        "-",
        "--",
        "foo AND OR NOT",
        "[[x]]",
        '"unbalanced',
        "tag:",
        "~!@#$%^&*()",
        "title:x^3",
        "\\",
        "{}",
        "",
    ],
)
def test_hostile_text_never_raises(text: str) -> None:
    parse_query(text)


def test_cpp_keeps_the_word() -> None:
    assert parse_query("C++ templates").terms == ("C", "templates")


def test_negated_phrase_is_excluded() -> None:
    assert parse_query('cats -"big dogs"').excluded == ("big", "dogs")
