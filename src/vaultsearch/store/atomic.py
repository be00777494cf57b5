"""Atomic file replacement: a reader or a crash sees the old file or the new, never half."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp's 0600 would hide the index from others
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def temp_target(name: str) -> str:
    """The name of the file an ``atomic_write_bytes`` temp (``.NAME.RANDOM.tmp``) is
    for: a sweep of killed writers' temps can keep those of files others are writing."""
    return name.removeprefix(".").removesuffix(".tmp").rpartition(".")[0]


def atomic_write_json(path: Path, value: Any) -> None:
    atomic_write_bytes(path, json_bytes(value))


def json_bytes(value: Any) -> bytes:
    """Sorted keys: the same value always gives the same bytes (the manifest's digest)."""
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def fsync_tree(folder: Path) -> None:
    """Every file and folder under ``folder`` on disk, before a pointer names it. A file
    with another link is one an older generation shares, synced before that one was
    published: an edit syncs what it wrote, not every segment of the index."""
    for path in sorted(folder.rglob("*"), reverse=True):
        if path.is_file():
            if path.stat().st_nlink > 1:
                continue
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        elif path.is_dir():
            fsync_dir(path)
    fsync_dir(folder)


def follow_umask(folder: Path) -> None:
    """Tantivy writes meta.json and .managed.json as 0600; readers of other users
    need what the umask allows, like every other file of the index."""
    file_mode, dir_mode = 0o666 & ~_UMASK, 0o777 & ~_UMASK
    for path in [folder, *folder.rglob("*")]:
        with contextlib.suppress(OSError):
            os.chmod(path, dir_mode if path.is_dir() else file_mode)


def _read_umask() -> int:
    """Read once at import: os.umask can only be read by setting it, which is not
    safe while other threads create files."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def link_or_copy(source: Path, target: Path) -> None:
    """A hard link to a file no writer changes in place (temp file and rename), where the
    file system allows one: a new generation shares it instead of copying it."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
