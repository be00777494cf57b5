"""The ``openai`` backend: any server that speaks ``POST /v1/embeddings`` (OpenAI,
Ollama, llama.cpp's server, vLLM, LM Studio, text-embeddings-inference).

The dimension is whatever the first answer has; every later answer must agree, since
one index cannot hold vectors of two sizes. Vectors are made unit length here, as
not every server normalises, and the index compares them by inner product.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vaultsearch.config import EmbeddingConfig
from vaultsearch.embedding.endpoint import Endpoint, EndpointError
from vaultsearch.embedding.locate import endpoint_fingerprint


def embedding_endpoint(config: EmbeddingConfig) -> Endpoint:
    return Endpoint(
        url=config.url,
        what="embedding",
        key="embedding.url",
        api_key_env=config.api_key_env,
        timeout=config.timeout,
        retries=config.retries,
    )


class OpenAIBackend:
    def __init__(self, config: EmbeddingConfig, model_id: str) -> None:
        self.model_id = model_id
        self._config = config
        self._endpoint = embedding_endpoint(config)
        self.dimension = 0
        self.dimension = int(self.embed_query("dimension probe").shape[0])
        self.fingerprint = endpoint_fingerprint(model_id, self.dimension)

    def embed_query(self, text: str) -> np.ndarray:
        out: np.ndarray = self.embed_documents([text])[0]
        return out

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        step = max(1, self._config.batch_size)
        parts = [self._embed(texts[i : i + step]) for i in range(0, len(texts), step)]
        return np.vstack(parts)

    def _embed(self, texts: list[str]) -> np.ndarray:
        answer = self._endpoint.post("embeddings", {"model": self._config.model, "input": texts})
        vectors = _vectors(answer, len(texts), self._endpoint.url)
        if self.dimension and vectors.shape[1] != self.dimension:
            raise EndpointError(
                f"The embedding endpoint {self._endpoint.url} answered {vectors.shape[1]}-"
                f"dimensional vectors after {self.dimension}-dimensional ones.",
                fix="keep one model behind embedding.model for the whole run (the server "
                "switched models), then run 'vaultsearch index' again",
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.clip(norms, 1e-12, None)).astype(np.float32)


def _vectors(answer: Any, count: int, url: str) -> np.ndarray:
    def bad(detail: str) -> EndpointError:
        return EndpointError(
            f"The embedding endpoint {url} did not answer like an OpenAI embeddings API "
            f"({detail}).",
            fix="check that embedding.url is the API base (ending in /v1) of an "
            "embeddings server and embedding.model names an embedding model",
        )

    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list):
        raise bad("no 'data' list")
    if len(data) != count:
        raise bad(f"{len(data)} vectors for {count} texts")
    rows: list[Any] = [None] * count
    for position, item in enumerate(data):
        if not isinstance(item, dict) or not isinstance(item.get("embedding"), list):
            raise bad("an item without an 'embedding' list")
        index = item.get("index", position)
        if not isinstance(index, int) or not 0 <= index < count or rows[index] is not None:
            raise bad(f"an item with the index {index!r}")
        rows[index] = item["embedding"]
    sizes = {len(r) for r in rows}
    if len(sizes) != 1 or 0 in sizes:
        raise bad(f"vectors of sizes {sorted(sizes)} in one answer")
    try:
        vectors = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError):
        raise bad("an embedding that is not a list of numbers") from None
    if not np.isfinite(vectors).all():
        raise bad("an embedding with NaN or infinite numbers")
    return vectors
