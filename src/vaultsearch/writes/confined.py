"""Vault writes that the file system keeps inside the vault, whatever changes under them.

``guard`` judges a path string, but a string judged at one moment and written by name
the next can be redirected in between: another process swaps a folder of the vault
for a symbolic link to somewhere else and the write lands there. Here every change
starts at the vault root's directory handle and opens one folder at a time with
``O_NOFOLLOW``, creates its temp file and renames it inside the last folder's handle,
so what is written is always a real entry of a real folder reached from the root.
Python has no ``openat2(RESOLVE_BENEATH)``; this walk is its portable equivalent.

The rule it enforces: a write never passes through a symbolic link, and never
replaces, moves or deletes one. Reads still follow links that stay in the vault.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from vaultsearch.errors import PathOutsideVaultError, QueryError

MAX_NAME_BYTES = 255
"""What Linux, macOS and Windows file systems allow for one file or folder name."""
TEMP_PREFIX = ".vaultsearch-"
_TEMP = re.compile(r"^\.vaultsearch-[0-9a-f]{16}\.tmp$")
_OLD_TEMP = re.compile(r"^\..+\.(?:md|markdown)\.[a-z0-9_]{8}\.tmp$")
"""Temps of ``atomic_write_bytes``, which wrote notes before this module."""
STALE_SECONDS = 300.0
"""A temp lives for one write (milliseconds); older ones are left by killed writers."""
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FIX = "pass a vault-relative path such as 'folder/Note.md'"


def check_name(name: str, path: str) -> None:
    """One sentence for what no file system takes, before it becomes an OSError."""
    if "\0" in name:
        raise QueryError(f"The path {path!r} contains a NUL character, which no file name can.")
    size = len(os.fsencode(name))
    if size > MAX_NAME_BYTES:
        raise QueryError(
            f"The name {name[:40]!r}... in the path is {size} bytes long; a file or folder "
            f"name can have at most {MAX_NAME_BYTES} bytes (UTF-8).",
            fix="choose a shorter name",
        )


def is_temp(name: str) -> bool:
    return bool(_TEMP.match(name) or _OLD_TEMP.match(name))


class ConfinedVault:
    """The vault's files as the write tools change them; paths are vault-relative
    POSIX paths that ``guard`` has accepted."""

    def __init__(self, root: Path, index_dir: Path | None = None) -> None:
        self.root = root.resolve()
        self.index_dir = index_dir

    # --- the walk ---------------------------------------------------------------------
    @contextlib.contextmanager
    def folder(self, rel: str, create: bool) -> Iterator[tuple[int, str]]:
        """(handle of the folder holding ``rel``, the file's name in it). Missing folders
        are created when ``create``, else FileNotFoundError."""
        *parts, name = rel.split("/")
        for part in [*parts, name]:
            self._check_part(part, rel)
        index = self._index_id()
        with _plain_errors(rel):
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for part in parts:
                child = self._open_child(fd, part, rel, create)
                os.close(fd)
                fd = child
                st = os.fstat(fd)
                if index is not None and (st.st_dev, st.st_ino) == index:
                    raise PathOutsideVaultError(
                        f"Refusing to write {rel!r}: it is inside the index folder.", fix=_FIX
                    )
            yield fd, name
        finally:
            os.close(fd)

    def _open_child(self, fd: int, part: str, rel: str, create: bool) -> int:
        """The folder ``part`` under ``fd``, never through a link. Another process may
        remove or swap it at any moment: each try either opens a real folder or finds
        out why not, and a folder that keeps changing is answered, not chased."""
        for _ in range(3):
            try:
                return os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError), _plain_errors(rel):
                    os.mkdir(part, 0o777, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                    raise _sentence(exc, rel) from None
                try:
                    self._refuse_kind(fd, part, rel)
                except FileNotFoundError:
                    if not create:
                        raise
        raise QueryError(
            f"{rel!r} was not written: its folder {part!r} kept changing while it was opened "
            "(another program is moving it); nothing was written, so the call can be repeated."
        )

    def _refuse_kind(self, fd: int, name: str, rel: str, want: str = "folder") -> None:
        try:
            mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise _sentence(exc, rel) from None
        if stat.S_ISLNK(mode):
            raise PathOutsideVaultError(
                f"Refusing to write {rel!r}: {name!r} is a symbolic link, and vaultsearch "
                "never writes through or over a link.",
                fix="write to the real folder inside the vault, by its own path",
            )
        if want == "folder" and stat.S_ISDIR(mode):
            return  # a folder again by now: the caller tries once more
        if want == "folder" and stat.S_ISREG(mode):
            raise QueryError(f"{rel!r} cannot be written: {name!r} is a file, not a folder.")
        if want == "file" and stat.S_ISDIR(mode):
            raise QueryError(f"{rel!r} is a folder; pass the path of a file inside it.")
        if want == "file" and stat.S_ISREG(mode):
            raise QueryError(
                f"{rel!r} changed while it was written (another program is replacing it); "
                "nothing was written, so the call can be repeated."
            )
        raise QueryError(
            f"{rel!r} is not a regular file or folder, so vaultsearch does not write it."
        )

    def _check_part(self, part: str, rel: str) -> None:
        check_name(part, rel)
        if part in ("", ".", "..") or part.startswith("."):
            raise PathOutsideVaultError(
                f"Refusing to write {rel!r}: hidden files and folders (like .obsidian, .git "
                "and the index) are not written by vaultsearch.",
                fix=_FIX,
            )

    def _index_id(self) -> tuple[int, int] | None:
        if self.index_dir is None:
            return None
        try:
            st = os.stat(self.index_dir)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def _kind(self, fd: int, name: str, rel: str) -> int | None:
        """The entry's st_mode without following it; None when there is none."""
        try:
            return os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _sentence(exc, rel) from None

    # --- what the tools do ------------------------------------------------------------
    def exists(self, rel: str) -> bool:
        try:
            with self.folder(rel, create=False) as (fd, name):
                return self._kind(fd, name, rel) is not None
        except FileNotFoundError:
            return False

    def read(self, rel: str) -> bytes:
        """The file's bytes; FileNotFoundError when there is none."""
        with self.folder(rel, create=False) as (fd, name):
            try:
                flags = (
                    os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
                )  # a FIFO never blocks
                file = os.open(name, flags, dir_fd=fd)
            except FileNotFoundError:
                raise
            except OSError as exc:
                if exc.errno != errno.ELOOP:
                    raise _sentence(exc, rel) from None
                self._refuse_kind(fd, name, rel, want="file")
                raise
            with os.fdopen(file, "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    raise QueryError(f"{rel!r} is not a regular file.")
                return fh.read()

    def write(self, rel: str, data: bytes, replace: bool = True) -> bool:
        """Whether the file was created (False: replaced). Atomic: a temp file in the
        same folder, fsynced, renamed over the name. FileExistsError when the file
        exists and not ``replace``."""
        with self.folder(rel, create=True) as (fd, name):
            mode = self._kind(fd, name, rel)
            if mode is not None and not stat.S_ISREG(mode):
                self._refuse_kind(fd, name, rel, want="file")
            if mode is not None and not replace:
                raise FileExistsError(errno.EEXIST, "exists", rel)
            tmp = f"{TEMP_PREFIX}{secrets.token_hex(8)}.tmp"
            flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC
            with _plain_errors(rel), _folder_gone(rel):
                file = os.open(tmp, flags, 0o666, dir_fd=fd)
            try:
                with _plain_errors(rel), os.fdopen(file, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                with _plain_errors(rel), _folder_gone(rel):
                    os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=fd)
                raise
            _fsync(fd)
            return mode is None

    def unlink(self, rel: str) -> None:
        """FileNotFoundError when there is no such file."""
        with self.folder(rel, create=False) as (fd, name):
            mode = self._kind(fd, name, rel)
            if mode is None:
                raise FileNotFoundError(errno.ENOENT, "no such file", rel)
            if not stat.S_ISREG(mode):
                self._refuse_kind(fd, name, rel, want="file")
            with _plain_errors(rel):
                os.unlink(name, dir_fd=fd)
            _fsync(fd)


def sweep_temps(
    root: Path, index_dir: Path | None = None, older_than: float = STALE_SECONDS
) -> list[str]:
    """Remove the temp files that killed writes left in the vault; the vault-relative
    paths removed. Fresh ones may belong to a write of another process right now."""
    root = root.resolve()
    index = index_dir.resolve() if index_dir is not None else None
    cutoff = time.time() - older_than
    removed = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        here = Path(folder)
        dirs[:] = [d for d in dirs if not d.startswith(".") and here / d != index]
        for name in files:
            if not is_temp(name):
                continue
            path = here / name
            with contextlib.suppress(OSError):
                st = path.lstat()
                if stat.S_ISREG(st.st_mode) and st.st_mtime < cutoff:
                    path.unlink()
                    removed.append(path.relative_to(root).as_posix())
    return removed


def _fsync(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.fsync(fd)


@contextlib.contextmanager
def _folder_gone(rel: str) -> Iterator[None]:
    """The folder handle's folder was removed (replaced by another) after it was opened."""
    try:
        yield
    except FileNotFoundError:
        raise QueryError(
            f"{rel!r} was not written: its folder was removed while it was written (another "
            "program is moving it); nothing was written, so the call can be repeated."
        ) from None


@contextlib.contextmanager
def _plain_errors(rel: str) -> Iterator[None]:
    """The machine's refusals (disk full, permission, name too long) as one sentence;
    missing and existing files pass through for the callers to judge."""
    try:
        yield
    except (FileNotFoundError, FileExistsError):
        raise
    except OSError as exc:
        raise _sentence(exc, rel) from None


def _sentence(exc: OSError, rel: str) -> QueryError:
    if exc.errno == errno.ENAMETOOLONG:
        return QueryError(f"{rel!r} cannot be written: a name in it is too long for this disk.")
    if exc.errno == errno.ENOSPC:
        return QueryError(f"{rel!r} cannot be written: the disk is full.")
    return QueryError(f"{rel!r} cannot be written: {(exc.strerror or str(exc)).lower()}.")
