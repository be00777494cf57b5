"""Where a path given by a person or an agent really leads, judged inside the vault.

One rule for every reader and writer (``browse``, ``sourceread``, the MCP tools and the
write guard), kept apart from them so the write side can use it without importing the
read side's graph and vector stack.
"""

from __future__ import annotations

import os
from pathlib import Path

from vaultsearch.errors import PathOutsideVaultError, QueryError


def confine(root: Path, path: str) -> tuple[str, Path]:
    """(vault-relative POSIX path, real path) for ``path``, judged by where it really
    leads: ``..``, absolute paths and symlinks are fine while they stay in the vault."""
    raw = path.strip().replace("\\", "/")
    if not raw:
        raise QueryError("The path is empty; pass a vault-relative path such as 'folder/Note.md'.")
    if "\0" in raw:
        raise QueryError(f"The path {path!r} contains a NUL character, which no file name can.")
    root = root.resolve()
    candidate = Path(raw) if Path(raw).is_absolute() else root / raw
    lexical = Path(os.path.normpath(candidate))
    try:
        real = candidate.resolve()
        real.relative_to(root)
    except (ValueError, OSError, RuntimeError):
        raise PathOutsideVaultError(
            f"The path {path!r} leads outside the vault {root}; only notes inside it can be read.",
            fix="pass a vault-relative path such as 'folder/Note.md', as search returns them",
        ) from None
    try:
        rel = lexical.relative_to(root).as_posix()
    except ValueError:  # the root itself sits behind a symlink: name the note by its real place
        rel = real.relative_to(root).as_posix()
    return rel, real
