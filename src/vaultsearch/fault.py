"""Whose fault a file's failure is: the file's own, or ours (the machine's or our code's).

A failure is recorded with the file's size and time, and a file recorded as failed is
not read again until it changes: that is right when the file itself is the cause (it
cannot be decoded, it is too large, over the parse budget, malformed for its parser,
not a regular file, unreadable to us), since the same bytes fail the same way. It is
wrong when the cause was ours: the process ran out of descriptors or memory, a disk
answered EIO, the parse child could not be reached or died of a signal no budget sent,
our parser code raised an exception it was not written to raise, or the parse passed
its deadline while the machine was too busy to give it the time (``of_timeout``). Such a file stayed
failed forever: after the parse box's ``select`` refused descriptors past 1024, a fresh
``index`` did not retry the 300 notes it had recorded, and ``check`` found the empty
index consistent. So every failure is classified where it is raised, the class is
recorded beside the reason (catalog ``failures.fault``), and the next run tries a
failure that is ours again, once per run, counting the tries, for ``MAX_TRIES`` runs.

The rules live here and only here; the code that raises a failure names the situation.
"""

from __future__ import annotations

import errno
import os
from typing import NamedTuple

FILE = "file"
"""The file's own: reading it again unchanged gives the same answer."""
OURS = "ours"
"""The machine's or our code's: tried again by the next run though the file is unchanged."""

ENVIRONMENT_ERRNOS = frozenset(
    code
    for code in (
        errno.EMFILE,  # this process's descriptors all in use
        errno.ENFILE,  # the system's
        errno.ENOMEM,
        errno.ENOBUFS,
        errno.EAGAIN,
        errno.EINTR,
        errno.EIO,  # the disk or a network mount had a bad moment
        getattr(errno, "ESTALE", None),  # a network mount's handle went stale
        errno.ETIMEDOUT,
        errno.ENOSPC,
        errno.EPIPE,  # the parse child's end of a pipe is gone
    )
    if code is not None
)
"""``OSError`` codes that say something about the machine at that moment, not about the
file: ``EACCES``, ``ENOENT``, ``ELOOP``, ``EISDIR`` and the rest are the file's."""

MAX_TRIES = 3
"""Runs that read a file again for a failure of ours before it is left as the file's
until the file changes: a shortage of the moment is over by then, and what still fails
the same way on unchanged bytes (our parser's bug on this file) must not keep ``index
--check`` saying "update" and ``check`` failing a CI gate forever. ``index --full``
reads it again."""

OURS_REASONS = (
    "parser error:",
    "the parser process died",
    "the parser process stopped",
    "the parser process could not be reached",
    "cannot read: Too many open files",
    "cannot read: Input/output error",
    "cannot read: Cannot allocate memory",
    "cannot list the folder: Too many open files",
)
"""How reasons that are ours begin, for rows recorded before the class was (``fault``
NULL): those were written by the code above, so their wording is known. Any other old
row keeps the behaviour it was recorded under: the file's, not read until it changes."""


class Failure(NamedTuple):
    """Why a file was not indexed, and whose fault that is."""

    reason: str
    fault: str = FILE

    @property
    def retried(self) -> bool:
        return self.fault != FILE


class FailureRow(NamedTuple):
    """A recorded failure: the reason, the file's time and size when it failed, whose
    fault it was and how many runs tried the file as it is (``store/catalog.py``)."""

    reason: str
    mtime_ns: int
    size: int
    fault: str = FILE
    tries: int = 1

    @property
    def retried(self) -> bool:
        """Tried again by the next run though the file has not changed."""
        return read_again(self.fault, self.tries)


def read_again(fault: str, tries: int) -> bool:
    """Whether the next run reads again, unchanged, a file that failed ``tries`` runs as
    it is with this ``fault``: ours, for up to ``MAX_TRIES`` runs."""
    return fault != FILE and tries < MAX_TRIES


def of_os_error(exc: OSError) -> str:
    """Reading the file (or listing its folder) failed: ours when the code says the
    machine was short of something, else the file's (no permission, a loop, gone)."""
    return OURS if exc.errno in ENVIRONMENT_ERRNOS else FILE


def of_reason(reason: str) -> str:
    """The class of a failure recorded before classes were: by its wording."""
    return OURS if reason.startswith(OURS_REASONS) else FILE


def of_timeout(cpu: float | None, timeout: float) -> Failure:
    """A parse stopped at ``index.parse_timeout``, which counts wall-clock time, after
    using ``cpu`` seconds of CPU (None: not known). A parse over its budget uses a core
    the whole time; one that used under half the timeout spent the rest waiting for a
    core (a loaded laptop: a build beside it), and the same bytes may well parse in time
    on the next run. Unknown CPU keeps the file's, as before the CPU was measured."""
    head = f"parsing took longer than index.parse_timeout ({timeout:g} s)"
    if cpu is not None and cpu < timeout / 2:
        used = f"{cpu:.1f}" if cpu < 10 else f"{cpu:.0f}"
        busy = f" while the machine was busy (the parser used {used} s of CPU); skipped."
        return Failure(head + busy, OURS)
    return Failure(head + " allows; skipped.")


DENIED = tuple(f"cannot read: {os.strerror(code)}" for code in (errno.EACCES, errno.EPERM))
"""How the reason of a file we were not allowed to read begins (``read_file``)."""


def over_when_readable(reason: str) -> bool:
    """Whether a failure of the file's own is over once the file opens, its bytes
    unchanged: a want of permission. ``chmod`` changes neither the time nor the size a
    failure is recorded with, so a note whose permission was given back would otherwise
    stay failed until it is edited (``index.changes.plan_changes`` tries to open it)."""
    return reason.startswith(DENIED)


def retry_count_note(count: int) -> str:
    """What every surface adds to its count of failed files when ``count`` of them are
    read again by the next run."""
    return f" ({count} not the files' fault: read again by the next index run)" if count else ""


def retry_note(tries: int | None) -> str:
    """What every surface adds to a failed file's reason when the failure was ours
    (``tries``: the runs that tried the file as it is; None for the file's own)."""
    if tries is None:
        return ""
    times = "once" if tries == 1 else f"{tries} times"
    return f" (not the file's fault: tried {times}, read again by the next index run)"
