"""What an embedding backend promises, and the fingerprint that says which vectors it makes.

Two runtimes give vectors of the same model that differ slightly (an INT8 ONNX
graph against torch bf16), so an index must record not only the model but the
weights, runtime and precision that made its vectors: the cache of embeddings is
keyed by that fingerprint, and a change of it is a reason to rebuild.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Fingerprint:
    model: str
    weights: str
    """SHA-256 (first 16 hex digits) of the weights file, or a hub snapshot's revision."""
    runtime: str
    precision: str

    @property
    def key(self) -> str:
        """One string for the embedding cache: equal keys mean interchangeable vectors."""
        return f"{self.model}@{self.weights}/{self.runtime}/{self.precision}"

    def to_dict(self) -> dict[str, str]:
        return {"weights": self.weights, "runtime": self.runtime, "precision": self.precision}


class EmbeddingBackend(Protocol):
    """A loaded model: unit-length float32 vectors, one row per text."""

    model_id: str
    fingerprint: Fingerprint
    dimension: int

    def embed_documents(self, texts: list[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


class PairScorer(Protocol):
    """A cross-encoder: one relevance score per (query, passage) pair."""

    def predict(self, pairs: list[tuple[str, str]]) -> list[float]: ...
