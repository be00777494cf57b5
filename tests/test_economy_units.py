"""The pure pieces behind lean answers, each on hand-made input: the link map, spec parsing,
schema compaction, argument-error sentences and hit shaping."""

from __future__ import annotations

import networkx as nx
import pytest
from pydantic import BaseModel, Field, ValidationError

from vaultsearch.app.linkmap import (
    BrokenLink,
    backlinks,
    broken_links,
    link_path,
    most_linked,
    orphans,
    outlinks,
)
from vaultsearch.app.navigate import parse_spec
from vaultsearch.app.searchanswer import shape_hit, trim
from vaultsearch.errors import QueryError
from vaultsearch.models import Explain, Hit, Passage
from vaultsearch.server.tools.argerrors import sentence
from vaultsearch.server.tools.lean import compact_schema


def graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for p in ("a.md", "b.md", "c.md", "d.md", "lone.md"):
        g.add_node(p, title=p.upper())
    g.add_edges_from([("a.md", "b.md"), ("c.md", "b.md"), ("c.md", "d.md")])
    g.nodes["a.md"]["unresolved"] = {"Ghost": 2, "Another": 1}
    return g


def test_link_map() -> None:
    g = graph()
    assert outlinks(g, "c.md") == ["b.md", "d.md"] and backlinks(g, "b.md") == ["a.md", "c.md"]
    assert outlinks(g, "missing.md") == [] and backlinks(g, "missing.md") == []
    assert broken_links(g) == [BrokenLink("a.md", "Another", 1), BrokenLink("a.md", "Ghost", 2)]
    assert broken_links(g, "c.md") == []
    assert orphans(g) == ["lone.md"]
    assert most_linked(g) == [("b.md", 2), ("d.md", 1)]
    assert link_path(g, "a.md", "d.md") == ["a.md", "b.md", "c.md", "d.md"]  # against b->c
    assert link_path(g, "a.md", "lone.md") is None and link_path(g, "a.md", "x.md") is None


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("notes/a.md", ("notes/a.md", None, None)),
        ("notes/a.md:12", ("notes/a.md", 12, None)),
        ("notes/a.md:12:5", ("notes/a.md", 12, 5)),
        ("odd:name.md", ("odd:name.md", None, None)),
        ("odd:name.md:3", ("odd:name.md", 3, None)),
    ],
)
def test_specs(spec: str, parsed: tuple[str, int | None, int | None]) -> None:
    assert parse_spec(spec) == parsed


@pytest.mark.parametrize("spec", ["", "  ", "a.md:0", "a.md:4:0"])
def test_bad_specs(spec: str) -> None:
    with pytest.raises(QueryError):
        parse_spec(spec)


def test_compact_schema_keeps_constraints_drops_noise() -> None:
    schema = {
        "title": "searchArguments",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "title": {"title": "Title", "type": "string"},
            "top_k": {"title": "Top K", "default": 10, "minimum": 1, "type": "integer"},
            "after": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}]},
            "flag": {"type": "boolean", "default": False},
            "where": {
                "type": "object",
                "additionalProperties": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            },
            "value": {"anyOf": [{"type": "integer"}, {"type": "number"}, {"type": "null"}]},
        },
        "required": ["top_k"],
    }
    assert compact_schema(schema) == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "title": {"type": "string"},  # an argument named title stays
            "top_k": {"default": 10, "minimum": 1, "type": "integer"},
            "after": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "flag": {"type": "boolean"},
            "where": {"type": "object"},
            "value": {"type": ["number"]},
        },
        "required": ["top_k"],
    }


class Args(BaseModel):
    query: str
    top_k: int = Field(default=10, ge=1)
    mode: str = Field(default="hybrid", pattern="^(hybrid|keyword)$")


def refusal(**data: object) -> str:
    with pytest.raises(ValidationError) as caught:
        Args.model_validate(data)
    return sentence("search", caught.value)


def test_argument_errors_are_one_sentence() -> None:
    assert refusal(query="x", top_k=0) == "top_k should be greater than or equal to 1 (got 0)."
    assert refusal() == "search needs the argument query."
    assert refusal(query="x", top_k="many") == (
        "top_k should be a valid integer, unable to parse string as an integer (got 'many')."
    )
    both = refusal(top_k=0)
    assert both.count(";") == 1 and both.endswith(".") and "\n" not in both


def hit(**extra: object) -> Hit:
    fields: dict[str, object] = {
        "path": "a.md",
        "title": "A",
        "heading_path": "",
        "start_line": 2,
        "end_line": 3,
        "snippet": "alpha beta gamma delta",
        "score": 1.0,
        "chunk_id": 7,
        "highlights": ((0, 5), (17, 22)),
    }
    return Hit(**{**fields, **extra})  # type: ignore[arg-type]


def test_trim_cuts_at_a_word_and_keeps_fitting_highlights() -> None:
    assert trim("alpha beta gamma delta", [(0, 5), (17, 22)], 13) == ("alpha beta…", [[0, 5]])
    assert trim("short", [(0, 5)], 300) == ("short", [[0, 5]])


def test_shape_hit() -> None:
    lines = ["# A", "alpha beta", "gamma delta", "", "## B", "more words here"]
    plain = shape_hit(hit(), lines)
    assert plain["chunk_id"] == 7 and plain["uri"] == "note://a.md"
    assert "heading_path" not in plain and "passages" not in plain and "text" not in plain
    full = shape_hit(hit(), lines, full_text=True)
    assert full["text"] == "alpha beta\ngamma delta" and "snippet" not in full
    more = Explain("rrf", more=(Passage("B", 5, 6),))
    extra = shape_hit(hit(explain=more), lines, chunks=2, snippet_chars=9)
    assert extra["passages"] == [
        {"start_line": 5, "end_line": 6, "heading_path": "B", "snippet": "## B more…"}
    ]
    assert "explain" not in extra and shape_hit(hit(explain=more), lines, explain=True)["explain"]
