"""The wikilink graph as a derived index: an update changes the nodes and outgoing
edges of the notes the run touched, and of the notes whose links now resolve elsewhere
(``catalog.graph_sources``, filled by the link resolution); a new generation builds it
whole. The file is still written whole (node-link JSON) on every commit."""

from __future__ import annotations

import json
from typing import Any

import networkx as nx

from vaultsearch.store.catalog import Catalog
from vaultsearch.store.derived.base import Batch, DerivedSettings
from vaultsearch.store.graph import build_graph, graph_data, load_graph, save_graph, update_graph
from vaultsearch.store.layout import Generation
from vaultsearch.store.manifest import file_crc32


class GraphPart:
    name = "graph"

    def __init__(self, generation: Generation, settings: DerivedSettings) -> None:
        self.path = generation.graph
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
        rolled back), and the generation's graph is that generation's."""
        return False

    def apply(self, batch: Batch) -> None:
        self.touched.update(batch.changed_paths)

    def commit(self, catalog: Catalog) -> dict[str, Any]:
        sources, catalog.graph_sources = catalog.graph_sources, set()
        if self.graph is None:
            graph = build_graph(catalog.notes(), catalog.links())
        else:
            graph = self.graph
            present = catalog.paths_present(self.touched)
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

    def reader(self) -> Any:
        return load_graph(self.path) if self.path.is_file() else nx.DiGraph()
