"""One committed index generation, opened for reading.

A reader holds a snapshot until the writer commits a newer generation (the state
file is replaced last, so its change is the signal), then opens the next one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np

from vaultsearch.config import Config
from vaultsearch.indexes.catalog import Catalog, ChunkRow
from vaultsearch.indexes.graph import load_graph
from vaultsearch.indexes.keywords import KeywordIndex, tokenizer_name
from vaultsearch.indexes.vectors import VectorIndex
from vaultsearch.indexing.layout import IndexLayout
from vaultsearch.indexing.manifest import read_manifest
from vaultsearch.search.filters import NoteMeta, SearchFilters
from vaultsearch.search.query import words


def _stat_key(layout: IndexLayout) -> tuple[int, int]:
    try:
        st = layout.state.stat()
    except FileNotFoundError:
        return (0, 0)
    return (st.st_mtime_ns, st.st_size)


@dataclass
class Snapshot:
    layout: IndexLayout
    key: tuple[int, int]
    catalog: Catalog
    vectors: VectorIndex
    keywords: KeywordIndex
    graph: nx.DiGraph
    notes: dict[int, NoteMeta]
    note_by_path: dict[str, int]
    note_of_chunk: dict[int, int]
    chunks_by_note: dict[int, np.ndarray]
    boosts: dict[str, float]
    model: str | None
    """The embedding model the index was built with, from its manifest."""

    @classmethod
    def open(cls, layout: IndexLayout, config: Config) -> Snapshot:
        key = _stat_key(layout)
        catalog = Catalog(layout.catalog, readonly=True)
        catalog.db.execute("BEGIN")
        try:
            notes = {
                r[0]: NoteMeta(r[0], r[1], r[2], tuple(json.loads(r[3])), json.loads(r[4]), r[5])
                for r in catalog.db.execute(
                    "SELECT id, path, title, tags, frontmatter, date FROM notes"
                )
            }
            pairs = np.array(
                catalog.db.execute(
                    "SELECT id, note_id FROM chunks ORDER BY note_id, id"
                ).fetchall(),
                dtype=np.int64,
            ).reshape(-1, 2)
        finally:
            catalog.db.execute("COMMIT")
        note_of_chunk = dict(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist(), strict=True))
        chunks_by_note: dict[int, np.ndarray] = {}
        if len(pairs):
            splits = np.flatnonzero(np.diff(pairs[:, 1])) + 1
            for part in np.split(pairs, splits):
                chunks_by_note[int(part[0, 1])] = part[:, 0].copy()
        manifest = read_manifest(layout.root) or {}
        stemming = (manifest.get("keyword") or {}).get("tokenizer") == tokenizer_name(True)
        dim = (manifest.get("embedding") or {}).get("dimension") or 384
        vectors = VectorIndex.load(layout.vectors) if layout.vectors.is_file() else VectorIndex(dim)
        k = config.keyword
        return cls(
            layout=layout,
            key=key,
            catalog=catalog,
            vectors=vectors,
            keywords=KeywordIndex(layout.keywords, stemming),
            graph=load_graph(layout.graph) if layout.graph.is_file() else nx.DiGraph(),
            notes=notes,
            note_by_path={n.path: i for i, n in notes.items()},
            note_of_chunk=note_of_chunk,
            chunks_by_note=chunks_by_note,
            model=(manifest.get("embedding") or {}).get("model"),
            boosts={
                "title": k.title_boost,
                "aliases": k.aliases_boost,
                "headings": k.headings_boost,
                "tags": k.tags_boost,
                "body": k.body_boost,
            },
        )

    def is_stale(self) -> bool:
        return _stat_key(self.layout) != self.key

    def close(self) -> None:
        self.catalog.close()

    def allowed_notes(self, filters: SearchFilters) -> set[int] | None:
        if not filters.restricts_notes:
            return None
        return {nid for nid, n in self.notes.items() if filters.accepts(n)}

    def chunks_of_notes(self, note_ids: set[int] | None) -> np.ndarray | None:
        if note_ids is None:
            return None
        parts = [self.chunks_by_note[n] for n in sorted(note_ids) if n in self.chunks_by_note]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def first_chunks(self, note_id: int) -> list[int]:
        ids = self.chunks_by_note.get(note_id)
        return [int(ids[0])] if ids is not None and len(ids) else []

    def chunk_rows(self, ids: Iterable[int]) -> dict[int, ChunkRow]:
        return {r.id: r for r in self.catalog.chunks(list(dict.fromkeys(ids)))}

    def chunks_containing(self, excluded: Sequence[str], ids: Sequence[int]) -> set[int]:
        """Chunks whose text has an excluded word: the vector search cannot say so itself."""
        banned = {w.lower() for w in excluded}
        return {
            cid
            for cid, row in self.chunk_rows(ids).items()
            if banned & {w.lower() for w in words(row.text)}
        }
