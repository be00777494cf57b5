"""A reader's graph (``graph_of``: edges naming their notes by the nodes' own strings,
equal edge attributes in one shared dict) is the graph networkx reads from the same
file, and stays so when a delta is applied to it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import networkx as nx

from vaultsearch.store.catalog import LinkRow, NoteRow
from vaultsearch.store.graph import (
    FILE_FORMAT,
    READ_KEYS,
    apply_records,
    build_graph,
    graph_data,
    graph_of,
    load_graph,
    node_records,
    reader_records,
    save_graph,
)


def _note(i: int, path: str, tags: list[str]) -> NoteRow:
    return NoteRow(i, path, "h", 0, 0, path[:-3].title(), [], tags, {}, 0.0, [], [])


def _link(source: int, target: str | None, embed: bool = False) -> LinkRow:
    return LinkRow(source, target or "nowhere", target, embed, None, None, None, "wiki", 1)


NOTES = [_note(i + 1, f"{p}.md", ["t"] if i % 2 else []) for i, p in enumerate("abcdef")]
LINKS = [
    _link(1, "b.md"), _link(1, "c.md"), _link(1, "c.md"), _link(2, "c.md", embed=True),
    _link(3, "a.md"), _link(4, "a.md"), _link(4, "missing.md"), _link(5, None),
    _link(6, "f.md"), _link(6, "e.md"), _link(2, "a.md"),
]  # fmt: skip


def _saved(g: nx.DiGraph) -> dict[str, Any]:
    return json.loads(json.dumps(graph_data(g)))


def _shape(g: nx.DiGraph) -> tuple[object, ...]:
    return (
        dict(g.graph),
        list(g.nodes(data=True)),
        [(a, list(nbrs.items())) for a, nbrs in g._succ.items()],
        [(b, list(nbrs.items())) for b, nbrs in g._pred.items()],
    )


def test_a_reader_graph_is_the_graph_networkx_reads() -> None:
    data = _saved(build_graph(NOTES, LINKS))
    ours, theirs = (
        graph_of(json.loads(json.dumps(data))),
        nx.node_link_graph(json.loads(json.dumps(data)), directed=True, edges="edges"),
    )
    assert _shape(ours) == _shape(theirs)
    assert graph_data(ours) == graph_data(theirs)
    keys = {id(p) for p in ours._node}
    assert all(id(b) in keys for nbrs in ours._succ.values() for b in nbrs)
    assert all(id(a) in keys for nbrs in ours._pred.values() for a in nbrs)


def test_a_delta_applied_to_a_reader_graph_changes_only_its_notes_edges() -> None:
    """Edges share attribute dicts: a record that changes one edge's count must leave
    every other edge with the same attributes as it was."""
    g = graph_of(_saved(build_graph(NOTES, LINKS)))
    assert g.edges["c.md", "a.md"] is g.edges["d.md", "a.md"]  # shared (count 1, no embed)
    changed = [*LINKS, _link(3, "a.md"), _link(3, "b.md")]
    records = node_records([NOTES[2]], changed, {n.path for n in NOTES}.__contains__)
    apply_records(g, records)
    expected = build_graph(NOTES, changed)
    assert graph_data(g) == graph_data(expected)
    assert g.edges["c.md", "a.md"]["count"] == 2 and g.edges["d.md", "a.md"]["count"] == 1


def test_a_reader_keeps_of_a_node_only_what_its_tools_look_up() -> None:
    """Tags and aliases (the catalog's, in a reader's note maps) are left out of a
    reader's graph, read whole or with a delta applied; titles, unresolved links and
    edges are as networkx reads them."""
    data = _saved(build_graph(NOTES, LINKS))
    full, slim = graph_of(json.loads(json.dumps(data))), graph_of(data, READ_KEYS)
    changed = [*LINKS, _link(3, "b.md"), _link(3, "gone.md")]
    records = node_records([NOTES[2]], changed, {n.path for n in NOTES}.__contains__)
    for step in range(2):
        assert any(d.get("tags") for _, d in full.nodes(data=True))
        assert all(set(d) <= READ_KEYS for _, d in slim.nodes(data=True))
        kept = {n: {k: v for k, v in d.items() if k in READ_KEYS} for n, d in full.nodes(data=True)}
        assert dict(slim.nodes(data=True)) == kept
        assert sorted(slim.edges(data=True)) == sorted(full.edges(data=True))
        if step == 0:
            apply_records(full, records)
            apply_records(slim, reader_records(records))


def test_graph_json_names_each_note_once_and_reads_back_as_the_graph_saved(
    tmp_path: Path,
) -> None:
    """The file (``FILE_FORMAT``) gives edges by the place of their notes in ``nodes``
    and leaves empty tags and aliases out; read whole or as a reader keeps it, it is the
    graph networkx reads from the node-link data of the same graph."""
    g = build_graph(NOTES, LINKS)
    path = tmp_path / "graph.json"
    save_graph(g, path)
    text = path.read_text(encoding="utf-8")
    assert json.loads(text)["format"] == FILE_FORMAT
    assert all(text.count(f'"{n.path}"') == 1 for n in NOTES)
    assert '"aliases":[]' not in text and '"tags":[]' not in text
    node_link = _saved(g)
    theirs = nx.node_link_graph(node_link, directed=True, edges="edges")
    assert graph_data(load_graph(path)) == graph_data(theirs) == graph_data(g)
    assert _shape(graph_of(json.loads(text))) == _shape(theirs)
    slim, old_slim = graph_of(json.loads(text), READ_KEYS), graph_of(node_link, READ_KEYS)
    assert _shape(slim) == _shape(old_slim)


def test_an_older_index_node_link_graph_json_is_read_as_before(tmp_path: Path) -> None:
    """A base written before ``FILE_FORMAT`` (node-link JSON, every edge naming both
    paths) is read into the same graph: an existing index needs no rebuild."""
    g = build_graph(NOTES, LINKS)
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(_saved(g), sort_keys=True), encoding="utf-8")
    assert "format" not in json.loads(path.read_text(encoding="utf-8"))
    assert graph_data(load_graph(path)) == graph_data(g)
