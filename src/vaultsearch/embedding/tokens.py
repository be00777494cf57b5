"""Tokenising and pooling outside the model graph, shared by the runtime backend and
the conversion script, so calibration sees exactly the inputs the runtime feeds."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

MAX_TOKENS = 256
"""all-MiniLM-L6-v2's max_seq_length in sentence-transformers: longer texts are cut."""


def load_tokenizer(path: Path, max_tokens: int = MAX_TOKENS) -> Any:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    tok.enable_truncation(max_tokens)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    return tok


def encode(tokenizer: Any, texts: list[str]) -> dict[str, np.ndarray]:
    import numpy as np

    batch = tokenizer.encode_batch(texts)
    return {
        "input_ids": np.array([e.ids for e in batch], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in batch], dtype=np.int64),
    }


def mean_pool_normalize(token_embeddings: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' mean pooling over real tokens, then unit length."""
    import numpy as np

    mask = attention_mask[..., None].astype(np.float32)
    summed = (token_embeddings.astype(np.float32) * mask).sum(axis=1)
    pooled = summed / np.clip(mask.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def length_order(texts: list[str]) -> list[int]:
    """Indexes by text length, so each batch pads to similar lengths (less wasted work)."""
    return sorted(range(len(texts)), key=lambda i: len(texts[i]))
