"""What an index run reports (``IndexSummary``) and what ``index --check`` answers
(``IndexCheck``): the public result types every door prints, apart from the writer that
produces them."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from vaultsearch.store.counts import IndexCounts


@dataclass
class IndexSummary:
    added: int = 0
    updated: int = 0
    moved: int = 0
    removed: int = 0
    unchanged: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    to_retry: dict[str, int] = field(default_factory=dict)
    """The failed files whose failure was not their fault (``fault.py``), by the runs
    that have tried them as they are, this one included: the next run reads them again
    though they are unchanged (``fault.retry_note`` says so with the count)."""
    chunks_embedded: int = 0
    sentences_embedded: int = 0
    chunks_written: int = 0
    seconds: float = 0.0
    repaired: list[str] = field(default_factory=list)
    rebuild_reasons: list[str] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    """Sources not read this run, and why: their notes stay as they were indexed."""
    stale: dict[str, str] = field(default_factory=dict)
    """Git sources that could not be fetched, and why: read from their last fetched commit."""
    left_out: dict[str, str] = field(default_factory=dict)
    """Sources a rebuild from the files could not read, and why: out of the index until
    a run can read them (an update keeps such a source; a rebuild has nothing to keep)."""
    cancelled: bool = False
    counts: IndexCounts | None = None
    """What the published index holds after the run (``store/counts.py``)."""
    started: float = field(default_factory=time.perf_counter, repr=False, compare=False)
    """``perf_counter`` when the run began: ``seconds`` counts both stages of a build."""

    def source_lines(self) -> list[str]:
        """One line per source this run could not read or fetch, worded by what happened
        to its notes: every command that indexes prints these same lines."""
        return [
            *(f"source {n} not read (kept as indexed): {r}" for n, r in self.unavailable.items()),
            *(f"source {n} not fetched: {r}" for n, r in self.stale.items()),
            *(
                f"source {n} not read (left out of this rebuild): {r}"
                for n, r in self.left_out.items()
            ),
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "updated": self.updated,
            "moved": self.moved,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "failed": dict(sorted(self.failed.items())),
            "to_retry": sorted(self.to_retry),
            "chunks_embedded": self.chunks_embedded,
            "sentences_embedded": self.sentences_embedded,
            "chunks_written": self.chunks_written,
            "chunks_per_second": round(self.chunks_written / self.seconds, 1)
            if self.seconds
            else 0.0,
            "seconds": round(self.seconds, 3),
            "repaired": self.repaired,
            "rebuild_reasons": self.rebuild_reasons,
            "unavailable_sources": dict(sorted(self.unavailable.items())),
            "stale_sources": dict(sorted(self.stale.items())),
            "left_out_sources": dict(sorted(self.left_out.items())),
            "cancelled": self.cancelled,
            "counts": self.counts.to_dict() if self.counts is not None else None,
        }


@dataclass
class IndexCheck:
    status: str
    """``current``, ``update`` or ``rebuild``."""
    reasons: list[str] = field(default_factory=list)
    manifest_changes: list[str] = field(default_factory=list)
    changed_files: int = 0

    @property
    def exit_code(self) -> int:
        return 0 if self.status == "current" else 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reasons": self.reasons,
            "manifest_changes": self.manifest_changes,
            "changed_files": self.changed_files,
        }
