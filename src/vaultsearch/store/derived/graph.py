"""The wikilink graph as a derived index: a base file (``graph.json``, node-link JSON)
that generations share by hard link, and a delta beside it holding the records of the
notes changed since (``store/graph.py``). An update records the notes the run touched
and the notes whose links now resolve elsewhere (``catalog.graph_sources``, filled by
the link resolution) without loading the graph; past a share of the base's notes the
commit writes a new base from the catalog and an empty delta. A new generation builds
the base whole."""

from __future__ import annotations

import json
from typing import Any

import networkx as nx

from vaultsearch.store.catalog import Catalog
from vaultsearch.store.derived.base import Batch, DerivedSettings
from vaultsearch.store.graph import (
    Record,
    build_graph,
    delta_path,
    graph_data,
    load_graph,
    node_records,
    read_delta,
    save_graph,
    write_delta,
)
from vaultsearch.store.layout import Generation
from vaultsearch.store.manifest import file_crc32

COMPACT_MIN = 512
"""A delta of more records than this, and than a tenth of the base's notes, is folded
into a new base."""


class GraphPart:
    name = "graph"

    def __init__(self, generation: Generation, settings: DerivedSettings) -> None:
        self.path = generation.graph
        self.fresh = True
        self.base: dict[str, Any] = {}
        self.delta: dict[str, Record] = {}
        self.touched: set[str] = set()

    def open(self, fresh: bool) -> None:
        self.touched, self.base, self.delta = set(), {}, {}
        self.fresh = fresh or not self.path.is_file()
        if self.fresh:
            return
        try:
            self.base, self.delta = read_delta(self.path)
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
        if not self.fresh:
            notes = catalog.notes_by_ids(sources)
            links = catalog.links_of(sources)
            named = {link.target_path for link in links if link.target_path}
            exists = catalog.paths_present(named) | {n.path for n in notes}
            gone = self.touched - catalog.paths_present(self.touched)
            self.delta.update({p: None for p in gone})
            self.delta.update(node_records(notes, links, exists.__contains__))
        self.touched = set()
        if self.fresh or len(self.delta) > max(COMPACT_MIN, int(self.base.get("nodes", 0)) // 10):
            graph = build_graph(catalog.notes(), catalog.links())
            save_graph(graph, self.path)
            self.base = {"nodes": graph.number_of_nodes(), "crc32": file_crc32(self.path)}
            self.delta, self.fresh = {}, False
        write_delta(self.path, self.base, self.delta)
        edges, unresolved = catalog.graph_counts()
        return {
            "graph_crc32": self.base.get("crc32"),
            "graph_delta_crc32": file_crc32(delta_path(self.path)),
            "links": edges,
            "unresolved_links": unresolved,
        }

    def check(self, catalog: Catalog, recorded: dict[str, Any]) -> list[str]:
        try:
            stored = graph_data(load_graph(self.path))
        except Exception as exc:
            return [f"graph: unreadable ({type(exc).__name__}: {str(exc)[:120]})"]
        built = graph_data(build_graph(catalog.notes(), catalog.links()))
        if json.loads(json.dumps(stored)) != json.loads(json.dumps(built, ensure_ascii=False)):
            return ["graph: differs from the notes and links in the catalog"]
        return []

    def damage(self, state: dict[str, Any]) -> str | None:
        if not self.path.is_file():
            return "graph.json is missing" if state.get("links") else None
        for path, key in ((self.path, "graph_crc32"), (delta_path(self.path), "graph_delta_crc32")):
            crc = state.get(key)
            if crc is not None and crc != file_crc32(path):
                return f"{path.name} differs from the checksum the writer recorded"
        return None

    def reader(self) -> Any:
        return load_graph(self.path) if self.path.is_file() else nx.DiGraph()
