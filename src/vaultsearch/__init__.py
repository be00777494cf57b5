"""vaultsearch: local-first hybrid search over a folder of Markdown notes.

>>> from vaultsearch import Vault
>>> vault = Vault.open("docs")               # doctest: +SKIP
>>> vault.index()                            # doctest: +SKIP
>>> vault.search("how is a rebuild decided") # doctest: +SKIP
"""

from vaultsearch.config import Config, load_config
from vaultsearch.errors import (
    ConfigError,
    IndexBusyError,
    IndexIncompatibleError,
    IndexMissingError,
    ModelLoadError,
    PathOutsideVaultError,
    QueryError,
    VaultNotFoundError,
    VaultsearchError,
)
from vaultsearch.indexing.manager import IndexCheck, IndexSummary
from vaultsearch.models import Hit
from vaultsearch.vault import Vault

__version__ = "0.1.0"

__all__ = [
    "Config",
    "ConfigError",
    "Hit",
    "IndexBusyError",
    "IndexCheck",
    "IndexIncompatibleError",
    "IndexMissingError",
    "IndexSummary",
    "ModelLoadError",
    "PathOutsideVaultError",
    "QueryError",
    "Vault",
    "VaultNotFoundError",
    "VaultsearchError",
    "__version__",
    "load_config",
]
