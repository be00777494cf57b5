"""The wikilink graph: notes as nodes, real links and embeds as edges.

Edges come only from links written in notes. The peer whose graph was mostly
automatic same-folder edges boosted noise; here a neighbour is a note the author
chose to connect.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import networkx as nx

from vaultsearch.store.atomic import atomic_write_bytes
from vaultsearch.store.catalog import LinkRow, NoteRow
from vaultsearch.store.graphdelta import Record, delta_path, delta_records, read_listing

__all__ = ["Record", "delta_path"]


READ_KEYS = frozenset({"title", "unresolved", "out"})
"""What a reader keeps of a saved node or a delta record: the tools look up a node's
title and unresolved links (``app/linkmap.py``, ``app/browse.py``) and walk its edges;
its tags and aliases are the catalog's, which a reader has in its note maps. Two empty
lists a note were 112 of the 881 bytes a reader's graph took per note (13,610 notes)."""


def reader_records(records: dict[str, Record]) -> dict[str, Record]:
    """``records`` with only what a reader keeps (``READ_KEYS``)."""
    return {
        p: None if r is None else {k: v for k, v in r.items() if k in READ_KEYS}
        for p, r in records.items()
    }


def build_graph(notes: Iterable[NoteRow], links: Iterable[LinkRow]) -> nx.DiGraph:
    """Pure construction from catalog rows: the records of every note applied to an
    empty graph, the same code an update and a reader of a delta run."""
    notes = list(notes)
    paths = {n.path for n in notes}
    g = nx.DiGraph()
    apply_records(g, node_records(notes, links, paths.__contains__))
    return g


def graph_data(g: nx.DiGraph) -> dict[str, Any]:
    """Nodes by path and edges by (source, target) whatever order they were added in, so
    a graph updated in place saves the same JSON as one built whole."""
    data: dict[str, Any] = nx.node_link_data(g, edges="edges")
    data["nodes"].sort(key=lambda n: n["id"])
    data["edges"].sort(key=lambda e: (e["source"], e["target"]))
    return data


def node_records(
    notes: Iterable[NoteRow], links: Iterable[LinkRow], exists: Callable[[str], bool]
) -> dict[str, Record]:
    """The records of ``notes`` from all their ``links``; ``exists`` says whether a path
    is a note of the vault once the change is in."""
    by_id: dict[int, str] = {}
    records: dict[str, dict[str, Any]] = {}
    for n in sorted(notes, key=lambda n: n.path):
        by_id[n.id] = n.path
        records[n.path] = {"title": n.title, "tags": list(n.tags), "aliases": list(n.aliases)}
    edges: Counter[tuple[str, str]] = Counter()
    embeds: Counter[tuple[str, str]] = Counter()
    unresolved: dict[str, Counter[str]] = {}
    for link in links:
        source = by_id.get(link.source_id)
        if source is None:
            continue
        if link.target_path is None or not exists(link.target_path):
            unresolved.setdefault(source, Counter())[link.target] += 1
            continue
        if link.target_path == source:
            continue
        edges[(source, link.target_path)] += 1
        if link.embed:
            embeds[(source, link.target_path)] += 1
    for (a, b), count in sorted(edges.items()):
        records[a].setdefault("out", []).append([b, count, embeds.get((a, b), 0)])
    for source, targets in unresolved.items():
        records[source]["unresolved"] = dict(sorted(targets.items()))
    return dict(records)


def apply_records(g: nx.DiGraph, records: dict[str, Record]) -> None:
    """Bring ``g`` level with the catalog: every recorded note's node and outgoing edges
    replaced (or the node removed), edges added once every node is in, as a target may
    be a note recorded after its source."""
    _apply(g, records)
    g.graph["unresolved_links"] = sum(
        sum(attrs.get("unresolved", {}).values()) for _, attrs in g.nodes(data=True)
    )


def followed_counted(g: nx.DiGraph, records: dict[str, Record]) -> tuple[nx.DiGraph, int]:
    """``g`` with ``records`` applied, as a new graph that shares with ``g`` the node
    and adjacency dicts the records do not touch: ``g`` stays as it was for a search
    still reading it, and the cost is three dict copies (C speed) and the touched
    nodes, not a rebuild of every node and edge. With it, how many edges it has more
    than ``g``: only the touched nodes' out-edges change, and counting every node's
    again was 11 ms of a followed edit at a million chunks (226k nodes).

    ``.copy()``, not ``dict()``: CPython 3.11's ``dict(d)`` clones the table only when
    ``d`` has no deleted slot at all, so after a note was removed each copy inserted
    every key again (28 ms against 4 ms for 299k keys); ``d.copy()`` clones while at
    least two thirds of the slots are live."""
    new = nx.DiGraph()
    new.graph.update(g.graph)
    new._node = g._node.copy()
    new._succ = new._adj = g._succ.copy()
    new._pred = g._pred.copy()
    touched = set(records)
    for path, r in records.items():
        if path in g:
            touched.update(g._succ[path], g._pred[path])
        if r is not None:
            touched.update(t for t, _, _ in r.get("out", ()))
    for path in touched & new._node.keys():
        new._node[path] = dict(new._node[path])
        new._succ[path] = dict(new._succ[path])
        new._pred[path] = dict(new._pred[path])
    edges_before = sum(len(g._succ[p]) for p in touched if p in g._succ)
    before = _unresolved(g, records)
    _apply(new, records)
    new.graph["unresolved_links"] = (
        int(g.graph.get("unresolved_links", 0)) - before + _unresolved(new, records)
    )
    return new, sum(len(new._succ[p]) for p in touched if p in new._succ) - edges_before


