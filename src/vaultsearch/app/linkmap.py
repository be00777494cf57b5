"""Questions about the vault's link graph as a whole: broken links, orphans, hubs, paths.

Pure functions over the wikilink graph the index keeps (``store.graph``: notes as
nodes, written links as edges, unresolved targets on their source node), so the MCP
``links`` tool and ``vaultsearch links`` give the same answers and each can be tested
on a hand-made graph.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # the CLI lists the questions without loading the graph stack
    import networkx as nx

LinkQuery = Literal["backlinks", "outlinks", "broken", "orphans", "most_linked", "path"]
LINK_QUERIES: tuple[str, ...] = LinkQuery.__args__  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class BrokenLink:
    path: str
    """The note the link is written in."""
    target: str
    """The link target as written, which names no note."""
    count: int


def title(g: nx.DiGraph, path: str) -> str:
    return str(g.nodes[path].get("title", path)) if path in g else path


def outlinks(g: nx.DiGraph, path: str) -> list[str]:
    return sorted(g.successors(path)) if path in g else []


def backlinks(g: nx.DiGraph, path: str) -> list[str]:
    return sorted(g.predecessors(path)) if path in g else []


def broken_links(g: nx.DiGraph, path: str | None = None) -> list[BrokenLink]:
    """Links whose target matches no note, by note then target; one note's or all."""
    paths = [path] if path is not None else list(g.nodes)
    return [
        BrokenLink(p, target, int(count))
        for p in sorted(x for x in paths if x in g)
        for target, count in sorted(g.nodes[p].get("unresolved", {}).items())
    ]


def orphans(g: nx.DiGraph) -> list[str]:
    """Notes no other note links to and that link to none: nothing leads to them."""
    return sorted(p for p in g.nodes if g.degree(p) == 0)


def most_linked(g: nx.DiGraph) -> list[tuple[str, int]]:
    """(note, notes linking to it), most first: the hubs of the vault."""
    counts = ((p, g.in_degree(p)) for p in g.nodes)
    return sorted(((p, n) for p, n in counts if n), key=lambda pn: (-pn[1], pn[0]))


def link_path(g: nx.DiGraph, source: str, target: str) -> list[str] | None:
    """The fewest link hops from one note to another, following links either way (a
    backlink connects two notes as much as an outlink does); None when unconnected."""
    import networkx as nx

    if source not in g or target not in g:
        return None
    try:
        path: list[str] = nx.shortest_path(g.to_undirected(as_view=True), source, target)
    except nx.NetworkXNoPath:
        return None
    return path
