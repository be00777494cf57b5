"""The derived indexes, listed once: adding one is a module and a line here. The
writer, ``check``, the snapshot, the orchestrator and ``tests/test_derived_contract.py``
loop over this tuple."""

from __future__ import annotations

from vaultsearch.store.derived.base import (
    Batch,
    DerivedIndex,
    DerivedSettings,
    Lexicon,
    Query,
    Reader,
    Role,
)
from vaultsearch.store.derived.graph import GraphPart
from vaultsearch.store.derived.keywords import KeywordPart
from vaultsearch.store.derived.sentences import SentencePart
from vaultsearch.store.derived.vectors import VectorPart

DERIVED: tuple[type[DerivedIndex], ...] = (VectorPart, SentencePart, KeywordPart, GraphPart)


def derived(name: str) -> type[DerivedIndex]:
    """The registered index of that name (tools and tests that damage or read its files)."""
    return next(c for c in DERIVED if c.name == name)


__all__ = [
    "DERIVED",
    "Batch",
    "DerivedIndex",
    "DerivedSettings",
    "Lexicon",
    "Query",
    "Reader",
    "Role",
    "derived",
]
