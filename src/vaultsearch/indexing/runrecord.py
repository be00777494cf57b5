"""Records the run of this process in the index folder (``store/runstate.py``) while it
passes every progress call on to the display it wraps, so every run (a command-line
``index``, a watcher's update, a page's rebuild) is seen by every other process."""

from __future__ import annotations

import os
import socket
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultsearch.indexing.progress import Progress, enter_stage, show_counts, working_on
from vaultsearch.store.runstate import write_run

if TYPE_CHECKING:
    from vaultsearch.indexing.summary import IndexSummary
    from vaultsearch.store.counts import IndexCounts

WRITE_EVERY = 0.5
"""Seconds between two progress writes (start and end are always written)."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def program() -> str:
    """``vaultsearch index``, ``vaultsearch mcp``, ``vaultsearch serve``, else the script."""
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    if name in ("vaultsearch", "cli.py", "__main__.py") and len(sys.argv) > 1:
        return f"vaultsearch {sys.argv[1]}"
    return name


class RecordedProgress:
    def __init__(self, inner: Progress, index_dir: Path, kind: str, reason: str | None) -> None:
        self.inner = inner
        self.index_dir = index_dir
        self.written = 0.0
        self.record: dict[str, Any] = {
            "state": "running",
            "kind": kind,
            "by": program(),
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "reason": reason,
            "files_done": 0.0,
            "files_total": 0,
            "chunks_done": 0,
            "chunks_total": 0,
            "started_at": _now(),
        }
        self._write(force=True)

    def _write(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.written >= WRITE_EVERY:
            self.written = now
            write_run(self.index_dir, self.record)

    def start(self, files: int) -> None:
        self.inner.start(files)
        self.record["files_total"] = files
        self._write(force=True)

    def advance(self, files: float = 0, chunks: int = 0) -> None:
        self.inner.advance(files, chunks)
        r = self.record
        r["files_done"] = min(r["files_done"] + files, float(r["files_total"]))
        r["chunks_done"] += chunks
        self._write()

    def working_on(self, path: str, chunks: int = 0) -> None:
        working_on(self.inner, path, chunks)
        self.record["current_file"] = path
        self.record["chunks_total"] += chunks
        self._write()

    def stage(self, stage: int, what: str) -> None:
        enter_stage(self.inner, stage, what)
        self.record["stage"] = stage
        self._write(force=True)

    def indexed(self, counts: IndexCounts) -> None:
        show_counts(self.inner, counts)

    def finish(self) -> None:
        self.inner.finish()

    def end(self, summary: IndexSummary | None, error: str | None = None) -> None:
        """The last write: how the run ended and what the index holds now."""
        r = self.record
        r.pop("current_file", None)
        r["finished_at"] = _now()
        if summary is None:
            r["state"], r["error"] = "failed", error
            r["note"] = "the run failed; the index is as it was last published"
        elif summary.cancelled:
            done = summary.added + summary.updated + summary.moved + summary.removed
            r["state"] = "cancelled"
            r["files_done"] = float(min(done, r["files_total"]))
            r["note"] = (
                f"cancelled after {done} of {r['files_total']} files: the index keeps what it "
                "held before and what this run finished; the next run indexes the rest"
            )
        else:
            r["state"], r["files_done"] = "done", float(r["files_total"])
        if summary is not None and summary.counts is not None:
            r["counts"] = summary.counts.to_dict()
        self._write(force=True)


def run_view(record: dict[str, Any]) -> dict[str, Any]:
    """A stored run in the shape of ``RunSnapshot.to_dict`` (the REST /progress body),
    with who ran it, why, and what its end means."""
    total = int(record.get("files_total") or 0)
    done = float(record.get("files_done") or 0.0)
    state = record.get("state")
    percent = (
        100.0 if state == "done" else round(min(100.0, 100.0 * done / total), 1) if total else 0.0
    )
    out = {
        **{k: v for k, v in record.items() if k not in ("host",)},
        "files_done": int(round(done, 6)),
        "percent": percent,
        "chunks_total": max(
            int(record.get("chunks_total") or 0), int(record.get("chunks_done") or 0)
        ),
    }
    return {k: v for k, v in out.items() if v is not None}
