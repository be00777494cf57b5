"""vaultsearch: local-first hybrid search over a folder of Markdown notes.

>>> from vaultsearch import Vault
>>> vault = Vault.open("docs")               # doctest: +SKIP
>>> vault.index()                            # doctest: +SKIP
>>> vault.search("how is a rebuild decided") # doctest: +SKIP
"""

from typing import TYPE_CHECKING, Any

from vaultsearch.errors import (
    ConfigError,
    IndexBusyError,
    IndexCorruptError,
    IndexIncompatibleError,
    IndexMissingError,
    ModelLoadError,
    PathOutsideVaultError,
    QueryError,
    VaultNotFoundError,
    VaultsearchError,
)
from vaultsearch.models import Hit, SearchHits

if TYPE_CHECKING:
    from vaultsearch.app.searchanswer import SearchAnswer
    from vaultsearch.app.vault import Vault
    from vaultsearch.config import Config, load_config
    from vaultsearch.indexing.summary import IndexCheck, IndexSummary
    from vaultsearch.search.request import SearchRequest

__version__ = "0.1.0"

_LAZY = {
    "Config": "vaultsearch.config",
    "load_config": "vaultsearch.config",
    "Vault": "vaultsearch.app.vault",
    "IndexCheck": "vaultsearch.indexing.summary",
    "IndexSummary": "vaultsearch.indexing.summary",
    "SearchRequest": "vaultsearch.search.request",
    "SearchAnswer": "vaultsearch.app.searchanswer",
}


def __getattr__(name: str) -> Any:
    """``Vault`` and the index types load FAISS, Tantivy and NetworkX, the config its
    parsers: imported on first use, so ``vaultsearch --version``, ``from vaultsearch.errors
    import ...`` and the MCP handshake stay cold."""
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'vaultsearch' has no attribute {name!r}")


__all__ = [
    "Config",
    "ConfigError",
    "Hit",
    "IndexBusyError",
    "IndexCheck",
    "IndexCorruptError",
    "IndexIncompatibleError",
    "IndexMissingError",
    "IndexSummary",
    "ModelLoadError",
    "PathOutsideVaultError",
    "QueryError",
    "SearchAnswer",
    "SearchHits",
    "SearchRequest",
    "Vault",
    "VaultNotFoundError",
    "VaultsearchError",
    "__version__",
    "load_config",
]
