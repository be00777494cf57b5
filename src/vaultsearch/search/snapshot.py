"""One committed index generation, opened for reading.

A reader holds a snapshot until the writer commits a newer generation (the state
file is replaced last, so its change is the signal), then opens the next one.

The writer may be committing the generation after that while a reader opens: its
catalog transaction lands first, then FAISS, Tantivy and the graph. So a snapshot
loads the derived indexes first and the catalog last, and is only taken when the
catalog's generation is still the one the state file named (with the counts the
state recorded): then nothing it loaded can be from a half-written generation.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

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

SETTLE_SECONDS = 3.0
"""How long a reader waits for a commit in progress before taking what is there
(a writer that died mid-commit leaves it so until the next writer repairs it)."""

StateKey = tuple[int, int, int]


def _stat_key(layout: IndexLayout) -> StateKey:
    """Inode too: the state file is replaced, never rewritten, so a new commit is a new
    inode even when size and mtime (coarse on some file systems) come out the same."""
    try:
        st = layout.state.stat()
    except FileNotFoundError:
        return (0, 0, 0)
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _read_state(layout: IndexLayout) -> tuple[StateKey, dict[str, Any]]:
    """The state file's key and content from one open file, so they cannot disagree."""
    try:
        with layout.state.open("rb") as fh:
            st = os.fstat(fh.fileno())
            data = json.loads(fh.read())
    except (FileNotFoundError, ValueError):
        return (0, 0, 0), {}
    state = data if isinstance(data, dict) else {}
    return (st.st_ino, st.st_mtime_ns, st.st_size), state


@dataclass
class Snapshot:
    layout: IndexLayout
    key: StateKey
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
        """The newest whole generation; waits out a commit in progress (bounded)."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            try:
                snap, whole = cls._open_once(layout, config)
            except Exception:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.02)  # a file replaced under us: the next try sees the new one
                continue
            if whole or time.monotonic() >= deadline:
                return snap
            snap.close()
            time.sleep(0.02)

    @classmethod
    def _open_once(cls, layout: IndexLayout, config: Config) -> tuple[Snapshot, bool]:
        key, state = _read_state(layout)
        manifest = read_manifest(layout.root) or {}
        stemming = (manifest.get("keyword") or {}).get("tokenizer") == tokenizer_name(True)
        dim = (manifest.get("embedding") or {}).get("dimension") or 384
        vectors = VectorIndex.load(layout.vectors) if layout.vectors.is_file() else VectorIndex(dim)
        if not (layout.keywords / "meta.json").is_file():
            raise FileNotFoundError(layout.keywords / "meta.json")  # being recreated
        keywords = KeywordIndex(layout.keywords, stemming)
        keywords.index.config_reader("manual")  # this generation's segments, not the next
        graph = load_graph(layout.graph) if layout.graph.is_file() else nx.DiGraph()
        catalog = Catalog(layout.catalog, readonly=True)
        catalog.db.execute("BEGIN")
        try:
            generation = catalog.generation
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
        except BaseException:
            catalog.close()
            raise
        finally:
            if catalog.db.in_transaction:
                catalog.db.execute("COMMIT")
        whole = not state or (
            state.get("generation") == generation
            and state.get("vectors", len(vectors)) == len(vectors)
            and state.get("keyword_docs", len(keywords)) == len(keywords)
        )
        note_of_chunk = dict(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist(), strict=True))
        chunks_by_note: dict[int, np.ndarray] = {}
        if len(pairs):
            splits = np.flatnonzero(np.diff(pairs[:, 1])) + 1
            for part in np.split(pairs, splits):
                chunks_by_note[int(part[0, 1])] = part[:, 0].copy()
        k = config.keyword
        snap = cls(
            layout=layout,
            key=key,
            catalog=catalog,
            vectors=vectors,
            keywords=keywords,
            graph=graph,
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
                "meta": k.meta_boost,
                "text": k.body_boost,
            },
        )
        return snap, whole

    @functools.cached_property
    def has_links(self) -> bool:
        """Counted once: networkx counts edges by walking every node (19 ms at 26k notes)."""
        return self.graph.number_of_edges() > 0

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

    def notes_containing(self, excluded: Sequence[str]) -> set[int]:
        """Notes with a chunk holding an excluded word, matched as keyword search matches
        (stemmed, any field): ``-word`` removes the same notes in every mode."""
        return {
            nid
            for cid in self.keywords.chunks_matching(excluded)
            if (nid := self.note_of_chunk.get(cid)) is not None
        }

    def stem(self, word: str) -> str:
        """A word as the keyword index analyses it, so highlights agree with BM25."""
        return self._stems(word)

    @functools.cached_property
    def _stems(self) -> Callable[[str], str]:
        analyzer = self.keywords.analyzer

        @functools.lru_cache(maxsize=65536)
        def stem(word: str) -> str:
            tokens = analyzer.analyze(word)
            return tokens[0] if tokens else word.lower()

        return stem
