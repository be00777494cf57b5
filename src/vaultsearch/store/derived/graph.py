"""The wikilink graph as a derived index: a base file (``graph.json``, node-link JSON)
that generations share by hard link, and a delta beside it holding the records of the
notes changed since, in immutable parts (``store/graphdelta.py``). An update writes a
part of the notes the run touched and the notes whose links now resolve elsewhere
(``catalog.graph_sources``, filled by the link resolution) without loading the graph,
and merges like-sized neighbouring parts; only once the parts hold more records than
the base holds notes does the commit write a new base from the catalog and an empty
delta, so a base is rewritten after as many changed records as it is large. A new
generation builds the base whole.

A search reads it as a boost: a fused note lends a share of its score to the notes it
links with (``LinkGraph.neighbours``)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx

from vaultsearch.store.atomic import link_or_copy
from vaultsearch.store.catalog import Catalog, open_catalog_for_reading
from vaultsearch.store.derived.base import Batch, DerivedSettings, Role
from vaultsearch.store.filememo import FileMemo
from vaultsearch.store.graph import (
    READ_KEYS,
    apply_records,
    build_graph,
    followed_counted,
    graph_data,
    graph_of,
    load_graph,
    neighbours,
    node_records,
    reader_records,
    save_graph,
)
from vaultsearch.store.graphdelta import (
    PARTS_FOLDER,
    Known,
    Listing,
    Part,
    Record,
    delta_path,
    delta_records,
    fresh_records,
    link_parts,
    merged,
    part_path,
    read_listing,
    read_part,
    remove_unlisted,
    write_listing,
    write_part,
)
from vaultsearch.store.graphlinkers import Linkers
from vaultsearch.store.layout import Generation
from vaultsearch.store.manifest import file_crc32, read_state
from vaultsearch.store.segments import tier_runs

_CRC: FileMemo[int] = FileMemo()
"""The CRC-32 of the base and the parts this process wrote or read: both are linked,
never rewritten, into every later generation, and the base is as large as the vault's
graph (checking it at every generation a reader opened read the whole graph per edit)."""

COMPACT_MIN = 512
"""A delta of more records than this, and than the base has notes, is folded into a
new base: a base is then rewritten once per as many changed records as it holds, and a
small base is not rewritten at every edit."""


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
        self.root = generation.root
        self.number = generation.number
        self.counted: tuple[int, int, int] | None = None
        """(catalog generation, edges, broken links) the state this generation was made
        from recorded: what an update's counts start from."""
        self.fresh = True
        self.listing = Listing()
        self.touched: set[str] = set()
        self.named = 0
        """Part names given by this generation's commits."""

    def open(self, fresh: bool) -> None:
        self.touched, self.listing = set(), Listing()
        self.fresh = fresh or not self.path.is_file()
        self.counted = None
        if self.fresh:
            return
        state = read_state(self.root) or {}
        number, edges, broken = (state.get(k) for k in ("generation", "links", "unresolved_links"))
        if isinstance(number, int) and isinstance(edges, int) and isinstance(broken, int):
            self.counted = (number, edges, broken)
        try:
            self.listing = read_listing(self.path)
        except Exception as exc:
            raise ValueError(f"graph: unreadable ({type(exc).__name__})") from exc
        if (reason := self._parts_damage(self.listing, _crc)) is not None:
            raise ValueError(f"graph: {reason}")  # a merge would fail on it

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
        counts = None
        records: dict[str, Record] = {}
        if not self.fresh:
            present = catalog.paths_present(self.touched)
            sources |= {n.id for p in present if (n := catalog.note_by_path(p)) is not None}
            notes = catalog.notes_by_ids(sources)
            links = catalog.links_of(sources)
            named = {link.target_path for link in links if link.target_path}
            exists = catalog.paths_present(named) | {n.path for n in notes}
            records.update({p: None for p in self.touched - present})
            records.update(node_records(notes, links, exists.__contains__))
            counts = self._counts_after(catalog, sources)
        self.touched = set()
        listing = self.listing
        if self.fresh or listing.records + len(records) > max(
            COMPACT_MIN, int(listing.base.get("nodes", 0))
        ):
            graph = build_graph(catalog.notes(), catalog.links())
            save_graph(graph, self.path)
            base = {"nodes": graph.number_of_nodes(), "crc32": _crc(self.path)}
            self.listing, self.fresh = Listing(base), False
        else:
            self.listing = Listing(listing.base, self._parts(listing, records))
        write_listing(self.path, self.listing.base, self.listing.parts)
        remove_unlisted(self.path, self.listing.parts)
        edges, broken = counts or catalog.graph_counts()
        return {
            "graph_crc32": self.listing.base.get("crc32"),
            "graph_delta_crc32": file_crc32(delta_path(self.path)),
            "links": edges,
            "unresolved_links": broken,
        }

    def _parts(self, listing: Listing, records: dict[str, Record]) -> tuple[Part, ...]:
        """The list's parts with ``records`` as a new one (after the records of an older
        index's list, written as a part first), like-sized neighbours merged."""
        parts = list(listing.parts)
        for batch in (listing.inline, records):
            if batch:
                parts.append(write_part(self.path, self._name(), batch))
        for run in reversed(tier_runs([p.records for p in parts])):
            if len(run) > 1:
                parts[run[0] : run[-1] + 1] = [
                    merged(self.path, parts[run[0] : run[-1] + 1], self._name())
                ]
        for part in set(parts) - set(listing.parts):
            _CRC.put(part_path(self.path, part.name), part.crc32)
        return tuple(parts)

    def _name(self) -> str:
        self.named += 1
        return f"graph-{self.number:06d}-{self.named - 1:03d}"

    def _counts_after(self, catalog: Catalog, sources: set[int]) -> tuple[int, int] | None:
        """The counts the generation started from, less what the changed notes' links
        counted in the catalog as published, plus what they count now: counting every
        link was most of an edit's time past 100k chunks. A link counts for its own note
        only, and every note whose links, path or targets changed is in ``sources`` or
        ``touched`` (``indexing/linking.py`` re-resolves the links a change can move)."""
        if self.counted is None:
            return None
        published = open_catalog_for_reading(catalog.path)
        try:
            if published.generation != self.counted[0]:
                return None
            ids = sources | published.note_ids_of(self.touched)
            before = published.graph_counts(ids)
        finally:
            published.close()
        after = catalog.graph_counts(ids)
        return (
            self.counted[1] - before[0] + after[0],
            self.counted[2] - before[1] + after[1],
        )

    def check(self, catalog: Catalog, recorded: dict[str, Any]) -> list[str]:
        if (reason := self._damage(recorded, file_crc32)) is not None:
            return [f"graph: {reason}"]  # also a change that leaves the same graph
        try:
            stored = graph_data(load_graph(self.path))
        except Exception as exc:
            return [f"graph: unreadable ({type(exc).__name__}: {str(exc)[:120]})"]
        built = graph_data(build_graph(catalog.notes(), catalog.links()))
        if json.loads(json.dumps(stored)) != json.loads(json.dumps(built, ensure_ascii=False)):
            return ["graph: differs from the notes and links in the catalog"]
        counted = (recorded.get("links"), recorded.get("unresolved_links"))
        if counted != (None, None) and counted != catalog.graph_counts():
            return ["graph: the state file's link counts differ from the catalog's"]
        return []

    def damage(self, state: dict[str, Any]) -> str | None:
        """Each file's CRC against the one recorded, read once per file and process
        (``_CRC``); ``check`` reads them all."""
        return self._damage(state, _crc)

    def _damage(self, state: dict[str, Any], crc_of: Callable[[Path], int | None]) -> str | None:
        if not self.path.is_file():
            return "graph.json is missing" if state.get("links") else None
        for path, key in ((self.path, "graph_crc32"), (delta_path(self.path), "graph_delta_crc32")):
            crc = state.get(key)
            if crc is not None and not path.is_file():
                return f"{path.name} is missing"
            if crc is not None and crc != crc_of(path):
                return f"{path.name} differs from the checksum the writer recorded"
        try:
            listing = read_listing(self.path)
        except Exception as exc:
            return f"{delta_path(self.path).name} is unreadable ({type(exc).__name__})"
        return self._parts_damage(listing, crc_of)

    def _parts_damage(self, listing: Listing, crc_of: Callable[[Path], int | None]) -> str | None:
        """One read of each part (the delta's records are at most the base's notes)."""
        for part in listing.parts:
            path = part_path(self.path, part.name)
            if not path.is_file():
                return f"{PARTS_FOLDER}/{path.name} is missing"
            if crc_of(path) != part.crc32:
                return f"{PARTS_FOLDER}/{path.name} differs from the checksum the writer recorded"
        return None

    def reader(self, previous: Any = None) -> LinkGraph:
        """``previous``: the reader of an older generation, followed when it was read
        from the same base (only the delta's records that differ are applied to it)."""
        if not self.path.is_file():
            return LinkGraph(nx.DiGraph())
        listing = read_listing(self.path)
        base, base_key = listing.base, _base_key(self.path)
        if isinstance(previous, LinkGraph) and (
            follow := previous.follow(self.path, listing, base_key, _reader_part)
        ):
            return follow
        known: Known = {}
        if isinstance(previous, LinkGraph):
            wanted = {(p.name, p.crc32) for p in listing.parts}
            known = {k: v for k, v in previous.parts.items() if k in wanted}
        records = delta_records(self.path, listing, known, _reader_part)
        if listing.inline:
            records = reader_records(records)
        if (
            isinstance(previous, LinkGraph)
            and (changed := previous.changes_to(base, base_key, records)) is not None
        ):
            graph, edges = previous.applied(changed)
            return LinkGraph(
                graph, base, base_key, records, previous.base_paths, True, known, edges=edges
            )
        data: dict[str, Any] = json.loads(self.path.read_text(encoding="utf-8"))
        graph = graph_of(data, READ_KEYS)
        paths = frozenset(graph)
        if records:
            apply_records(graph, records)
        return LinkGraph(
            graph, base, base_key, records, paths, parts=known, inline=bool(listing.inline)
        )

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
        """The base and the delta's parts are never rewritten in place: linked; the
        delta's list is copied."""
        base = cls.location(source)
        if base.is_file():
            link_or_copy(base, cls.location(target))
        link_parts(base, cls.location(target))

    @staticmethod
    def status(reader: Any) -> dict[str, int]:
        return {"graph_edges": len(reader)}

    def counts(self, state: dict[str, Any]) -> dict[str, int]:
        """The writer's count of the catalog's note-to-note links, which are the graph's
        edges (``catalog.graph_counts``; ``check`` compares the graph with the catalog);
        an index whose state has none is read."""
        if isinstance(edges := state.get("links"), int) and self.path.is_file():
            return {"graph_edges": edges}
        return self.status(self.reader())


