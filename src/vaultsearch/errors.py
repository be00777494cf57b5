"""Errors a user can act on.

Every error carries one sentence saying what is wrong and, where there is one, the
command that fixes it, so the CLI and the MCP server can show it without a traceback.
"""

from __future__ import annotations


class VaultsearchError(Exception):
    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return self.message if not self.fix else f"{self.message} Fix: {self.fix}"


class ConfigError(VaultsearchError):
    pass


class VaultNotFoundError(VaultsearchError):
    pass


class IndexMissingError(VaultsearchError):
    pass


class IndexIncompatibleError(VaultsearchError):
    """The index on disk was built by other code or settings than the current ones."""


class ModelLoadError(VaultsearchError):
    pass


class QueryError(VaultsearchError):
    pass


class PathOutsideVaultError(VaultsearchError):
    pass


class IndexBusyError(VaultsearchError):
    """Another process holds the writer lock of this index."""
