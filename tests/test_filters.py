"""Filter predicates, pure."""

from __future__ import annotations

import pytest

from vaultsearch.errors import QueryError
from vaultsearch.search.filters import (
    NoteMeta,
    Scope,
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


# --- scope: sources, kinds, path prefixes, exact files ---------------------------------
def _meta(path: str, source: str = "", kind: str = "note") -> NoteMeta:
    return NoteMeta(1, path, "t", (), {}, 0.0, source, kind)


@pytest.mark.parametrize(
    ("scope", "note", "expected"),
    [
        ({"sources": ["lib"]}, _meta("lib:a.py", "lib", "code"), True),
        ({"sources": ["vault"]}, _meta("a.md"), True),
        ({"sources": ["vault"]}, _meta("lib:a.md", "lib"), False),
        ({"sources": ["lib", "docs"], "kinds": ["code"]}, _meta("docs:a.md", "docs"), False),
        ({"kinds": ["code", "text"]}, _meta("lib:a.txt", "lib", "text"), True),
        ({"prefixes": ["src/"]}, _meta("lib:src/a.py", "lib"), True),
        ({"prefixes": ["lib:src"]}, _meta("lib:src/a.py", "lib"), True),
        ({"prefixes": ["src/"]}, _meta("lib:tests/src/a.py", "lib"), False),
        ({"files": ["a.py", "b.py"]}, _meta("lib:b.py", "lib"), True),
        ({"files": ["lib:b.py"], "sources": ["docs"]}, _meta("lib:b.py", "lib"), False),
    ],
)
def test_scope_is_or_within_a_filter_and_between_filters(
    scope: dict[str, list[str]], note: NoteMeta, expected: bool
) -> None:
    built = Scope.build(**scope)
    assert built.restricts
    assert built.accepts(note) is expected
    assert SearchFilters.build(scope=built).accepts(note) is expected


def test_scope_refuses_unknown_kinds_and_sources() -> None:
    with pytest.raises(QueryError, match="kinds are: note, code, pdf, text"):
        Scope.build(kinds=["image"])
    with pytest.raises(QueryError, match="no source 'x'; sources: lib, vault"):
        Scope.build(sources=["x"], known_sources=["lib"])
    with pytest.raises(QueryError, match="not one string"):
        Scope.build(sources="lib")  # type: ignore[arg-type]
    assert not Scope.build().restricts
