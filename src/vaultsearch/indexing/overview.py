"""How the vault's files stand against the live index: indexed, waiting, deleted, failed.

The page and ``/status`` show these counts; they come from the same comparison an
update makes (``plan_changes``), so "N files waiting" is exactly what the next run
will index.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vaultsearch.indexing.changes import plan_changes
from vaultsearch.indexing.manager import IndexManager
from vaultsearch.store.catalog import open_catalog_for_reading


@dataclass(frozen=True, slots=True)
class FileCounts:
    total: int
    """Files of the vault the index is meant to hold (ignored files are not counted)."""
    indexed: int
    not_indexed: int
    """New or changed since the last run (a moved file counts until its move is indexed)."""
    deleted: int
    """Still in the index, gone from the vault."""
    failed: dict[str, str] = field(default_factory=dict)
    """path -> why it cannot be indexed."""

    @property
    def pending(self) -> int:
        return self.not_indexed + self.deleted

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "indexed": self.indexed,
            "not_indexed": self.not_indexed,
            "deleted": self.deleted,
            "failed": len(self.failed),
        }


def file_counts(manager: IndexManager) -> FileCounts:
    """Reads the vault's files and the live catalog; never writes, never loads the model."""
    scanned = manager.scan()
    current = manager.layout.current()
    if current is None or not current.catalog.is_file():
        return FileCounts(len(scanned), 0, len(scanned), 0)
    catalog = open_catalog_for_reading(current.catalog)
    try:
        recorded = catalog.failures()
        plan = plan_changes(
            scanned, catalog.file_states(), recorded, manager.config.vault.max_file_size
        )
    finally:
        catalog.close()
    failed = {p: reason for p, (reason, _, _) in recorded.items() if p not in plan.gone_failures}
    failed.update({p: reason for p, (reason, _, _) in plan.failed.items()})
    waiting = len(plan.changed) + len(plan.moved)
    indexed = max(0, len(scanned) - waiting - len(failed))
    return FileCounts(
        len(scanned), indexed, waiting, len(plan.deleted), dict(sorted(failed.items()))
    )
