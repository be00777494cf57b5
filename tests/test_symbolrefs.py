"""The reference gift: a docs passage naming a definition in backticks lifts its code file."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import pytest

from vaultsearch.models import BranchPart, Explain
from vaultsearch.search.filters import NoteMeta
from vaultsearch.search.ranking import Candidate, FusionSettings, fuse
from vaultsearch.search.symbolrefs import (
    defined_names,
    dotted_tails,
    named_symbols,
    reference_gifts,
)

ON = FusionSettings(ref_weight=0.2, ref_top=5)


@dataclass
class View:
    notes: dict[int, NoteMeta]
    note_of_chunk: dict[int, int] = field(default_factory=dict)
    note_by_path: dict[str, int] = field(default_factory=dict)

    def first_chunks(self, note_id: int) -> list[int]:
        return [c for c, n in self.note_of_chunk.items() if n == note_id][:1]


def _meta(nid: int, path: str, kind: str, source: str = "") -> NoteMeta:
    return NoteMeta(nid, path, path, (), {}, 0.0, source=source, kind=kind)


def _candidate(nid: int, fused: float) -> Candidate:
    part = BranchPart("keyword", nid * 10, 1, fused, fused, 1.0, fused)
    return Candidate(nid, [nid * 10], fused, explain=Explain("convex", (part,)))


VIEW = View(
    {
        1: _meta(1, "MCP.md", "note"),
        2: _meta(2, "src:linkmap.py", "code", "src"),
        3: _meta(3, "src:navigate.py", "code", "src"),
        4: _meta(4, "src:catalog.py", "code", "src"),
    }
)
DEFINITIONS = [
    (2, "vaultsearch.app.linkmap.orphans"),
    (2, "vaultsearch.app.linkmap.links"),
    (3, "vaultsearch.app.navigate.links"),
    (4, "vaultsearch.store.catalog.Catalog.links"),
]
PASSAGE = "`kind` (`links`, `orphans`, `--json`): `orphans`, notes with no link in or out"


def _gifts(ranked: list[Candidate], passage: str = PASSAGE, settings: FusionSettings = ON):
    def definitions(note_ids: list[int]) -> Iterable[tuple[int, str]]:
        return [d for d in DEFINITIONS if d[0] in note_ids]

    def passages(c: Candidate) -> list[str]:
        return [passage] if VIEW.notes[c.note_id].kind != "code" else ["`orphans`"]

    known: dict[int, frozenset[str]] = {}
    return reference_gifts(
        ranked, VIEW, lambda ids: defined_names(ids, known, definitions), passages, settings
    )


def test_named_symbols_are_names_in_inline_code() -> None:
    text = "`orphans` and `Browser.find()`, not `--json`, `a b` or `x = 1`; `orphans` again"
    assert named_symbols(text) == ["orphans", "Browser.find"]


def test_a_definition_is_found_by_every_dotted_tail() -> None:
    assert dotted_tails("vaultsearch.app.browse.Browser.find") == [
        "find",
        "Browser.find",
        "browse.Browser.find",
        "app.browse.Browser.find",
        "vaultsearch.app.browse.Browser.find",
    ]


def test_defined_names_are_read_once_per_note() -> None:
    reads: list[list[int]] = []

    def definitions(note_ids: list[int]) -> list[tuple[int, str]]:
        reads.append(note_ids)
        return [d for d in DEFINITIONS if d[0] in note_ids]

    known: dict[int, frozenset[str]] = {}
    first = defined_names([2, 3], known, definitions)
    assert "orphans" in first[2] and "linkmap.orphans" in first[2] and "orphans" not in first[3]
    assert defined_names([3, 4, 9], known, definitions)[9] == frozenset()
    assert reads == [[2, 3], [4, 9]]


def test_a_name_one_ranked_file_defines_gets_the_gift() -> None:
    ranked = [_candidate(1, 0.8), _candidate(3, 0.7), _candidate(4, 0.6), _candidate(2, 0.5)]
    gifts = _gifts(ranked)
    # `links` is defined in three ranked files: it points nowhere; `orphans` in one
    assert gifts == {2: (pytest.approx(0.2 * 0.8), "MCP.md")}


def test_no_gift_from_code_beyond_the_top_or_when_off() -> None:
    code_first = [_candidate(3, 0.9), _candidate(2, 0.5)]
    assert _gifts(code_first) == {}  # a code file's own text is no reference
    far = [_candidate(3, 0.9), _candidate(4, 0.8), _candidate(1, 0.7), _candidate(2, 0.5)]
    assert _gifts(far, settings=FusionSettings(ref_weight=0.2, ref_top=2)) == {}
    assert _gifts(far, settings=FusionSettings(ref_weight=0.0, ref_top=5)) == {}
    assert _gifts([_candidate(1, 0.8)]) == {}  # no code ranked: nothing to give to


def test_fuse_takes_the_reference_gift_across_sources() -> None:
    # a link gift may not lift a note over another source's better note; a reference
    # gift crosses sources by design and does lift the code file over the page
    view = View(
        {1: _meta(1, "MCP.md", "note"), 2: _meta(2, "src:linkmap.py", "code", "src")},
        note_of_chunk={10: 1, 20: 2},
    )
    branches = {"keyword": [(10, 2.0), (20, 1.8)]}
    plain = fuse(branches, view, FusionSettings(), 0.0)
    assert [c.note_id for c in plain] == [1, 2]
    gift = {2: (0.5, "MCP.md")}
    lifted = fuse(branches, view, FusionSettings(), 0.0, refs=gift)
    assert [c.note_id for c in lifted] == [2, 1]
    assert lifted[0].explain.graph_from == "MCP.md"
    assert lifted[0].explain.total == pytest.approx(lifted[0].score)
    # a note no branch scored takes no reference gift (a name alone brings no file in)
    assert [c.note_id for c in fuse(branches, view, FusionSettings(), 0.0, refs={3: gift[2]})] == [
        1,
        2,
    ]
