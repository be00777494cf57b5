"""Rerankers: a rerank endpoint (``POST /rerank``, the Jina/Cohere shape llama.cpp's
server, vLLM and text-embeddings-inference serve) or a local cross-encoder through the
``huggingface`` extra, imported only when configured.

Both answer one relevance in [0, 1] per passage, so the weight that blends it with the
fused score means the same whichever runs: a cross-encoder's logit goes through a
sigmoid, and so do an endpoint's scores when any falls outside [0, 1] (llama.cpp
answers raw logits).
"""

from __future__ import annotations

import math
from typing import Any, Protocol

from vaultsearch.config import SearchConfig
from vaultsearch.embedding.contract import PairScorer
from vaultsearch.embedding.endpoint import Endpoint, EndpointError
from vaultsearch.errors import ModelLoadError


class Reranker(Protocol):
    name: str
    """What explain shows: ``rerank endpoint <model>`` or ``cross-encoder <folder>``."""

    def relevance(self, query: str, passages: list[str]) -> list[float]: ...


def load_reranker(name: str) -> PairScorer:
    from vaultsearch.embedding.huggingface import CrossEncoderScorer

    try:
        return CrossEncoderScorer(name)
    except ModelLoadError:
        raise
    except Exception as exc:
        raise ModelLoadError(
            f"The reranker '{name}' could not be loaded "
            f"({type(exc).__name__}: {str(exc).splitlines()[0][:200]}).",
            fix="set search.reranker to a local cross-encoder folder, or to '' to turn it off",
        ) from exc


def make_reranker(config: SearchConfig) -> Reranker:
    """The configured route: the endpoint when ``rerank_url`` is set, else the local model."""
    if config.rerank_url:
        return EndpointReranker(config)
    return CrossEncoderReranker(config.reranker)


class CrossEncoderReranker:
    def __init__(self, name: str) -> None:
        self.name = f"cross-encoder {name}"
        self._model = load_reranker(name)

    def relevance(self, query: str, passages: list[str]) -> list[float]:
        return [_sigmoid(s) for s in self._model.predict([(query, p) for p in passages])]


class EndpointReranker:
    def __init__(self, config: SearchConfig) -> None:
        self.name = f"rerank endpoint {config.rerank_model}"
        self._model = config.rerank_model
        self._endpoint = Endpoint(
            url=config.rerank_url,
            what="rerank",
            key="search.rerank_url",
            api_key_env=config.rerank_api_key_env,
            timeout=config.model_timeout,
            retries=1,
        )

    def relevance(self, query: str, passages: list[str]) -> list[float]:
        answer = self._endpoint.post(
            "rerank",
            {"model": self._model, "query": query, "documents": passages, "top_n": len(passages)},
        )
        scores = _scores(answer, len(passages), self._endpoint.url)
        if any(not 0.0 <= s <= 1.0 for s in scores):
            return [_sigmoid(s) for s in scores]
        return scores


def _scores(answer: Any, count: int, url: str) -> list[float]:
    results: Any = answer.get("results") if isinstance(answer, dict) else answer  # TEI: a list
    out: list[float | None] = [None] * count
    try:
        for item in results:
            index, score = item["index"], float(item.get("relevance_score", item.get("score")))
            if isinstance(index, int) and 0 <= index < count and math.isfinite(score):
                out[index] = score
    except (TypeError, KeyError, ValueError):
        out = [None]
    if any(s is None for s in out):
        raise EndpointError(
            f"The rerank endpoint {url} did not answer with a score for each of the "
            f"{count} passages ({{'results': [{{'index', 'relevance_score'}}]}}).",
            fix="check that search.rerank_url serves /rerank and search.rerank_model "
            "names a reranking model",
        )
    return [float(s) for s in out if s is not None]


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, x))))
