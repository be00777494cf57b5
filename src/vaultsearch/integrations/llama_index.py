"""A vault as a LlamaIndex retriever: ``VaultRetriever(vault_path, **search options)``.

For a LlamaIndex pipeline that wants vaultsearch's hybrid ranking, line-exact hits and
incremental index instead of building its own vector store: the retriever opens the
vault's index (it does not build one; run ``vaultsearch index`` or ``Vault.index()``
first) and answers each query with ``Vault.search``. Installed with
``pip install 'vaultsearch[llama-index]'``.
"""

from __future__ import annotations

import os
from typing import Any

from vaultsearch.errors import ModelLoadError, VaultsearchError

try:
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError:  # pragma: no cover - the message is the point
    raise ModelLoadError(
        "vaultsearch.integrations.llama_index needs llama-index-core, which is not installed.",
        fix="pip install 'vaultsearch[llama-index]'",
    ) from None

from vaultsearch.config import Config
from vaultsearch.models import Hit
from vaultsearch.sourceread import indexed_text
from vaultsearch.vault import Vault


class VaultRetriever(BaseRetriever):
    """Each hit becomes a ``TextNode`` holding the hit's lines of the note (the merged
    passage the snippet comes from, not the snippet), scored by vaultsearch's fused
    score; path, lines, heading path, title, confidence and, with ``explain=True``,
    the score's parts travel in the metadata (kept out of what an LLM is shown)."""

    def __init__(
        self,
        vault_path: str | os.PathLike[str] | Vault,
        *,
        index_dir: str | os.PathLike[str] | None = None,
        config: str | os.PathLike[str] | Config | None = None,
        callback_manager: CallbackManager | None = None,
        **search_options: Any,
    ) -> None:
        self._owned = not isinstance(vault_path, Vault)
        self.vault = (
            vault_path
            if isinstance(vault_path, Vault)
            else Vault.open(vault_path, index_dir=index_dir, config=config)
        )
        self.search_options = search_options
        super().__init__(callback_manager=callback_manager)

    def close(self) -> None:
        if self._owned:
            self.vault.close()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = self.vault.search(query_bundle.query_str, **self.search_options)
        return [NodeWithScore(node=self._node(hit), score=hit.score) for hit in hits]

    def _passage(self, hit: Hit) -> str:
        """The hit's lines of the file as indexed; its snippet if the file is gone since."""
        try:
            text = indexed_text(self.vault, hit.path)[1]
        except VaultsearchError:
            return hit.snippet
        return "\n".join(text.splitlines()[hit.start_line - 1 : hit.end_line]) or hit.snippet

    def _node(self, hit: Hit) -> TextNode:
        metadata: dict[str, Any] = {
            "path": hit.path,
            "title": hit.title,
            "heading_path": hit.heading_path,
            "start_line": hit.start_line,
            "end_line": hit.end_line,
            "score": hit.score,
            "confidence": hit.confidence,
        }
        if hit.source:
            metadata["source"] = hit.source
        if hit.explain is not None:
            metadata["explain"] = hit.explain.to_dict()
        hidden = [k for k in metadata if k not in ("path", "title", "heading_path")]
        return TextNode(
            id_=f"{hit.source}:{hit.path}#L{hit.start_line}-{hit.end_line}",
            text=self._passage(hit),
            metadata=metadata,
            excluded_llm_metadata_keys=hidden,
            excluded_embed_metadata_keys=list(metadata),
        )
