"""Which files of a vault are notes: one set of ignore rules for scans and the watcher.

Editors, sync tools and git leave files in a vault that are not notes; indexing them
fills results with noise, so they are ruled out the same way everywhere.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pathspec

from vaultsearch.fault import FILE, OURS, of_os_error
from vaultsearch.parsers import ParserRegistry, is_binary

BUILTIN_IGNORES = (
    ".obsidian/",
    ".trash/",
    ".git/",
    "node_modules/",
    "__pycache__/",
    "site-packages/",
    ".*/",
    "*.tmp",
    "*.swp",
    "*.swx",
    "~$*",
    ".#*",
    "*~",
)
IGNORE_FILES = (".gitignore", ".ragignore", ".vaultsearchignore")


@dataclass(frozen=True, slots=True)
class FileInfo:
    path: str
    """Vault-relative POSIX path."""
    abs_path: Path
    size: int
    mtime_ns: int
    skip: str | None = None
    """Why the file cannot be indexed though it is named like a note, found before it
    is ever opened: a FIFO, a broken link, an undecodable name. Recorded as a failure."""
    binary: bool = False
    """Its parser reads bytes (PDF): the file is not decoded as text."""
    fault: str = FILE
    """Whose fault ``skip`` is (``fault.py``): ours when looking at the file or its
    folder failed for want of descriptors or memory, and the next run looks again."""


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
    return _infos(_walk(root, rules), parsers, root)


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
        if os.path.isdir(abs_path) and not os.path.islink(abs_path):
            if not rules.excludes(rel, is_dir=True):
                found += _walk(root, rules, abs_path)
        elif os.path.lexists(abs_path) and not rules.excludes(rel):
            found.append((rel, abs_path))
    return _infos(found, parsers, root)


def _infos(
    files: Iterable[tuple[str, Path]], parsers: ParserRegistry, root: Path
) -> dict[str, FileInfo]:
    found: dict[str, FileInfo] = {}
    for rel, abs_path in files:
        info: FileInfo | None
        if rel.endswith("/"):  # a folder that could not be entered
            info = _skipped_folder(rel, abs_path)
        elif (parser := parsers.parser_for(rel)) is None:
            continue
        else:
            info = _file_info(rel, abs_path, root)
            if info is not None and is_binary(parser):
                info = replace(info, binary=True)
        if info is not None:
            found[info.path] = info
    return dict(sorted(found.items()))


def _file_info(rel: str, abs_path: Path, root: Path) -> FileInfo | None:
    """Decide from ``lstat``/``stat`` alone, so a FIFO or a device is never opened."""
    shown = display_path(rel)
    try:
        lst = abs_path.lstat()
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None  # gone since the walk listed it
        reason = f"cannot read: {exc.strerror or exc}"
        return FileInfo(shown, abs_path, 0, 0, reason, fault=of_os_error(exc))
    if shown != rel:
        reason = "the file name is not valid UTF-8; rename the file to index it"
        return FileInfo(shown, abs_path, lst.st_size, lst.st_mtime_ns, reason)
    st = lst
    if stat.S_ISLNK(lst.st_mode):
        try:
            st = abs_path.stat()
        except OSError as exc:
            reason = "symlink loop" if exc.errno == errno.ELOOP else "broken symlink"
            return FileInfo(rel, abs_path, lst.st_size, lst.st_mtime_ns, reason)
        if not _inside(abs_path, root):
            reason = "symlink leads out of the vault; links are followed only inside it"
            return FileInfo(rel, abs_path, lst.st_size, lst.st_mtime_ns, reason)
    if not stat.S_ISREG(st.st_mode):
        kind = _KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
        return FileInfo(rel, abs_path, 0, st.st_mtime_ns, f"{kind}, not a regular file")
    return FileInfo(rel, abs_path, st.st_size, st.st_mtime_ns)


_KINDS = {
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a folder",
}


def _skipped_folder(rel: str, abs_path: Path) -> FileInfo:
    try:
        lst = abs_path.lstat()
        mtime, error = lst.st_mtime_ns, None
    except OSError as exc:
        mtime, error = 0, exc
    shown = display_path(rel)
    fault = FILE
    if shown != rel:
        reason = "the folder name is not valid UTF-8; rename the folder to index its notes"
    elif os.path.islink(abs_path):
        reason = "symlink to a folder out of the vault; links are followed only inside it"
    else:
        try:
            os.listdir(abs_path)
            reason = "cannot list the folder"
            fault = OURS  # it lists now: the walk's failure was of the moment
        except OSError as exc:
            error = exc
        if error is not None:
            reason = f"cannot list the folder: {error.strerror or error}"
            fault = of_os_error(error)
    return FileInfo(shown, abs_path, 0, mtime, reason, fault=fault)


def display_path(rel: str) -> str:
    """``rel`` as valid Unicode: bytes a name cannot decode are shown as backslash escapes."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(rel).decode("utf-8", "backslashreplace")
    return rel


def _walk(root: Path, rules: IgnoreRules, start: Path | None = None) -> Iterator[tuple[str, Path]]:
    """Files and, with a trailing ``/``, folders that could not be entered; a folder
    link is never entered (its target is walked where it lies in the vault)."""
    unlistable: list[OSError] = []
    for dirpath, dirnames, filenames in os.walk(
        start or root, followlinks=False, onerror=unlistable.append
    ):
        while unlistable:
            yield from _unlistable(root, rules, unlistable.pop())
        base = Path(dirpath)
        rel_dir = base.relative_to(root).as_posix()
        prefix = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = sorted(d for d in dirnames if not rules.ignored(prefix + d, is_dir=True))
        for d in list(dirnames):
            if display_path(d) != d:
                dirnames.remove(d)
                yield prefix + d + "/", base / d
            elif os.path.islink(base / d) and not _inside(base / d, root):
                yield prefix + d + "/", base / d
        for name in sorted(filenames):
            rel = prefix + name
            if not rules.ignored(rel):
                yield rel, base / name
    while unlistable:
        yield from _unlistable(root, rules, unlistable.pop())


def _unlistable(root: Path, rules: IgnoreRules, exc: OSError) -> Iterator[tuple[str, Path]]:
    if exc.filename is None:
        return
    path = Path(exc.filename)
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        return
    if rel != "." and not rules.excludes(rel, is_dir=True):
        yield rel + "/", path


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve(strict=True).relative_to(root)
    except (ValueError, OSError, RuntimeError):
        return False
    return True
