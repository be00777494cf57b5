"""The index run going on, or the last one, whichever process runs it: ``run.json`` in
the index folder.

A run's progress used to live only in the memory of the process that ran it, so the
page of one process said "idle" while an MCP server of the same vault was indexing, and
knew nothing of a ``vaultsearch index`` run. Every run now records here who runs it
(program, pid, host), why, how far it is and how it ended; any process reads it. A
record that says running but whose process is gone reads as ``interrupted``.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from vaultsearch.store.atomic import atomic_write_json
from vaultsearch.store.manifest import read_json

RUN_NAME = "run.json"
ACTIVE = ("running", "cancelling")


def write_run(index_dir: Path, record: dict[str, Any]) -> None:
    """Best effort: a read-only index folder must not stop the run it describes."""
    try:
        index_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_json(index_dir / RUN_NAME, record)
    except OSError:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def read_run(index_dir: Path) -> dict[str, Any] | None:
    record = read_json(index_dir / RUN_NAME)
    if record is None:
        return None
    pid = record.get("pid")
    same_host = record.get("host") == socket.gethostname()
    if record.get("state") in ACTIVE and same_host and isinstance(pid, int) and not _alive(pid):
        record["state"] = "interrupted"
        record["note"] = (
            "the process running it ended before it finished; the index is as it was "
            "last published, and the next run goes on from there"
        )
    return record