def _unresolved(g: nx.DiGraph, paths: Iterable[str]) -> int:
    return sum(sum(g.nodes[p].get("unresolved", {}).values()) for p in paths if p in g)


def _apply(g: nx.DiGraph, records: dict[str, Record]) -> None:
    g.remove_nodes_from([p for p, r in records.items() if r is None and p in g])
    kept = sorted(p for p, r in records.items() if r is not None)
    for path in kept:
        if path in g:
            g.remove_edges_from(list(g.out_edges(path)))
            g.nodes[path].clear()
        r = records[path]
        assert r is not None
        attrs: dict[str, Any] = {
            k: r[k] for k in ("title", "tags", "aliases", "unresolved") if k in r
        }
        g.add_node(path, **attrs)
    for path in kept:
        for target, count, embeds in records[path].get("out", ()):  # type: ignore[union-attr]
            if target in g:
                g.add_edge(path, target, count=count, embeds=embeds)


def read_delta(graph_path: Path) -> tuple[dict[str, Any], dict[str, Record]]:
    """(header, records) of the delta beside ``graph_path``, its parts applied in order;
    none when it has none (an index from before deltas)."""
    listing = read_listing(graph_path)
    return listing.base, delta_records(graph_path, listing)


FILE_FORMAT = 2
"""``graph.json``'s ``format``: an edge is ``[source, target, count, embeds]`` with its
notes named by their place in ``nodes``, and a node leaves out empty ``tags`` and
``aliases``. Node-link edges wrote both paths of every edge again: 55 of the 97 bytes a
chunk the file took at a million chunks (299,420 notes, 253,220 edges), against 5. A
file without ``format`` (node-link JSON as networkx writes it) is read as before, and
written in this format by the next base the writer saves."""
_LISTS = ("aliases", "tags")


def file_data(g: nx.DiGraph) -> dict[str, Any]:
    """``graph_data`` as ``graph.json`` holds it (``FILE_FORMAT``)."""
    data = graph_data(g)
    place = {n["id"]: i for i, n in enumerate(data["nodes"])}
    data["nodes"] = [
        {k: v for k, v in n.items() if not (k in _LISTS and v == [])} for n in data["nodes"]
    ]
    data["edges"] = [
        [place[e["source"]], place[e["target"]], e["count"], e["embeds"]] for e in data["edges"]
    ]
    data["format"] = FILE_FORMAT
    return data


def save_graph(g: nx.DiGraph, path: Path) -> None:
    """Compact, so the json module's C encoder writes it (an indented dump runs the pure
    Python one: 1.3 s against 0.4 s for the 13,610 notes of a 45k-chunk index)."""
    _write_compact(path, file_data(g))


def _write_compact(path: Path, value: Any) -> None:
    text = json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    atomic_write_bytes(path, text.encode("utf-8"))


def graph_of(data: dict[str, Any], keys: frozenset[str] | None = None) -> nx.DiGraph:
    """``nx.node_link_graph`` of the saved data (``FILE_FORMAT``, or an older index's
    node-link JSON), held as a reader keeps it for its life: an edge names its notes by
    the node's own path string, not two more copies parsed from the edge's record, and
    edges with the same attributes share one attribute dict (edge data is never changed
    in place: ``_apply`` removes a note's edges and adds new ones). 16.0 -> 10.9 MB for
    the 13,610 notes and 11,510 links of a 45,630-chunk index. ``keys``: the node
    attributes kept (all when None)."""
    g = nx.DiGraph()
    g.graph.update(data.get("graph", {}))
    compact = data.get("format") == FILE_FORMAT
    lists = [k for k in _LISTS if compact and (keys is None or k in keys)]
    for node in data["nodes"]:
        kept = {k: v for k, v in node.items() if k != "id" and (keys is None or k in keys)}
        if lists:
            kept = {**{k: [] for k in lists}, **kept}
        g.add_node(node["id"], **kept)
    path = {p: p for p in g._node}
    places = [path[n["id"]] for n in data["nodes"]] if compact else []
    shared: dict[tuple[tuple[str, Any], ...], dict[str, Any]] = {}
    for edge in data["edges"]:
        if compact:
            a, b = places[edge[0]], places[edge[1]]
            attrs = {"count": edge[2], "embeds": edge[3]}
        else:
            a = path.get(edge["source"]) or _added(g, path, edge["source"])
            b = path.get(edge["target"]) or _added(g, path, edge["target"])
            attrs = {k: v for k, v in edge.items() if k not in ("source", "target")}
        with contextlib.suppress(TypeError):  # an unhashable value: a dict of its own
            attrs = shared.setdefault(tuple(sorted(attrs.items())), attrs)
        g._succ[a][b] = g._pred[b][a] = attrs
    return g


def _added(g: nx.DiGraph, path: dict[str, str], name: str) -> str:
    """A node an edge names that the nodes do not list (not written, but readable)."""
    g.add_node(name)
    path[name] = name
    return name


def load_graph(path: Path) -> nx.DiGraph:
    """The base graph with the delta beside it applied."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    g = graph_of(data)
    _, records = read_delta(path)
    if records:
        apply_records(g, records)
    return g


def neighbours(g: nx.DiGraph, path: str) -> list[str]:
    """Outlinks and backlinks, each once, in a stable order."""
    if path not in g:
        return []
    return sorted(set(g.successors(path)) | set(g.predecessors(path)))
