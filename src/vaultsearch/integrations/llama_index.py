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

from vaultsearch.errors import ModelLoadError

try:
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError:  # pragma: no cover - the message is the point
    raise ModelLoadError(
        "vaultsearch.integrations.llama_index needs llama-index-core, which is not installed.",
        fix="pip install 'vaultsearch[llama-index]'",
    ) from None

from vaultsearch.app.vault import Vault
from vaultsearch.config import Config
from vaultsearch.integrations._hits import SHOWN, metadata, node_id, passage
from vaultsearch.models import Hit


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

    def _node(self, hit: Hit) -> TextNode:
        meta = metadata(hit)
        return TextNode(
            id_=node_id(hit),
            text=passage(self.vault, hit),
            metadata=meta,
            excluded_llm_metadata_keys=[k for k in meta if k not in SHOWN],
            excluded_embed_metadata_keys=list(meta),
        )
