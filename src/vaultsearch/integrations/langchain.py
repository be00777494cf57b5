"""A vault as a LangChain retriever: ``VaultRetriever(vault_path, **search options)``.

The LangChain twin of ``integrations.llama_index``: it opens an indexed vault and answers
``invoke(query)`` with ``Vault.search``, one ``Document`` per hit holding the hit's lines.
Installed with ``pip install 'vaultsearch[langchain]'``.
"""

from __future__ import annotations

import os
from typing import Any

from vaultsearch.errors import ModelLoadError

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from pydantic import ConfigDict, Field
except ImportError:  # pragma: no cover - the message is the point
    raise ModelLoadError(
        "vaultsearch.integrations.langchain needs langchain-core, which is not installed.",
        fix="pip install 'vaultsearch[langchain]'",
    ) from None

from vaultsearch.app.vault import Vault
from vaultsearch.config import Config
from vaultsearch.integrations._hits import metadata, node_id, passage


class VaultRetriever(BaseRetriever):
    """Each hit becomes a ``Document`` whose ``page_content`` is the hit's lines of the
    file and whose metadata holds path, title, heading path, lines, score and confidence
    (and the score's parts with ``explain=True``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    vault: Any
    search_options: dict[str, Any] = Field(default_factory=dict)
    owned: bool = False

    def __init__(
        self,
        vault_path: str | os.PathLike[str] | Vault,
        *,
        index_dir: str | os.PathLike[str] | None = None,
        config: str | os.PathLike[str] | Config | None = None,
        **search_options: Any,
    ) -> None:
        owned = not isinstance(vault_path, Vault)
        vault = (
            vault_path
            if isinstance(vault_path, Vault)
            else Vault.open(vault_path, index_dir=index_dir, config=config)
        )
        super().__init__(vault=vault, search_options=search_options, owned=owned)  # type: ignore[call-arg]

    def close(self) -> None:
        if self.owned:
            self.vault.close()

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        hits = self.vault.search(query, **self.search_options)
        return [
            Document(page_content=passage(self.vault, h), metadata=metadata(h), id=node_id(h))
            for h in hits
        ]
