"""The wikilink graph: notes as nodes, real links and embeds as edges.

Edges come only from links written in notes. The peer whose graph was mostly
automatic same-folder edges boosted noise; here a neighbour is a note the author
chose to connect.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import networkx as nx

from vaultsearch.store.atomic import atomic_write_json
from vaultsearch.store.catalog import LinkRow, NoteRow


def build_graph(notes: Iterable[NoteRow], links: Iterable[LinkRow]) -> nx.DiGraph:
    """Pure construction from catalog rows: ``update_graph`` from an empty graph, so a
    graph built whole and one updated in place cannot drift apart."""
    g = nx.DiGraph()
    update_graph(g, (), notes, links)
    return g


def graph_data(g: nx.DiGraph) -> dict[str, Any]:
    """Nodes by path and edges by (source, target) whatever order they were added in, so
    a graph updated in place saves the same JSON as one built whole."""
    data: dict[str, Any] = nx.node_link_data(g, edges="edges")
    data["nodes"].sort(key=lambda n: n["id"])
    data["edges"].sort(key=lambda e: (e["source"], e["target"]))
    return data


def update_graph(
    g: nx.DiGraph,
    gone: Iterable[str],
    notes: Iterable[NoteRow],
    links: Iterable[LinkRow],
) -> None:
    """Bring ``g`` level with the catalog after a change: ``gone`` are paths no note has
    now, ``notes`` the notes whose node or outgoing links may have changed (new, edited,
    moved, or whose links now resolve elsewhere) and ``links`` all their links. The
    result equals ``build_graph`` over the whole catalog (``GraphPart.check`` compares)."""
    g.remove_nodes_from([p for p in gone if p in g])
    by_id: dict[int, str] = {}
    changed = sorted(notes, key=lambda n: n.path)
    for n in changed:
        by_id[n.id] = n.path
        if n.path in g:
            g.remove_edges_from(list(g.out_edges(n.path)))
            g.nodes[n.path].clear()
        g.add_node(n.path, title=n.title, tags=list(n.tags), aliases=list(n.aliases))
    edges: Counter[tuple[str, str]] = Counter()
    embeds: Counter[tuple[str, str]] = Counter()
    unresolved: dict[str, Counter[str]] = {}
    for link in links:
        source = by_id.get(link.source_id)
        if source is None:
            continue
        if link.target_path is None or link.target_path not in g:
            unresolved.setdefault(source, Counter())[link.target] += 1
            continue
        if link.target_path == source:
            continue
        edges[(source, link.target_path)] += 1
        if link.embed:
            embeds[(source, link.target_path)] += 1
    for (a, b), count in sorted(edges.items()):
        g.add_edge(a, b, count=count, embeds=embeds.get((a, b), 0))
    for source, targets in sorted(unresolved.items()):
        g.nodes[source]["unresolved"] = dict(sorted(targets.items()))
    g.graph["unresolved_links"] = sum(
        sum(attrs.get("unresolved", {}).values()) for _, attrs in g.nodes(data=True)
    )


def save_graph(g: nx.DiGraph, path: Path) -> None:
    atomic_write_json(path, graph_data(g))


def load_graph(path: Path) -> nx.DiGraph:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    g = nx.node_link_graph(data, directed=True, edges="edges")
    assert isinstance(g, nx.DiGraph)
    return g


def neighbours(g: nx.DiGraph, path: str) -> list[str]:
    """Outlinks and backlinks, each once, in a stable order."""
    if path not in g:
        return []
    return sorted(set(g.successors(path)) | set(g.predecessors(path)))
