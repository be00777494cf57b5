"""``Vault``: the one object a Python user needs, and what the CLI and MCP server use."""

from __future__ import annotations

import os
import shutil
import threading
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultsearch.config import Config, load_config
from vaultsearch.embedding import Embedder
from vaultsearch.errors import (
    ConfigError,
    IndexBusyError,
    IndexCorruptError,
    IndexMissingError,
    VaultNotFoundError,
)
from vaultsearch.sourceconfig import VAULT_SOURCE, SourceConfig
from vaultsearch.store.counts import index_counts
from vaultsearch.store.layout import IndexLayout
from vaultsearch.store.manifest import SPEC_VERSION, read_manifest, read_state
from vaultsearch.validtext import valid_strings, valid_text

if TYPE_CHECKING:
    from vaultsearch.app.searchanswer import SearchAnswer
    from vaultsearch.indexing.manager import IndexManager
    from vaultsearch.indexing.overview import FileCounts
    from vaultsearch.indexing.progress import Progress
    from vaultsearch.indexing.runner import IndexRunner
    from vaultsearch.indexing.scan import FileInfo, IgnoreRules
    from vaultsearch.indexing.sources import SourceSet
    from vaultsearch.indexing.summary import IndexCheck, IndexSummary
    from vaultsearch.models import SearchHits
    from vaultsearch.search.orchestrator import QueryOrchestrator
    from vaultsearch.search.request import SearchRequest, VaultTerms
    from vaultsearch.search.snapshot import Snapshot
    from vaultsearch.store.catalog import Catalog
    from vaultsearch.store.milvus.writer import PushSummary
    from vaultsearch.store.verify import CheckReport


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
        self.last_push: PushSummary | None = None
        """What the last index run pushed to a Milvus store (``store.backend``)."""

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        index_dir: str | os.PathLike[str] | None = None,
        config: str | os.PathLike[str] | Config | None = None,
        flags: tuple[str, ...] = (),
    ) -> Vault:
        """``flags`` are ``section.key=value`` settings over the config file, ``.env`` and
        ``VAULTSEARCH_<SECTION>_<KEY>`` variables (``--set`` on the command line)."""
        root = Path(path).expanduser()
        if not root.is_dir():
            what = "is not a folder" if root.exists() else "does not exist"
            raise VaultNotFoundError(
                f"The vault folder {root} {what}.",
                fix="pass the path of a folder of Markdown notes, e.g. 'vaultsearch index ~/Notes'",
            )
        root = root.resolve()
        cfg = load_config(config, root, tuple(flags))
        return cls(root, resolve_index_dir(root, cfg, index_dir), cfg)

    @property
    def index_dir(self) -> Path:
        return self.layout.root

    def manager(self) -> IndexManager:
        """One per Vault: it owns this process's writer lock on the index."""
        from vaultsearch.indexing.manager import IndexManager

        with self._lock:
            if self._manager is None:
                self._manager = IndexManager(self.root, self.index_dir, self.config, self.embedder)
            return self._manager

    # What the front doors ask of the files and the writer, without reaching into it.
    @property
    def source_set(self) -> SourceSet:
        """The vault and its named sources: note ids, file paths, read limits."""
        return self.manager().sources

    @property
    def ignore_rules(self) -> IgnoreRules:
        return self.manager().rules

    def files(self) -> dict[str, FileInfo]:
        """Every file of the vault and its sources (by note id), as a scan sees it now."""
        return self.manager().scan()

    def file_counts(self) -> FileCounts:
        """Files indexed, pending and failed (reads the live catalog; never writes)."""
        from vaultsearch.indexing.overview import file_counts

        return file_counts(self.manager())

    def rebuild_check(self) -> IndexCheck | None:
        """Why the next run must rebuild, or None; reads no file of the vault."""
        return self.manager().rebuild_check()

    def verify(self) -> CheckReport:
        """``check``: every file of the live generation, then the files against it."""
        return self.manager().verify()

    def repair(self) -> IndexSummary:
        """``check --repair``: derived indexes rebuilt from the catalog, nothing embedded
        that any store still holds."""
        return self.manager().repair()

    @property
    def indexing_now(self) -> bool:
        """Whether this process's runner is updating or rebuilding the index, whoever
        started it (the watcher, an agent, the Index Console page)."""
        runner = self._runner
        return runner is not None and runner.snapshot().busy

    def runner(self) -> IndexRunner:
        """One per Vault: the runs of a long-lived process, one at a time, with their
        progress, a cancel, and a JSON Lines progress log in the index folder."""
        from vaultsearch.indexing.runner import LOG_NAME, IndexRunner

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
            manager.use_config(config)

        if self._runner is not None:
            self._runner.when_idle(apply)
        else:
            apply()

    def index(
        self,
        full: bool = False,
        progress: Progress | None = None,
        source: str | None = None,
        reason: str | None = None,
    ) -> IndexSummary:
        """Bring the index up to date with the vault and its sources (or with one
        ``source``; ``vault`` is the vault's own notes); returns what changed."""
        if source is not None and source != VAULT_SOURCE and full:
            raise ConfigError(
                "--full rebuilds every source; it cannot be limited to one.",
                fix="drop --source, or drop --full",
            )
        if source is not None and source != VAULT_SOURCE:
            self._known_source(source)
        summary = self.manager().update(full=full, progress=progress, source=source, reason=reason)
        if self._orchestrator is not None:
            self._orchestrator.refresh()
        if self.config.store.backend == "milvus":
            self.last_push = self.push()
        return summary

    def push(self, uri: str | None = None, full: bool = False) -> PushSummary:
        """Hand the published index to a Milvus store (``store.uri`` unless ``uri``):
        only the rows that changed, with the catalog's vectors; nothing is embedded."""
        from vaultsearch.app.milvus_push import push
        from vaultsearch.store.milvus.target import MilvusTarget

        return push(self, MilvusTarget.from_config(self.config, uri), full)

    def check(self) -> IndexCheck:
        return self.manager().check()

    # --- sources --------------------------------------------------------------
    def _known_source(self, name: str) -> None:
        """A configured source, or one the index still holds (removed from the config:
        an index run of it removes its files)."""
        if name in {s.name for s in self.config.sources}:
            return
        if self.layout.exists() and any(
            n.source == name for n in self.orchestrator.snapshot().notes.values()
        ):
            return
        known = ", ".join([VAULT_SOURCE, *(s.name for s in self.config.sources)])
        raise ConfigError(
            f"There is no source named '{name}' (sources: {known}).",
            fix="vaultsearch sources list",
        )

    def add_source(self, source: SourceConfig) -> Path:
        """Persist a new named source in the managed sources.toml; not yet indexed."""
        from vaultsearch.app.sourceedit import add_managed

        path = add_managed(self.root, self.config.sources, source)
        self._reload_sources()
        return path

    def remove_source(self, name: str) -> IndexSummary:
        """Forget a source and remove everything the index holds of it (notes, chunks,
        vectors, keyword documents, graph nodes) and its clone."""
        from vaultsearch.app.sourceedit import remove_managed

        manager = self.manager()
        acquired = not manager.lock.held
        if acquired and not manager.lock.acquire():
            raise IndexBusyError(
                f"Another vaultsearch process is writing the index at {self.index_dir}; "
                f"the source '{name}' was not removed.",
                fix="stop that 'vaultsearch watch/mcp' (or wait for its run), then retry",
            )
        try:
            removed = remove_managed(self.root, self.config.sources, name)
            clones = manager.sources.clones
            self._reload_sources()
            from vaultsearch.indexing.summary import IndexSummary

            summary = IndexSummary()
            if self.layout.exists():
                summary = manager.update(source=name)
                if self._orchestrator is not None:
                    self._orchestrator.refresh()
        finally:
            if acquired:
                manager.lock.release()
        if removed.type == "git":
            shutil.rmtree(clones / removed.name, ignore_errors=True)
        return summary

    def _reload_sources(self) -> None:
        from vaultsearch.config import with_sources
        from vaultsearch.sourceconfig import read_managed

        own = tuple(s for s in self.config.sources if s.origin == self.config.source)
        self.config = with_sources(self.config, own + read_managed(self.root))
        with self._lock:
            if self._manager is not None:
                self._manager.use_sources(self.config)

    def sources(self) -> list[dict[str, Any]]:
        """Every source with what the index holds of it: name, type, path or url,
        files, chunks, failures, when it was last read (and from which commit)."""
        if not self.layout.exists():
            return self._sources(None)
        from vaultsearch.search.glance import glance

        with glance(self.layout, self.config, self._held()) as view:
            return self._sources(view.catalog)

    def _sources(self, catalog: Catalog | None) -> list[dict[str, Any]]:
        from vaultsearch.indexing.manager import read_sources_state

        state = read_sources_state(self.index_dir)
        counts: dict[str, list[int]] = {}
        if catalog is not None:
            source = catalog.column("source")
            for name, files, chunks in catalog.db.execute(
                f"SELECT {source}, COUNT(*), SUM((SELECT COUNT(*) FROM chunks c"
                f" WHERE c.note_id = n.id)) FROM notes n GROUP BY {source}"
            ):
                counts[name or VAULT_SOURCE] = [files, chunks or 0, 0]
            failures = catalog.failures()
            split = self.manager().sources.split if failures else None
            for path in failures:
                assert split is not None
                counts.setdefault(split(path)[0] or VAULT_SOURCE, [0, 0, 0])[2] += 1
        rows = [(VAULT_SOURCE, "folder", str(self.root), "")]
        rows += [(s.name, s.type, s.location, s.branch) for s in self.config.sources]
        out = []
        for name, kind, where, branch in rows:
            files, chunks, failed = counts.get(name, [0, 0, 0])
            entry: dict[str, Any] = {"name": name, "type": kind}
            entry["url" if kind == "git" else "path"] = where
            if branch:
                entry["branch"] = branch
            entry |= {"files": files, "chunks": chunks, "failed": failed}
            entry |= {k: v for k, v in state.get(name, {}).items() if v}
            out.append(entry)
        return out

    def require_index(self) -> None:
        if not self.layout.exists():
            from vaultsearch.store.generations import newest_intact

            # a generation published once left the root manifest; one that never was is
            # a first build in progress or cancelled, which the next index run resumes
            found = newest_intact(self.layout) if self.layout.manifest.is_file() else None
            if found is not None:
                raise IndexCorruptError(
                    f"The index in {self.index_dir} cannot be opened: CURRENT or the "
                    f"catalog is missing or unreadable (generation {found.name} is on disk).",
                    fix=f"vaultsearch check --repair '{self.root}'",
                )
            raise IndexMissingError(
                f"No index has been built for {self.root} yet (looked in {self.index_dir}).",
                fix=f"vaultsearch index '{self.root}'",
            )

    def status(self) -> dict[str, Any]:
        """The index as readers search it: ``IndexCounts`` (notes, chunks, sentences,
        links, broken links: the numbers every surface shows) from the snapshot's
        catalog, and beside them the derived indexes' own sizes (vectors, keyword
        documents, graph edges), which ``check`` compares with those; the failed files,
        and in ``to_retry`` (by the runs that tried them) those whose failure was not
        their fault, which the next run reads again (``fault.py``)."""
        from vaultsearch.search.glance import glance

        self.require_index()
        with glance(self.layout, self.config, self._held()) as view:
            generation = view.generation
            state = read_state(generation.root) or {}
            failures = view.catalog.failures()
            failed = {p: row.reason for p, row in failures.items()}
            to_retry = {p: row.tries for p, row in failures.items() if row.retried}
            counts = index_counts(view.catalog, state)
            derived = view.derived
            sources = self._sources(view.catalog)
        manifest = read_manifest(generation.root) or {}
        embedding = manifest.get("embedding", {})
        return {
            "vault": str(self.root),
            "index_dir": str(self.index_dir),
            **derived,
            **counts.to_dict(),
            "counts_line": counts.line(),
            "failed": failed,
            "to_retry": to_retry,
            "model": embedding.get("model"),
            "dimension": embedding.get("dimension"),
            "spec_version": manifest.get("spec_version", SPEC_VERSION),
            "size_on_disk": self.layout.size_on_disk(),
            "last_indexed": state.get("last_indexed"),
            "generation": state.get("generation", 0),
            "generation_folder": generation.name,
            "write_error": write_error(self.index_dir),
            "config": self.config.source,
            "sources": sources,
        }

    def _held(self) -> Snapshot | None:
        """The snapshot this Vault's searches hold, if one is open: ``status`` answers
        from it, else from the catalog and the state alone (``search/glance.py``)."""
        return self._orchestrator.held() if self._orchestrator is not None else None

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
        query: str | SearchRequest,
        top_k: int = 10,
        mode: str = "hybrid",
        tags: list[str] | None = None,
        folders: list[str] | None = None,
        after: date | datetime | str | None = None,
        before: date | datetime | str | None = None,
        where: dict[str, Any] | None = None,
        explain: bool = False,
        min_score: float | None = None,
        sources: list[str] | None = None,
        kinds: list[str] | None = None,
        path_prefix: list[str] | None = None,
        files: list[str] | None = None,
        min_similarity: float | None = None,
    ) -> SearchHits:
        """The best places in the vault for ``query``, best first, grouped per note.
        ``sources``, ``kinds`` (note, code, pdf, text), ``path_prefix`` and ``files``
        scope it: any value of one filter will do, every filter given must hold.
        ``min_similarity`` drops hits whose confidence (0-1) is below it. A
        ``SearchRequest`` may stand for all the arguments. A damaged derived index
        fails the search or sets ``degraded`` on the result."""
        from vaultsearch.search.request import SearchRequest

        if isinstance(query, SearchRequest):
            return self._search(query)
        stamp = lambda d: d.isoformat() if isinstance(d, date) else d  # noqa: E731
        return self._search(
            SearchRequest(
                query=query, top_k=top_k, mode=mode, tags=tags, folders=folders,  # type: ignore[arg-type]
                after=stamp(after), before=stamp(before), where=where, min_score=min_score,
                min_similarity=min_similarity, sources=sources, kinds=kinds,  # type: ignore[arg-type]
                path_prefix=path_prefix, files=files, explain=explain,
            )
        )  # fmt: skip

    def search_answer(self, request: SearchRequest) -> SearchAnswer:
        """The search as every surface answers it: the hits shaped by the request's
        ``chunks``, ``snippet_chars`` and ``full_text`` (``to_dict`` is the wire form)."""
        from dataclasses import replace

        from vaultsearch.app.searchanswer import SearchAnswer

        more = request.chunks > 1 and not request.explain  # the other passages ride on explain
        hits = self._search(replace(request, explain=True) if more else request)
        return SearchAnswer(request, hits)

    def _search(self, request: SearchRequest) -> SearchHits:
        from dataclasses import replace

        from vaultsearch.models import SearchHits
        from vaultsearch.search.filters import Scope, SearchFilters
        from vaultsearch.search.request import check_shape, validate

        texts = ("tags", "folders", "where", "sources", "kinds", "path_prefix", "files")
        request = replace(request, **{n: valid_strings(getattr(request, n)) for n in texts})
        r = check_shape(request)
        if r.mode != "keyword" and self._orchestrator is None and self._index_fits_model():
            self.embedder.load_in_background()  # while the index and its libraries open
        r = validate(r, self._terms(r))
        scope = Scope.build(
            r.sources, r.kinds, r.path_prefix, r.files,
            known_sources=[s.name for s in self.config.sources],
        )  # fmt: skip
        filters = SearchFilters.build(
            tags=r.tags, folders=r.folders, after=r.after, before=r.before, where=r.where,
            min_score=r.min_score, scope=scope,
        )  # fmt: skip
        hits = self.orchestrator.search(
            valid_text(r.query), top_k=r.top_k, mode=r.mode, filters=filters, explain=r.explain
        )
        if r.min_similarity is None:
            return hits
        kept = [h for h in hits if h.confidence >= r.min_similarity]
        return SearchHits(kept, degraded=hits.degraded)

    def _terms(self, request: SearchRequest) -> VaultTerms | None:
        """The index's tags, folders and fields, read only when a filter names one."""
        from vaultsearch.search.request import VaultTerms

        if not (request.tags or request.folders or request.where):
            return None
        try:
            return VaultTerms.of(self.orchestrator.snapshot().notes.values())
        except IndexMissingError:
            return None

    def _index_fits_model(self) -> bool:
        """An index exists and was built by the configured model: else the search fails
        before it needs the model, and a load started for it would outlive the call."""
        current = self.layout.current()
        manifest = read_manifest(current.root) if current is not None else None
        model = (manifest or {}).get("embedding", {}).get("model")
        return bool(model) and model == self.embedder.model_id

    def close(self) -> None:
        if self._manager is not None:
            self._manager.close()
        if self._orchestrator is not None:
            self._orchestrator.close()
            self._orchestrator = None

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
