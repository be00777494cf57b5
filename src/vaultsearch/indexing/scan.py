"""Which files of a vault are notes: one set of ignore rules for scans and the watcher.

Editors, sync tools and git leave files in a vault that are not notes; indexing them
fills results with noise, so they are ruled out the same way everywhere.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec

from vaultsearch.parsers import ParserRegistry

BUILTIN_IGNORES = (
    ".obsidian/",
    ".trash/",
    ".git/",
    "node_modules/",
    ".*/",
    "*.tmp",
    "*.swp",
    "*.swx",
    "~$*",
    ".#*",
    "*~",
)
IGNORE_FILES = (".gitignore", ".vaultsearchignore")


@dataclass(frozen=True, slots=True)
class FileInfo:
    path: str
    """Vault-relative POSIX path."""
    abs_path: Path
    size: int
    mtime_ns: int


class IgnoreRules:
    def __init__(
        self,
        vault: Path,
        extra: list[str] | tuple[str, ...] = (),
        index_dir: Path | None = None,
    ) -> None:
        self.vault = vault
        lines = list(BUILTIN_IGNORES) + list(extra)
        for name in IGNORE_FILES:
            f = vault / name
            if f.is_file():
                lines.extend(f.read_text(encoding="utf-8", errors="replace").splitlines())
        self.spec = pathspec.PathSpec.from_lines("gitignore", lines)
        self.index_rel: str | None = None
        if index_dir is not None:
            try:
                self.index_rel = index_dir.resolve().relative_to(vault.resolve()).as_posix()
            except ValueError:
                self.index_rel = None

    def ignored(self, rel: str, is_dir: bool = False) -> bool:
        if self.index_rel and (rel == self.index_rel or rel.startswith(self.index_rel + "/")):
            return True
        return self.spec.match_file(rel + "/" if is_dir else rel)

    def excludes(self, rel: str, is_dir: bool = False) -> bool:
        """Is ``rel`` out of the index, itself or through a folder above it?

        A scan never enters an ignored folder, so a single path (from the watcher)
        must be tested against each of its parents to get the same answer.
        """
        parts = rel.split("/")
        for i in range(1, len(parts)):
            if self.ignored("/".join(parts[:i]), is_dir=True):
                return True
        return self.ignored(rel, is_dir=is_dir)


def scan_vault(vault: Path, rules: IgnoreRules, parsers: ParserRegistry) -> dict[str, FileInfo]:
    """Every note file in the vault, in sorted order, without following links out of it."""
    root = vault.resolve()
    return _infos(_walk(root, rules), parsers)


def scan_paths(
    vault: Path, rules: IgnoreRules, parsers: ParserRegistry, paths: Iterable[str]
) -> dict[str, FileInfo]:
    """The note files at or under ``paths`` (vault-relative), by the rules of a full scan.

    What the watcher reports is enough to plan an update: stat a few files instead of
    walking thousands. Paths that no longer exist simply contribute nothing.
    """
    root = vault.resolve()
    found: list[tuple[str, Path]] = []
    for rel in sorted(set(paths)):
        abs_path = root / rel
        if not rel or ".." in rel.split("/"):
            continue
        if abs_path.is_symlink():  # as in a walk: never entered, taken if it stays inside
            if abs_path.is_file() and _inside(abs_path, root) and not rules.excludes(rel):
                found.append((rel, abs_path))
        elif abs_path.is_dir():
            if not rules.excludes(rel, is_dir=True):
                found += _walk(root, rules, abs_path)
        elif abs_path.is_file() and not rules.excludes(rel):
            found.append((rel, abs_path))
    return _infos(found, parsers)


def _infos(files: Iterable[tuple[str, Path]], parsers: ParserRegistry) -> dict[str, FileInfo]:
    found: dict[str, FileInfo] = {}
    for rel, abs_path in files:
        if parsers.parser_for(rel) is None:
            continue
        try:
            st = abs_path.stat()
        except OSError:
            continue
        found[rel] = FileInfo(rel, abs_path, st.st_size, st.st_mtime_ns)
    return dict(sorted(found.items()))


def _walk(root: Path, rules: IgnoreRules, start: Path | None = None) -> Iterator[tuple[str, Path]]:
    for dirpath, dirnames, filenames in os.walk(start or root, followlinks=False):
        base = Path(dirpath)
        rel_dir = base.relative_to(root).as_posix()
        prefix = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = sorted(d for d in dirnames if not rules.ignored(prefix + d, is_dir=True))
        for name in sorted(filenames):
            rel = prefix + name
            if rules.ignored(rel):
                continue
            abs_path = base / name
            if abs_path.is_symlink() and not _inside(abs_path, root):
                continue
            yield rel, abs_path


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except (ValueError, OSError):
        return False
    return True
