"""The wikilink graph as a derived index: rebuilt whole from the catalog on commit."""

from __future__ import annotations

import json
from typing import Any

import networkx as nx

from vaultsearch.store.catalog import Catalog
from vaultsearch.store.derived.base import Batch, DerivedSettings
from vaultsearch.store.graph import build_graph, graph_data, load_graph, save_graph
from vaultsearch.store.layout import Generation
from vaultsearch.store.manifest import file_crc32


class GraphPart:
    name = "graph"

    def __init__(self, generation: Generation, settings: DerivedSettings) -> None:
        self.path = generation.graph

    def open(self, fresh: bool) -> None:
        """Built whole on every commit (it is small), so nothing needs reading."""

    def level_with(self, catalog: Catalog) -> bool:
        return False

    def apply(self, batch: Batch) -> None:
        pass

    def commit(self, catalog: Catalog) -> dict[str, Any]:
        graph = build_graph(catalog.notes(), catalog.links())
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
