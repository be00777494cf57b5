"""Rerankers load through the same seam as embedders: the backend that can run a
cross-encoder (today only huggingface) is imported when one is configured, never before."""

from __future__ import annotations

from vaultsearch.embedding.contract import PairScorer
from vaultsearch.errors import ModelLoadError


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
