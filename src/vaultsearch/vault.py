"""``Vault``: the one object a Python user needs, and what the CLI and MCP server use."""

from __future__ import annotations

import os
import threading
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultsearch.config import Config, load_config
from vaultsearch.embedding import Embedder
from vaultsearch.errors import IndexMissingError, VaultNotFoundError
from vaultsearch.indexing.manager import IndexCheck, IndexManager, IndexSummary
from vaultsearch.indexing.progress import Progress
from vaultsearch.indexing.runner import LOG_NAME, IndexRunner
from vaultsearch.store.layout import IndexLayout
from vaultsearch.store.manifest import SPEC_VERSION, read_manifest, read_state
from vaultsearch.validtext import valid_strings, valid_text

if TYPE_CHECKING:
    from vaultsearch.models import Hit
    from vaultsearch.search.orchestrator import QueryOrchestrator


def write_error(index_dir: Path) -> str | None:
    """Why a writer could not update this index, or None when it can."""
    probe = index_dir if index_dir.exists() else index_dir.parent
    if os.access(probe, os.W_OK):
        return None
    return f"the index folder {index_dir} is read-only for this user"


def resolve_index_dir(
    vault: Path, config: Config, index_dir: str | os.PathLike[str] | None
) -> Path:
    """--index-dir, then the config's vault.index_dir (relative to the vault), then
    ``<vault>/.vaultsearch``."""
    if index_dir:
        return Path(index_dir).expanduser().resolve()
    if config.vault.index_dir:
        p = Path(config.vault.index_dir).expanduser()
        return (p if p.is_absolute() else vault / p).resolve()
    return vault / ".vaultsearch"


class Vault:
    def __init__(self, root: Path, index_dir: Path, config: Config) -> None:
        self.root = root
        self.config = config
        self.layout = IndexLayout(index_dir)
        self.embedder = Embedder.shared(config.embedding)
        self._orchestrator: QueryOrchestrator | None = None
        self._manager: IndexManager | None = None
        self._runner: IndexRunner | None = None
        self._lock = threading.Lock()

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        index_dir: str | os.PathLike[str] | None = None,
        config: str | os.PathLike[str] | Config | None = None,
    ) -> Vault:
        root = Path(path).expanduser()
        if not root.is_dir():
            what = "is not a folder" if root.exists() else "does not exist"
            raise VaultNotFoundError(
                f"The vault folder {root} {what}.",
                fix="pass the path of a folder of Markdown notes, e.g. 'vaultsearch index ~/Notes'",
            )
        root = root.resolve()
        cfg = load_config(config, root)
        return cls(root, resolve_index_dir(root, cfg, index_dir), cfg)

    @property
    def index_dir(self) -> Path:
        return self.layout.root

    def manager(self) -> IndexManager:
        """One per Vault: it owns this process's writer lock on the index."""
        with self._lock:
            if self._manager is None:
                self._manager = IndexManager(self.root, self.index_dir, self.config, self.embedder)
            return self._manager

    def runner(self) -> IndexRunner:
        """One per Vault: the runs of a long-lived process, one at a time, with their
        progress, a cancel, and a JSON Lines progress log in the index folder."""
        manager = self.manager()
        with self._lock:
            if self._runner is None:
                self._runner = IndexRunner(manager, self.index_dir / LOG_NAME)
            return self._runner

    def use_config(self, config: Config) -> None:
        """Search with ``config`` from now on; index with it from the next run on (a run
        in progress keeps the settings it started with)."""
        self.config = config
        if self._orchestrator is not None:
            self._orchestrator.config = config
            self._orchestrator.refresh()
        manager = self._manager
        if manager is None:
            return

        def apply() -> None:
            from vaultsearch.parsers import ParserRegistry

            manager.config = config
            manager.parsers = ParserRegistry(config.parsers)

        if self._runner is not None:
            self._runner.when_idle(apply)
        else:
            apply()

    def index(self, full: bool = False, progress: Progress | None = None) -> IndexSummary:
        """Bring the index up to date with the vault; returns what changed."""
        summary = self.manager().update(full=full, progress=progress)
        if self._orchestrator is not None:
            self._orchestrator.refresh()
        return summary

    def check(self) -> IndexCheck:
        return self.manager().check()

    def require_index(self) -> None:
        if not self.layout.exists():
            raise IndexMissingError(
                f"No index has been built for {self.root} yet (looked in {self.index_dir}).",
                fix=f"vaultsearch index '{self.root}'",
            )

    def status(self) -> dict[str, Any]:
        """Counts from the generation readers search, as they will search it: the
        state file records what a writer meant, the snapshot what is there."""
        self.require_index()
        snap = self.orchestrator.snapshot()
        generation = snap.generation
        state = read_state(generation.root) or {}
        manifest = read_manifest(generation.root) or {}
        failed = {p: r for p, (r, _, _) in snap.catalog.failures().items()}
        embedding = manifest.get("embedding", {})
        return {
            "vault": str(self.root),
            "index_dir": str(self.index_dir),
            "notes": len(snap.notes),
            "chunks": len(snap.note_of_chunk),
            "vectors": len(snap.vectors),
            "keyword_docs": len(snap.keywords),
            "links": snap.catalog.count("links"),
            "graph_edges": snap.graph.number_of_edges(),
            "unresolved_links": int(snap.graph.graph.get("unresolved_links", 0)),
            "failed": failed,
            "model": embedding.get("model"),
            "dimension": embedding.get("dimension"),
            "spec_version": manifest.get("spec_version", SPEC_VERSION),
            "size_on_disk": self.layout.size_on_disk(),
            "last_indexed": state.get("last_indexed"),
            "generation": state.get("generation", 0),
            "generation_folder": generation.name,
            "write_error": write_error(self.index_dir),
            "config": self.config.source,
        }

    # --- search ---------------------------------------------------------------
    @property
    def orchestrator(self) -> QueryOrchestrator:
        with self._lock:
            if self._orchestrator is None:
                from vaultsearch.search.orchestrator import QueryOrchestrator

                self.require_index()
                self._orchestrator = QueryOrchestrator(self.layout, self.config, self.embedder)
            return self._orchestrator

    def search(
        self,
        query: str,
        top_k: int = 10,
        mode: str = "hybrid",
        tags: list[str] | None = None,
        folders: list[str] | None = None,
        after: date | datetime | str | None = None,
        before: date | datetime | str | None = None,
        where: dict[str, Any] | None = None,
        explain: bool = False,
        min_score: float | None = None,
    ) -> list[Hit]:
        """The best places in the vault for ``query``, best first, grouped per note."""
        from vaultsearch.search.filters import SearchFilters

        tags, folders, where = valid_strings(tags), valid_strings(folders), valid_strings(where)
        filters = SearchFilters.build(
            tags=tags, folders=folders, after=after, before=before, where=where, min_score=min_score
        )
        return self.orchestrator.search(
            valid_text(query), top_k=top_k, mode=mode, filters=filters, explain=explain
        )

    def close(self) -> None:
        if self._orchestrator is not None:
            self._orchestrator.close()
            self._orchestrator = None

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
