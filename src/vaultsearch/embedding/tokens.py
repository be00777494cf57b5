"""Tokenising and pooling outside the model graph, shared by the runtime backend and
the conversion script, so calibration sees exactly the inputs the runtime feeds."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from vaultsearch.embedding.wordpiece import WordPiece

if TYPE_CHECKING:
    import numpy as np

MAX_TOKENS = 256
"""all-MiniLM-L6-v2's max_seq_length in sentence-transformers: longer texts are cut."""


def load_tokenizer(path: Path, max_tokens: int = MAX_TOKENS) -> WordPiece:
    return WordPiece.from_file(path, max_tokens)


def encode(tokenizer: WordPiece, texts: list[str]) -> dict[str, np.ndarray]:
    """Token ids padded with 0 to the batch's longest text, and the mask of real tokens."""
    import numpy as np

    rows = [tokenizer.encode(text) for text in texts]
    width = max(map(len, rows))
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
        mask[i, : len(row)] = 1
    return {"input_ids": ids, "attention_mask": mask}


def mean_pool_normalize(token_embeddings: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' mean pooling over real tokens, then unit length."""
    import numpy as np

    mask = attention_mask[..., None].astype(np.float32)
    summed = (token_embeddings.astype(np.float32) * mask).sum(axis=1)
    pooled = summed / np.clip(mask.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def length_order(texts: list[str]) -> list[int]:
    """Indexes by text length: runs of similar lengths pad little, and texts run side by
    side longest first leave no long straggler at the end."""
    return sorted(range(len(texts)), key=lambda i: len(texts[i]))
