"""What every derived index is to the store: one small contract.

A derived index holds nothing the catalog does not, so it can always be checked
against the catalog and rebuilt from it (with cached vectors, never the model).
The writer loops over the registry in ``derived/__init__.py``; nothing else names
FAISS, Tantivy or the graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from vaultsearch.store.catalog import Catalog
from vaultsearch.store.layout import Generation


@dataclass(frozen=True, slots=True)
class DerivedSettings:
    embedding_key: str
    """The key its vectors are cached under in the catalog (the model fingerprint)."""
    dimension: int
    stemming: bool
    meta_keys: tuple[str, ...] = ()
    """Frontmatter keys whose text the keyword index searches in its own field."""
    sentences: bool = True
    """Whether the sentence index holds the chunks' sentences (else it stays empty)."""
    vector_index: str = "auto"
    """``[index] vector_index``: a segment of more rows than ``ann_threshold`` gets an
    approximate index beside it unless this is ``flat``."""
    ann_threshold: int = 50_000


@dataclass(frozen=True, slots=True)
class Batch:
    """One committed catalog transaction, as the derived indexes must follow it."""

    catalog: Catalog
    removed_chunks: Sequence[int]
    added_chunks: Sequence[int]
    changed_paths: Sequence[str]
    """Notes (old and new paths) whose documents must be taken again from the catalog."""


class DerivedIndex(Protocol):
    name: str

    def __init__(self, generation: Generation, settings: DerivedSettings) -> None: ...

    def open(self, fresh: bool) -> None:
        """For writing: empty when ``fresh``, else the generation's files (raises when
        they cannot be read; the writer then builds a new generation)."""

    def level_with(self, catalog: Catalog) -> bool:
        """Hold exactly what the catalog holds (after a crash); True when it changed."""

    def apply(self, batch: Batch) -> None: ...

    def commit(self, catalog: Catalog) -> dict[str, Any]:
        """Write to disk; returns what the state file records (counts, and digests of
        files nothing else can be compared with)."""

    def check(self, catalog: Catalog, recorded: dict[str, Any]) -> list[str]:
        """Problems found reading the generation's files, against the catalog and what
        ``commit`` recorded in the state file, without writing anything."""

    def damage(self, state: dict[str, Any]) -> str | None:
        """Why a search cannot trust the generation's file, from what is cheap to look
        at when a reader opens it (present, the digest the state file recorded); None
        when it looks whole. ``check`` is the thorough look."""

    def reader(self) -> Any:
        """What a search reads: opened read-only, without a lock or a write."""
