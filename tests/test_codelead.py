"""A code file's hit is named by a definition, not by its module's own lines, when both
were retrieved (``search/codelead.py``); the whole-index check is in test_mixed_code."""

from __future__ import annotations

from vaultsearch.search.codelead import definition_first
from vaultsearch.store.catalog import ChunkRow


def row(cid: int, node_type: str, name: str) -> ChunkRow:
    return ChunkRow(cid, 1, cid, (), cid, cid, 0, 1, "x", "h", name, node_type)


def test_a_definition_leads_over_the_module_lines() -> None:
    rows = [row(1, "module", "m"), row(2, "class_definition", "m.C"), row(3, "module", "m")]
    assert [r.id for r in definition_first(rows)] == [2, 1, 3]


def test_other_orders_are_kept() -> None:
    defs = [row(2, "function_definition", "m.f"), row(1, "module", "m")]
    assert definition_first(defs) == defs  # a definition leads already
    only = [row(1, "module", "m"), row(3, "module", "m")]
    assert definition_first(only) == only  # nothing but module lines was retrieved
    prose = [row(1, "", ""), row(2, "", "")]
    assert definition_first(prose) == prose  # a Markdown note's chunks have no node type
    assert definition_first([]) == []
