"""The wikilink graph as a derived index: a base file (``graph.json``, node-link JSON)
that generations share by hard link, and a delta beside it holding the records of the
notes changed since (``store/graph.py``). An update records the notes the run touched
and the notes whose links now resolve elsewhere (``catalog.graph_sources``, filled by
the link resolution) without loading the graph; past a share of the base's notes the
commit writes a new base from the catalog and an empty delta. A new generation builds
the base whole.

A search reads it as a boost: a fused note lends a share of its score to the notes it
links with (``LinkGraph.neighbours``)."""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path
from typing import Any

import networkx as nx

from vaultsearch.store.atomic import link_or_copy
from vaultsearch.store.catalog import Catalog
from vaultsearch.store.derived.base import Batch, DerivedSettings, Role
from vaultsearch.store.graph import (
    Record,
    build_graph,
    delta_path,
    graph_data,
    load_graph,
    neighbours,
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
        rolled back), and the generation's graph is that generation's; a graph whose
        notes are not the catalog's (a generation's files that another run left) is
        built whole at the commit. Only a generation that does not look whole is
        levelled, so loading the graph here costs an edit nothing."""
        if self.fresh or set(load_graph(self.path).nodes) == set(catalog.note_sources()):
            return False
        self.fresh = True
        return True

    def apply(self, batch: Batch) -> None:
        self.touched.update(batch.changed_paths)

    def commit(self, catalog: Catalog) -> dict[str, Any]:
        sources, catalog.graph_sources = catalog.graph_sources, set()
        if not self.fresh:
            present = catalog.paths_present(self.touched)
            sources |= {n.id for p in present if (n := catalog.note_by_path(p)) is not None}
            notes = catalog.notes_by_ids(sources)
            links = catalog.links_of(sources)
            named = {link.target_path for link in links if link.target_path}
            exists = catalog.paths_present(named) | {n.path for n in notes}
            self.delta.update({p: None for p in self.touched - present})
            self.delta.update(node_records(notes, links, exists.__contains__))
        self.touched = set()
        if self.fresh or len(self.delta) > max(COMPACT_MIN, int(self.base.get("nodes", 0)) // 10):
            graph = build_graph(catalog.notes(), catalog.links())
            save_graph(graph, self.path)
            self.base = {"nodes": graph.number_of_nodes(), "crc32": file_crc32(self.path)}
            self.delta, self.fresh = {}, False
        write_delta(self.path, self.base, self.delta)
        edges, broken = catalog.graph_counts()
        return {
            "graph_crc32": self.base.get("crc32"),
            "graph_delta_crc32": file_crc32(delta_path(self.path)),
            "links": edges,
            "unresolved_links": broken,
        }

    def check(self, catalog: Catalog, recorded: dict[str, Any]) -> list[str]:
        if (reason := self.damage(recorded)) is not None:
            return [f"graph: {reason}"]  # also a change that leaves the same graph
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
            if crc is not None and not path.is_file():
                return f"{path.name} is missing"
            if crc is not None and crc != file_crc32(path):
                return f"{path.name} differs from the checksum the writer recorded"
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
        """The base is never rewritten in place: linked; the delta is copied."""
        base = cls.location(source)
        if base.is_file():
            link_or_copy(base, cls.location(target))
        if delta_path(base).is_file():
            shutil.copyfile(delta_path(base), delta_path(cls.location(target)))

    @staticmethod
    def status(reader: Any) -> dict[str, int]:
        return {"graph_edges": len(reader)}


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
