"""The wikilink graph as a derived index: an update changes the nodes and outgoing
edges of the notes the run touched, and of the notes whose links now resolve elsewhere
(``catalog.graph_sources``, filled by the link resolution); a new generation builds it
whole. The file is still written whole (node-link JSON) on every commit.

A search reads it as a boost: a fused note lends a share of its score to the notes it
links with (``LinkGraph.neighbours``)."""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path
from typing import Any

import networkx as nx

from vaultsearch.store.catalog import Catalog
from vaultsearch.store.derived.base import Batch, DerivedSettings, Role
from vaultsearch.store.graph import (
    build_graph,
    graph_data,
    load_graph,
    neighbours,
    save_graph,
    update_graph,
)
from vaultsearch.store.layout import Generation
from vaultsearch.store.manifest import file_crc32


class GraphPart:
    name = "graph"
    role: Role = "boost"
    branch = ""
    modes = frozenset({"hybrid", "semantic"})
    """Keyword mode takes no graph boost (``FusionSettings.from_config``)."""
    label = "the link graph"
    count_key: str | None = None
    completes = False
    analyses = False

    def __init__(self, generation: Generation, settings: DerivedSettings) -> None:
        self.path = self.location(generation)
        self.graph: nx.DiGraph | None = None
        self.touched: set[str] = set()

    def open(self, fresh: bool) -> None:
        if fresh or not self.path.is_file():
            self.graph = None
            return
        try:
            self.graph = load_graph(self.path)
        except Exception as exc:
            raise ValueError(f"graph: unreadable ({type(exc).__name__})") from exc

    def level_with(self, catalog: Catalog) -> bool:
        """A crashed run left the catalog as it was published (its one transaction
        rolled back), and the generation's graph is that generation's; a graph whose
        notes are not the catalog's (a generation's files that another run left) is
        built whole at the commit."""
        if self.graph is None or set(self.graph.nodes) == set(catalog.note_sources()):
            return False
        self.graph = None
        return True

    def apply(self, batch: Batch) -> None:
        self.touched.update(batch.changed_paths)

    def commit(self, catalog: Catalog) -> dict[str, Any]:
        sources, catalog.graph_sources = catalog.graph_sources, set()
        if self.graph is None:
            graph = build_graph(catalog.notes(), catalog.links())
        else:
            graph = self.graph
            present = catalog.paths_present(self.touched)
            sources |= {n.id for p in present if (n := catalog.note_by_path(p)) is not None}
            update_graph(
                graph,
                self.touched - present,
                catalog.notes_by_ids(sources),
                catalog.links_of(sources),
            )
        self.touched = set()
        save_graph(graph, self.path)
        return {
            "graph_crc32": file_crc32(self.path),
            "links": graph.number_of_edges(),
            "unresolved_links": int(graph.graph.get("unresolved_links", 0)),
        }

    def check(self, catalog: Catalog, recorded: dict[str, Any]) -> list[str]:
        try:
            stored = json.loads(self.path.read_text(encoding="utf-8"))
            load_graph(self.path)
        except Exception as exc:
            return [f"graph: unreadable ({type(exc).__name__}: {str(exc)[:120]})"]
        built = graph_data(build_graph(catalog.notes(), catalog.links()))
        if stored != json.loads(json.dumps(built, ensure_ascii=False)):
            return ["graph: differs from the notes and links in the catalog"]
        return []

    def damage(self, state: dict[str, Any]) -> str | None:
        if not self.path.is_file():
            return "graph.json is missing" if state.get("links") else None
        crc = state.get("graph_crc32")
        if crc is not None and crc != file_crc32(self.path):
            return "graph.json differs from the checksum the writer recorded"
        return None

    def reader(self) -> LinkGraph:
        return LinkGraph(load_graph(self.path) if self.path.is_file() else nx.DiGraph())

    @classmethod
    def empty(cls, settings: DerivedSettings) -> LinkGraph:
        return LinkGraph(nx.DiGraph())

    @staticmethod
    def location(generation: Generation) -> Path:
        return generation.root / "graph.json"

    @classmethod
    def written(cls, generation: Generation) -> bool:
        return cls.location(generation).is_file()

    @classmethod
    def carry(cls, source: Generation, target: Generation) -> None:
        if cls.location(source).is_file():
            shutil.copyfile(cls.location(source), cls.location(target))

    @staticmethod
    def status(reader: Any) -> dict[str, int]:
        return {
            "graph_edges": len(reader),
            "unresolved_links": int(reader.graph.graph.get("unresolved_links", 0)),
        }


class LinkGraph:
    """The graph as a search reads it; ``graph`` for the tools that walk it."""

    def __init__(self, graph: nx.DiGraph) -> None:
        self.graph = graph

    @functools.cached_property
    def _edges(self) -> int:
        """Counted once: networkx counts edges by walking every node (19 ms at 26k notes)."""
        return int(self.graph.number_of_edges())

    def __len__(self) -> int:
        return self._edges

    def neighbours(self, path: str) -> list[str]:
        return neighbours(self.graph, path)
