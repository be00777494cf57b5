"""What changed since the last run: added, modified, moved, deleted, unchanged.

Size and mtime decide cheaply that a file is unchanged; the content hash confirms a
change and recognises a renamed note, whose chunks and vectors then simply move.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from vaultsearch.fault import Failure, FailureRow, of_os_error, over_when_readable
from vaultsearch.indexing.scan import FileInfo

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
"""Never blocks on a FIFO or a device that took a file's place since it was looked at."""
_BINARY_SNIFF = 8192


@dataclass(slots=True)
class FileText:
    info: FileInfo
    text: str
    content_hash: str
    warnings: list[str] = field(default_factory=list)
    data: bytes = b""
    """The file's bytes, kept only for a parser that reads bytes (``FileInfo.binary``)."""


@dataclass(slots=True)
class ChangePlan:
    changed: list[FileText] = field(default_factory=list)
    """New and modified notes, to parse and chunk."""
    moved: list[tuple[int, str, FileText]] = field(default_factory=list)
    """(note id, old path, file at its new path) with content identical to the old."""
    deleted: list[tuple[int, str]] = field(default_factory=list)
    touched: list[tuple[int, int]] = field(default_factory=list)
    """(note id, new mtime): content unchanged, only the mtime moved."""
    failed: dict[str, FailureRow] = field(default_factory=dict)
    """Files that could not be read in this run, with the time and size they had."""
    still_failed: int = 0
    """Recorded failures of the file's own, unchanged since: not read again."""
    retried: dict[str, int] = field(default_factory=dict)
    """path -> runs that tried it before: unchanged files whose recorded failure was
    ours (``fault.py``), read again in this run."""
    gone_failures: list[str] = field(default_factory=list)
    unchanged: int = 0
    new_paths: set[str] = field(default_factory=set)

    @property
    def empty(self) -> bool:
        return not (
            self.changed
            or self.moved
            or self.deleted
            or self.touched
            or self.failed
            or self.gone_failures
        )


def read_text(info: FileInfo, max_size: int) -> FileText | Failure:
    """The decoded file, or why it cannot be indexed."""
    if info.skip:
        return Failure(info.skip, info.fault)
    if info.size > max_size:
        return Failure(f"file is {info.size} bytes, over vault.max_file_size ({max_size})")
    data = read_file(info.abs_path, max_size + 1)
    if isinstance(data, Failure):
        return data
    if len(data) > max_size:
        return Failure(f"file grew over vault.max_file_size ({max_size}) while being read")
    digest = hashlib.sha256(data).hexdigest()
    if info.binary:
        return FileText(info, "", digest, data=data)
    warnings = []
    if data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):  # Windows "Unicode" saves
        try:
            return FileText(info, data.decode("utf-16"), digest, ["read as UTF-16"])
        except UnicodeDecodeError:
            pass
    if b"\x00" in data:
        # sync tools and crashed editors leave text padded with NULs, and an edit can
        # then put text after them: drop the NULs when what remains is text
        text_only = data.replace(b"\x00", b"")
        if _looks_binary(data, text_only):
            return Failure("binary file (NUL bytes)")
        warnings.append(f"{len(data) - len(text_only)} NUL bytes ignored")
        data = text_only
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        text, encoding = _decode_legacy(data)
        warnings.append(f"not valid UTF-8 (first bad byte at {exc.start}); read as {encoding}")
    return FileText(info, text, digest, warnings)


def read_regular(path: Path, limit: int) -> bytes | str:
    """At most ``limit`` bytes of a regular file, or why not; never blocks on a FIFO
    or a device that replaced the file since it was looked at."""
    data = read_file(path, limit)
    return data.reason if isinstance(data, Failure) else data


def read_file(path: Path, limit: int) -> bytes | Failure:
    """``read_regular``, saying whose fault a failure is: an ``OSError`` of the
    moment (out of descriptors, EIO) is ours, the file is read again by the next run."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        return Failure(f"cannot read: {exc.strerror or exc}", of_os_error(exc))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return Failure("not a regular file")
        parts: list[bytes] = []
        left = limit
        while left > 0:
            part = os.read(fd, min(left, 1 << 20))
            if not part:
                break
            parts.append(part)
            left -= len(part)
        return b"".join(parts)
    except OSError as exc:
        return Failure(f"cannot read: {exc.strerror or exc}", of_os_error(exc))
    finally:
        os.close(fd)


def _looks_binary(data: bytes, text_only: bytes) -> bool:
    """NULs beside text that is not UTF-8, or beside many control bytes, are binary."""
    if not text_only.strip():
        return False
    sample = text_only[:_BINARY_SNIFF]
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(sample) - 4:  # not just a character cut by the sample's end
            return True
    controls = sum(1 for b in sample if b < 32 and b not in b"\t\n\r\f")
    return controls > len(sample) // 100


def _vanished(path: Path) -> bool:
    """Not there any more; a path that cannot even be looked at (a folder without
    search permission) is there, and unreadable."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
    return False


