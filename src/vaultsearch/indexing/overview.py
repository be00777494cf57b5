"""How the vault's files stand against the live index: indexed, waiting, deleted, failed.

The page and ``/status`` show these counts, and poll them, so they come from the cheap
half of the comparison an update makes (sizes and times, as ``plan_changes`` checks
first) and never read a note.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vaultsearch.fault import FILE, OURS, FailureRow, retry_count_note
from vaultsearch.indexing.changes import allowed_now
from vaultsearch.indexing.manager import IndexManager
from vaultsearch.indexing.scan import FileInfo
from vaultsearch.store.catalog import open_catalog_for_reading


@dataclass(frozen=True, slots=True)
class FileCounts:
    total: int
    """Files of the vault the index is meant to hold (ignored files are not counted)."""
    indexed: int
    not_indexed: int
    """New or changed since the last run."""
    deleted: int
    """Still in the index, gone from the vault."""
    failed: dict[str, str] = field(default_factory=dict)
    """path -> why it cannot be indexed."""
    to_retry: dict[str, int] = field(default_factory=dict)
    """The failed files whose failure was not their fault (``fault.py``), by the runs
    that tried them: the next run reads them again."""

    @property
    def pending(self) -> int:
        return self.not_indexed + self.deleted

    def failed_items(self, most: int | None = None) -> list[dict[str, Any]]:
        """The failed files as every status answer lists them: path, reason, whose
        fault (``fault.py``), and for ours the runs that tried the file as it is."""
        out: list[dict[str, Any]] = []
        for path, reason in list(self.failed.items())[:most]:
            tries = self.to_retry.get(path)
            item: dict[str, Any] = {"path": path, "reason": reason}
            item |= {"fault": FILE} if tries is None else {"fault": OURS, "tries": tries}
            out.append(item)
        return out

    def failed_line(self) -> str:
        """``N failed`` and how many of them the next run reads again."""
        return f"{len(self.failed)} failed{retry_count_note(len(self.to_retry))}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "indexed": self.indexed,
            "not_indexed": self.not_indexed,
            "deleted": self.deleted,
            "failed": len(self.failed),
            "to_retry": len(self.to_retry),
        }


def count_files(
    scanned: dict[str, FileInfo],
    known: dict[str, tuple[int, str, int, int]],
    failures: dict[str, FailureRow],
) -> FileCounts:
    """By size and modification time alone, never reading a file, so that a page can
    poll it during a first build. A file whose time moved but not its text counts as
    changed (the next run only records its new time); a move counts as a deletion and
    a new file; a failed file counts as failed until it changes, or, when it failed for
    want of permission, until it opens (``changes.allowed_now``), which counts it changed."""
    new = changed = 0
    failed: dict[str, str] = {}
    to_retry: dict[str, int] = {}
    for path, info in scanned.items():
        prior = failures.get(path)
        if prior is not None and (prior.mtime_ns, prior.size) == (info.mtime_ns, info.size):
            if allowed_now(prior, info.abs_path):
                changed += 1
                continue
            failed[path] = prior.reason
            if prior.retried:
                to_retry[path] = prior.tries
            continue
        old = known.get(path)
        if old is None:
            new += 1
        elif (old[2], old[3]) != (info.size, info.mtime_ns):
            changed += 1
    deleted = sum(1 for p in known if p not in scanned)
    indexed = len(scanned) - new - changed - len(failed)
    return FileCounts(
        len(scanned), indexed, new + changed, deleted, dict(sorted(failed.items())), to_retry
    )


def file_counts(manager: IndexManager) -> FileCounts:
    """Lists the vault's files and reads the live catalog; never writes, never loads
    the model, never reads a note."""
    scanned = manager.scan()
    current = manager.layout.current()
    if current is None or not current.catalog.is_file():
        return count_files(scanned, {}, {})
    catalog = open_catalog_for_reading(current.catalog)
    try:
        return count_files(scanned, catalog.file_states(), catalog.failures())
    finally:
        catalog.close()
