"""The derived indexes, listed once: adding one is a module and a line here."""

from __future__ import annotations

from vaultsearch.store.derived.base import Batch, DerivedIndex, DerivedSettings
from vaultsearch.store.derived.graph import GraphPart
from vaultsearch.store.derived.keywords import KeywordPart
from vaultsearch.store.derived.sentences import SentencePart
from vaultsearch.store.derived.vectors import VectorPart

DERIVED: tuple[type[DerivedIndex], ...] = (VectorPart, SentencePart, KeywordPart, GraphPart)

__all__ = ["DERIVED", "Batch", "DerivedIndex", "DerivedSettings"]
