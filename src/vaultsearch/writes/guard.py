"""Where a write may land: inside the vault, never in its index or hidden folders.

Reading confines paths with ``browse.confine``; writing uses the same judgement of
where a path really leads (``..``, absolute paths, symlinked folders), and also keeps
out of the places that are not the user's notes: hidden folders such as ``.obsidian``,
``.git`` and the index itself. This judges the string, for a clear answer before any
work; ``confined`` does the write itself so that nothing can redirect it afterwards.
"""

from __future__ import annotations

from pathlib import Path

from vaultsearch.errors import PathOutsideVaultError, QueryError
from vaultsearch.vaultpaths import confine
from vaultsearch.writes.confined import check_name

NOTE_SUFFIXES = (".md", ".markdown")


def _confine(root: Path, path: str) -> tuple[str, Path]:
    for part in path.replace("\\", "/").split("/"):
        check_name(part, path)
    try:
        return confine(root, path)
    except PathOutsideVaultError:
        raise PathOutsideVaultError(
            f"Refusing to write {path!r}: it leads outside the vault {root.resolve()}.",
            fix="pass a vault-relative path such as 'folder/Note.md'",
        ) from None


def writable(root: Path, path: str, index_dir: Path | None = None) -> tuple[str, Path]:
    """(vault-relative path, absolute path) for a file write, or a one-sentence refusal."""
    rel, real = _confine(root, path)
    parts = rel.split("/")
    if rel in ("", ".") or any(p.startswith(".") for p in parts):
        raise PathOutsideVaultError(
            f"Refusing to write {path!r}: hidden files and folders (like .obsidian, .git and "
            "the index) are not written by vaultsearch.",
            fix="pass a vault-relative path such as 'folder/Note.md'",
        )
    if index_dir is not None and _inside(real, index_dir):
        raise PathOutsideVaultError(f"Refusing to write {path!r}: it is inside the index folder.")
    if real.is_dir():
        raise QueryError(f"{rel!r} is a folder; pass the path of a note file inside it.")
    return rel, root.resolve() / rel


def note_path(root: Path, path: str, index_dir: Path | None = None) -> tuple[str, Path]:
    """Like ``writable``, for a note: ``.md`` is added when the name has no extension."""
    cleaned = path.strip()
    if cleaned and not cleaned.lower().endswith(NOTE_SUFFIXES):
        if Path(cleaned).suffix and " " not in Path(cleaned).suffix:
            raise QueryError(
                f"{path!r} is not a Markdown note; note paths end in .md (or have no extension)."
            )
        cleaned += ".md"
    return writable(root, cleaned, index_dir)


def folder_path(root: Path, folder: str) -> tuple[str, Path]:
    """A vault-relative folder (which may not exist yet) for reports or documents."""
    rel, _ = _confine(root, folder.strip().rstrip("/") or ".")
    if rel in ("", "."):
        return "", root.resolve()
    if any(p.startswith(".") for p in rel.split("/")):
        raise PathOutsideVaultError(
            f"Refusing to write into {folder!r}: hidden folders are not written by vaultsearch."
        )
    return rel, root.resolve() / rel


def _inside(path: Path, folder: Path) -> bool:
    """A link that changes while it is resolved raises from ``resolve``; such a path is
    judged again, by inode, when ``confined`` writes it."""
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except (ValueError, OSError):
        return False
