"""Filter predicates, pure."""

from __future__ import annotations

import pytest

from vaultsearch.errors import QueryError
from vaultsearch.search.filters import (
    NoteMeta,
    SearchFilters,
    folder_matches,
    parse_date,
    tag_matches,
)


def test_tags_are_hierarchical_and_case_insensitive() -> None:
    assert tag_matches("project", ["Project/Alpha"])
    assert tag_matches("#project/alpha", ["project/alpha"])
    assert not tag_matches("project/alpha", ["project"])
    assert not tag_matches("proj", ["project"])


@pytest.mark.parametrize(
    ("spec", "path", "expected"),
    [
        ("work", "a/work/b/note.md", True),
        ("work", "workshop/note.md", False),
        ("/a/work", "a/work/b/note.md", True),
        ("/work", "a/work/note.md", False),
        ("/", "top.md", True),
        ("a/*/b", "a/work/b/note.md", True),
        ("work/*", "work/top.md", False),
        ("work/*", "work/a/b/deep.md", True),
        ("**/b", "a/work/b/c/note.md", True),
        ("a/w?rk", "a/work/note.md", True),
        ("a/work", "z/a/work/n.md", True),
    ],
)
def test_folder_forms(spec: str, path: str, expected: bool) -> None:
    assert folder_matches(spec, path) is expected


def test_where_equality_and_membership() -> None:
    note = NoteMeta(1, "n.md", "N", (), {"status": "Done", "owners": ["ann", "bob"]}, 0.0)
    assert SearchFilters.build(where={"status": "done"}).accepts(note)
    assert SearchFilters.build(where={"status": ["todo", "done"]}).accepts(note)
    assert SearchFilters.build(where={"owners": "bob"}).accepts(note)
    assert not SearchFilters.build(where={"owners": "cat"}).accepts(note)
    assert not SearchFilters.build(where={"missing": "x"}).accepts(note)


def test_dates() -> None:
    day = parse_date("2024-05-01", "after")
    assert day == parse_date("2024-05-01T00:00:00Z", "after")
    note = NoteMeta(1, "n.md", "N", (), {}, day or 0.0)
    assert SearchFilters.build(after="2024-05-01").accepts(note)
    assert not SearchFilters.build(before="2024-05-01").accepts(note)
    with pytest.raises(QueryError, match="not a date"):
        SearchFilters.build(after="last tuesday")
    with pytest.raises(QueryError, match="later than"):
        SearchFilters.build(after="2024-06-01", before="2024-01-01")
