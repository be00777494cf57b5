"""Errors a user can act on.

Every error carries one sentence saying what is wrong and, where there is one, the
command that fixes it, so the CLI and the MCP server can show it without a traceback.
"""

from __future__ import annotations

from vaultsearch.fault import FILE


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


class IndexCorruptError(VaultsearchError):
    """A file of the index cannot be read as what it should be."""


class IndexReadOnlyError(VaultsearchError):
    """The index folder cannot be written by this process."""


class ModelLoadError(VaultsearchError):
    pass


class QueryError(VaultsearchError):
    pass


class PathOutsideVaultError(VaultsearchError):
    pass


class IndexBusyError(VaultsearchError):
    """Another process holds the writer lock of this index."""


def environment_error_sentence(exc: BaseException) -> str | None:
    """One sentence for the machine's own refusals (disk full, no permission), which
    reach us as OSError, sqlite3 or Tantivy errors with different wording."""
    import errno

    text = str(exc)
    where = f" ({exc.filename})" if isinstance(exc, OSError) and exc.filename else ""
    code = exc.errno if isinstance(exc, OSError) else None
    if isinstance(exc, OSError) and code == errno.ENOSPC and exc.filename2:
        where = f" ({exc.filename2})"  # a copy names its source first: not what was written
    if code == errno.ENOSPC or "No space left" in text or "disk is full" in text:
        return f"The disk is full{where}; free some space and run the command again."
    if code in (errno.EACCES, errno.EPERM, errno.EROFS) or "readonly database" in text:
        return (
            f"Permission denied{where}: this folder cannot be written; "
            "choose one you can write with --index-dir."
        )
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}{where}."
    return None


class FileUnreadableError(VaultsearchError):
    """A file a parser was given cannot be read as its type (an encrypted or damaged
    PDF): indexing records the reason as the file's failure and goes on. ``fault``
    (``fault.py``) is ``OURS`` when the parse failed for a reason of ours (the parse
    child died of a signal no budget sent, our parser raised): retried by the next run."""

    def __init__(self, message: str, fix: str | None = None, fault: str = FILE) -> None:
        super().__init__(message, fix)
        self.fault = fault