def _decode_legacy(data: bytes) -> tuple[str, str]:
    """Notes from old Windows editors are usually cp1252; latin-1 decodes anything."""
    try:
        return data.decode("cp1252"), "Windows-1252"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "Latin-1"


def plan_changes(
    scanned: dict[str, FileInfo],
    known: dict[str, tuple[int, str, int, int]],
    failures: dict[str, FailureRow],
    max_size: int,
    reparse_all: bool = False,
) -> ChangePlan:
    """Compare the files on disk with the catalog; pure but for reading changed files.
    A file that failed is read again when it changed, or when the failure was ours
    (``fault.py``): then once in every run, until it is indexed or changes."""
    plan = ChangePlan()
    candidates: list[FileText] = []
    vanished: set[str] = set()
    for path, info in scanned.items():
        old = known.get(path)
        prior = failures.get(path)
        if prior is not None and (prior.mtime_ns, prior.size) == (info.mtime_ns, info.size):
            if not prior.retried and not reparse_all and not allowed_now(prior, info.abs_path):
                plan.still_failed += 1
                continue
            if prior.retried:
                plan.retried[path] = prior.tries
        if old and not reparse_all and (old[2], old[3]) == (info.size, info.mtime_ns):
            plan.unchanged += 1
            continue
        result = read_text(info, max_size)
        if isinstance(result, Failure):
            if _vanished(info.abs_path):
                # deleted or renamed since the scan: gone, not unreadable; the next
                # scan sees it at its new path
                vanished.add(path)
            else:
                plan.failed[path] = FailureRow(
                    result.reason, info.mtime_ns, info.size, result.fault
                )
            continue
        if old and not reparse_all and old[1] == result.content_hash:
            plan.touched.append((old[0], info.mtime_ns))
            plan.unchanged += 1
            continue
        candidates.append(result)

    present = scanned.keys() - vanished
    gone = {p: v for p, v in known.items() if p not in present or p in plan.failed}
    by_hash: dict[str, list[str]] = {}
    for path in sorted(gone):
        if path in plan.failed:
            continue
        by_hash.setdefault(gone[path][1], []).append(path)
    for ft in candidates:
        old_paths = by_hash.get(ft.content_hash) if ft.info.path not in known else None
        if old_paths:
            old_path = old_paths.pop(0)
            plan.moved.append((gone.pop(old_path)[0], old_path, ft))
        else:
            plan.changed.append(ft)
            if ft.info.path not in known:
                plan.new_paths.add(ft.info.path)
    plan.deleted = sorted(((v[0], p) for p, v in gone.items()), key=lambda x: x[1])
    plan.gone_failures = sorted(p for p in failures if p not in present)
    return plan


def allowed_now(prior: FailureRow, path: Path) -> bool:
    """A file that failed for want of permission and opens now (``fault.over_when_readable``);
    opened without blocking, since a FIFO may stand at its path by now."""
    if not over_when_readable(prior.reason):
        return False
    try:
        os.close(os.open(path, _OPEN_FLAGS))
    except OSError:
        return False
    return True


def describe_plan(plan: ChangePlan) -> list[str]:
    """What changed in the files since the last run; the retries are ``describe_retries``."""
    parts = []
    retried = plan.retried.keys()
    new = len(plan.new_paths - retried)
    modified = sum(1 for ft in plan.changed if ft.info.path not in plan.new_paths)
    for count, word in (
        (new, "new"),
        (modified, "modified"),
        (len(plan.moved), "moved"),
        (len(plan.deleted), "deleted"),
        (len(plan.failed.keys() - retried), "unreadable"),
    ):
        if count:
            parts.append(f"{count} file{'s' if count != 1 else ''} {word}")
    return parts


def describe_retries(plan: ChangePlan) -> str | None:
    """The failed files the next run reads again though they did not change, because
    their failure was not their fault (``fault.py``)."""
    if not plan.retried:
        return None
    n = len(plan.retried)
    most = max(plan.retried.values())
    tried = "once" if most == 1 else f"up to {most} times"
    files, own = (f"{n} files", "their") if n != 1 else ("1 file", "its")
    return f"{files} failed, not by {own} own fault (tried {tried}): read again by the next run"