def _crc(path: Path) -> int | None:
    """``file_crc32``, from ``_CRC`` when this process read the same file before."""
    before, known = _CRC.get(path)
    if known is not None:
        return known
    crc = file_crc32(path)
    if crc is not None:
        _CRC.put(path, crc, before)
    return crc


def _reader_part(graph_path: Path, part: Part) -> dict[str, Record]:
    """A part's records as a reader keeps them (``READ_KEYS``), filtered once when the
    part is read: a reader following a writer keeps the parts it read."""
    return reader_records(read_part(graph_path, part))


def _base_key(path: Path) -> tuple[int, int, int]:
    """The base file's identity: generations share one base by hard link, so the same
    inode is the same bytes (a base copied where links fail is read whole)."""
    st = path.stat()
    return (st.st_dev, st.st_ino, st.st_size)


_ABSENT: Any = object()


class LinkGraph:
    """The graph as a search reads it; ``graph`` for the tools that walk it. It keeps
    what it was read from (the base's header and file, the delta's records, the base's
    paths) so that the next generation's reader applies only the records that changed
    (``GraphPart.reader``)."""

    def __init__(
        self,
        graph: nx.DiGraph,
        base: dict[str, Any] | None = None,
        base_key: tuple[int, int, int] | None = None,
        records: dict[str, Record] | None = None,
        base_paths: frozenset[str] = frozenset(),
        followed: bool = False,
        parts: Known | None = None,
        inline: bool = False,
        edges: int | None = None,
    ) -> None:
        self.graph = graph
        if edges is not None:  # a follower's, from the graph it followed (``applied``)
            self.__dict__["_edges"] = edges
        self.followed = followed
        """Whether it was made from an older generation's reader (tests compare)."""
        self.base = base or {}
        self.base_key = base_key
        self.records = records or {}
        self.base_paths = base_paths
        self.parts: Known = parts or {}
        """The delta's parts it read, for the next generation's reader."""
        self.inline = inline
        """Whether ``records`` holds a delta list's own records (an index from before
        parts), which no part holds: a follower then reads the delta whole."""
        self._linkers: Linkers | None = None
        """Which of ``records`` link to a path, built at the first follow and handed on
        to the follower (``graphlinkers``)."""

    def follow(
        self,
        graph_path: Path,
        listing: Listing,
        base_key: tuple[int, int, int],
        read: Callable[[Path, Part], dict[str, Record]],
    ) -> LinkGraph | None:
        """The next generation's reader made from the delta's new parts alone, or None
        when the delta must be read whole (``graphdelta.fresh_records``). At a million
        chunks a build leaves ~73k records in the delta, and filtering and comparing
        all of them again took ~280 ms of each followed refresh; an edit's part holds
        one record."""
        if self.inline or not self.parts:
            return None
        known = dict(self.parts)
        fresh = fresh_records(graph_path, listing, known, read)
        if fresh is None:
            return None
        return self.followed_by(listing.base, base_key, fresh, known)

    def followed_by(
        self,
        base: dict[str, Any],
        base_key: tuple[int, int, int],
        fresh: dict[str, Record],
        known: Known,
    ) -> LinkGraph | None:
        """The reader of this one's records with ``fresh`` applied over them (what the
        delta's new parts hold), or None when that needs a full read. It takes over this
        reader's map of link targets, updated with ``fresh``: this reader builds its own
        again if it is ever followed once more."""
        changed = self.changes_to(base, base_key, fresh, fresh_only=True)
        if changed is None:
            return None
        records = self.records
        linkers, self._linkers = self._linkers, None
        if fresh:
            if linkers is None:
                linkers = Linkers(records)
            linkers.update(records, fresh)
            records = records.copy()  # a copy keeps CPython's fast path (see followed_counted)
            records.update(fresh)
        graph, edges = self.applied(changed)
        follower = LinkGraph(
            graph, base, base_key, records, self.base_paths, True, known, edges=edges
        )
        follower._linkers = linkers
        return follower

    def applied(self, changed: dict[str, Record]) -> tuple[nx.DiGraph, int]:
        """This graph with ``changed`` applied, and its count of edges."""
        if not changed:
            return self.graph, self._edges
        graph, more = followed_counted(self.graph, changed)
        return graph, self._edges + more

    def changes_to(
        self,
        base: dict[str, Any],
        base_key: tuple[int, int, int],
        records: dict[str, Record],
        fresh_only: bool = False,
    ) -> dict[str, Record] | None:
        """The records that turn this graph into base + ``records``; None when that
        needs a full read: another base, or a base note deleted and back again (its
        incoming edges from notes outside the delta are only in the base file). A note
        that appears brings the records of the delta notes linking to it, as a fresh
        read adds their edges to it. ``fresh_only``: ``records`` are what the delta's
        new parts apply over this reader's records, not the whole delta."""
        if not self.base or base != self.base or base_key != self.base_key:
            return None
        if not fresh_only and not self.records.keys() <= records.keys():
            return None
        changed = {p: r for p, r in records.items() if self.records.get(p, _ABSENT) != r}
        appeared = {p for p, r in changed.items() if r is not None and p not in self.graph}
        if any(p in self.base_paths and self.records.get(p, _ABSENT) is None for p in appeared):
            return None
        if not appeared:
            return changed
        if fresh_only:  # the delta's records linking to them: older ones, then fresh
            if self._linkers is None:
                self._linkers = Linkers(self.records)
            for target in appeared:
                for path in self._linkers.of(target):
                    r = records[path] if path in records else self.records[path]
                    if r is not None and any(t == target for t, _, _ in r.get("out", ())):
                        changed[path] = r
        whole = records  # the fresh ones, or the whole delta
        for path, r in whole.items():
            if r is not None and any(t in appeared for t, _, _ in r.get("out", ())):
                changed[path] = r
        return changed

    @functools.cached_property
    def _edges(self) -> int:
        """Counted once, from the adjacency dicts: networkx's own count walks a degree
        view in Python (19 ms at 26k notes, more than the rest of a followed refresh)."""
        return sum(map(len, self.graph._succ.values()))

    def __len__(self) -> int:
        return self._edges

    def neighbours(self, path: str) -> list[str]:
        return neighbours(self.graph, path)
