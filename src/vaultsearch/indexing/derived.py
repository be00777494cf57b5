"""The derived indexes (FAISS, Tantivy, the graph), kept level with the catalog.

They hold nothing the catalog does not, so each can be checked against it, brought
level from the embedding cache without the model, and written in the fixed order
(vectors, keywords, graph, manifest, state last) that makes a crash harmless.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from vaultsearch.config import Config
from vaultsearch.indexes.catalog import Catalog, ChunkRow, NoteRow
from vaultsearch.indexes.graph import build_graph, save_graph
from vaultsearch.indexes.keywords import KeywordDoc, KeywordIndex
from vaultsearch.indexes.vectors import VectorIndex
from vaultsearch.indexing.layout import IndexLayout
from vaultsearch.indexing.manifest import read_state, write_manifest, write_state
from vaultsearch.models import Chunk, ParsedNote


class RunReport(Protocol):
    repaired: list[str]

    def to_dict(self) -> dict[str, Any]: ...


class DerivedIndexes:
    def __init__(self, layout: IndexLayout, config: Config, model_id: str) -> None:
        self.layout = layout
        self.config = config
        self.model_id = model_id

    def open_vectors(
        self, catalog: Catalog, dim: int, reset: bool, report: RunReport
    ) -> VectorIndex:
        if reset:
            return VectorIndex(dim)
        try:
            vectors = VectorIndex.load(self.layout.vectors)
            if vectors.dim != dim:
                raise ValueError(f"dimension {vectors.dim} != {dim}")
        except Exception:
            vectors = VectorIndex(dim)
        if sync_vectors(catalog, vectors, self.model_id):
            report.repaired.append("vectors: brought level with the catalog")
        return vectors

    def open_keywords(
        self, catalog: Catalog, reset: bool, reparse_all: bool, report: RunReport
    ) -> KeywordIndex:
        stemming = self.config.keyword.stemming
        state = read_state(self.layout.root) or {}
        in_step = state.get("generation") == catalog.generation
        try:
            keywords = None if reset else KeywordIndex(self.layout.keywords, stemming)
            count = -1 if keywords is None else len(keywords)
        except Exception:
            keywords, count = None, -1
        if keywords is not None and in_step and count == catalog.count("chunks"):
            return keywords
        if not reset and catalog.count("chunks"):
            report.repaired.append("keywords: rebuilt from the catalog")
        if keywords is None:  # unreadable, or another tokenizer: only a new folder will do
            keywords = KeywordIndex.recreate(self.layout.keywords, stemming)
        else:  # emptied and refilled in one commit: a reader or a crash sees old or new
            keywords.clear()
        if not reparse_all:
            keywords.add(all_keyword_docs(catalog, self.config.keyword.frontmatter_fields))
        keywords.commit()
        return keywords

    def commit(
        self,
        catalog: Catalog,
        vectors: VectorIndex,
        keywords: KeywordIndex,
        generation: int,
        manifest: dict[str, Any],
        report: RunReport,
    ) -> None:
        vectors.save(self.layout.vectors)
        keywords.commit()
        graph = build_graph(catalog.notes(), catalog.links())
        save_graph(graph, self.layout.graph)
        write_manifest(self.layout.root, manifest)
        write_state(
            self.layout.root,
            {
                "generation": generation,
                "notes": catalog.count("notes"),
                "chunks": catalog.count("chunks"),
                "vectors": len(vectors),
                "keyword_docs": len(keywords),
                "links": graph.number_of_edges(),
                "unresolved_links": graph.graph.get("unresolved_links", 0),
                "last_indexed": datetime.now(UTC).isoformat(timespec="seconds"),
                "last_run": report.to_dict(),
            },
        )


def sync_vectors(catalog: Catalog, vectors: VectorIndex, model: str) -> bool:
    """Make FAISS hold exactly the catalog's chunk ids, using cached vectors only."""
    want = {r[0] for r in catalog.db.execute("SELECT id FROM chunks")}
    have = set(vectors.ids().tolist())
    extra, missing = sorted(have - want), sorted(want - have)
    if not extra and not missing:
        return False
    vectors.remove(extra)
    vectors.add(missing, catalog.vectors_by_ids(model, vectors.dim, missing))
    return True


def all_keyword_docs(catalog: Catalog, meta_keys: Sequence[str]) -> Iterable[KeywordDoc]:
    notes = {n.id: n for n in catalog.notes()}
    for c in catalog.chunks():
        yield stored_keyword_doc(notes[c.note_id], c, meta_keys)


def stored_keyword_doc(note: NoteRow, chunk: ChunkRow, meta_keys: Sequence[str]) -> KeywordDoc:
    """The keyword document of a chunk already in the catalog (a rebuild, a moved note)."""
    return KeywordDoc(
        chunk.id, note.path, note.title, note.aliases, chunk.heading_path, note.tags, chunk.text,
        frontmatter_text(note.frontmatter, meta_keys),
    )  # fmt: skip


def keyword_docs(
    note: ParsedNote, chunks: Sequence[Chunk], ids: Sequence[int], meta_keys: Sequence[str]
) -> list[KeywordDoc]:
    meta = frontmatter_text(note.frontmatter, meta_keys)
    return [
        KeywordDoc(i, note.path, note.title, note.aliases, c.heading_path, note.tags, c.text, meta)
        for c, i in zip(chunks, ids, strict=True)
    ]


def frontmatter_text(frontmatter: Mapping[str, Any], keys: Sequence[str]) -> str:
    """The text of the descriptive frontmatter keys (strings, or lists of strings), keys
    matched without regard to case: ``Description:`` is as common as ``description:``."""
    wanted = {k.lower() for k in keys}
    parts: list[str] = []
    for key, value in frontmatter.items():
        if str(key).lower() not in wanted:
            continue
        values = value if isinstance(value, list) else [value]
        parts += [str(v) for v in values if isinstance(v, str | int | float) and str(v).strip()]
    return " \n".join(parts)
