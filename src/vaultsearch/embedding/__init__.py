"""Embedding models behind one contract: ONNX Runtime (default, bundled INT8 model) and
Hugging Face over torch (the ``huggingface`` extra). Importing this package imports
no runtime and no numpy; ``Embedder`` loads one on first use."""

from vaultsearch.embedding.contract import EmbeddingBackend, Fingerprint, PairScorer
from vaultsearch.embedding.embedder import Embedder
from vaultsearch.embedding.locate import (
    DEFAULT_MODEL_ID,
    backend_name,
    bundled_model_path,
    fingerprint,
    model_dimension,
    model_id,
    resolve_model_path,
    text_hash,
)
from vaultsearch.embedding.rerank import load_reranker

__all__ = [
    "DEFAULT_MODEL_ID",
    "Embedder",
    "EmbeddingBackend",
    "Fingerprint",
    "PairScorer",
    "backend_name",
    "bundled_model_path",
    "fingerprint",
    "load_reranker",
    "model_dimension",
    "model_id",
    "resolve_model_path",
    "text_hash",
]
