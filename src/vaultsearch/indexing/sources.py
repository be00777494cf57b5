"""The vault and its named sources as one set of files, each under its note id.

Every source is scanned by the vault's rules (built-in excludes, ignore files, the
parser map, the size limit), each from its own root with its own excludes, include
globs and parser overrides. A source that cannot be read this run (a folder that is
gone, a first clone that failed) is reported and left as it was indexed: an unmounted
disk must not delete what the index holds for it. A git source that cannot be fetched
is read from its clone as last fetched, so a network failure deletes nothing either,
not even in a full rebuild.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import pathspec

from vaultsearch.config import Config
from vaultsearch.errors import VaultsearchError
from vaultsearch.indexing.gitsource import GitSourceError, head_commit, sync_clone, tracked_files
from vaultsearch.indexing.parsebox import ParseBox
from vaultsearch.indexing.scan import (
    FileInfo,
    IgnoreRules,
    _infos,
    _walk,
    scan_paths,
    scan_vault,
)
from vaultsearch.models import ParsedNote
from vaultsearch.parsers import Parser, ParserRegistry, parse_content
from vaultsearch.sourceconfig import (
    ID_SEPARATOR,
    VAULT_SOURCE,
    SourceConfig,
    note_id,
    split_note_id,
)


@dataclass
class SourceScan:
    files: dict[str, FileInfo] = field(default_factory=dict)
    """Note id -> file, of every source that could be read."""
    unavailable: dict[str, str] = field(default_factory=dict)
    """Source name -> why it was not read this run (its notes stay as indexed)."""
    commits: dict[str, str] = field(default_factory=dict)
    """Git source name -> the commit its files come from."""
    read: set[str] = field(default_factory=set)
    """The sources read whole (``vault`` for the vault's own notes)."""
    never_read: set[str] = field(default_factory=set)
    """Git sources without a clone yet: nothing of them can be in the index."""
    stale: dict[str, str] = field(default_factory=dict)
    """Git source name -> why it could not be fetched: read from its last fetched commit."""


def clone_root(vault: Path, index_dir: Path, config: Config) -> Path:
    if config.vault.clone_dir:
        p = Path(config.vault.clone_dir).expanduser()
        return p if p.is_absolute() else vault / p
    return index_dir / "clones"


class SourceSet:
    """The named sources of one config, with the vault as the unnamed one."""

    def __init__(self, vault: Path, index_dir: Path, config: Config) -> None:
        self.vault = vault
        self.index_dir = index_dir
        self.config = config
        self.by_name = {s.name: s for s in config.sources}
        self.names = frozenset(self.by_name)
        self.clones = clone_root(vault, index_dir, config)
        self._global = ParserRegistry(config.parsers)
        self._parsers = {
            s.name: ParserRegistry(_merged(s.parsers, config.parsers)) for s in config.sources
        }
        self._includes = {
            s.name: pathspec.PathSpec.from_lines("gitignore", s.include) for s in config.sources
        }

    # --- ids and parsers ------------------------------------------------------------
    def split(self, path: str) -> tuple[str, str]:
        return split_note_id(path, self.names)

    def parser_for(self, path: str) -> Parser | None:
        source, rel = self.split(path)
        return (self._parsers[source] if source else self._global).parser_for(rel)

    def parse(
        self, path: str, text: str, data: bytes = b"", box: ParseBox | None = None
    ) -> ParsedNote | None:
        """Parsed under the path inside its source (what titles, relative links and code
        module names see), carrying its note id; ``data`` for binary parsers (PDF);
        in ``box``, when given, under its time and memory budget."""
        source, rel = self.split(path)
        parser = self.parser_for(path)
        if parser is None:
            return None
        if box is not None:
            note = box.parse(parser, rel, text, data)
        else:
            note = parse_content(parser, rel, text, data)
        return replace(note, path=path) if source else note

    def root(self, source: SourceConfig) -> Path:
        if source.type == "git":
            return self.clones / source.name
        p = Path(source.path).expanduser()
        return (p if p.is_absolute() else self.vault / p).resolve()

    def file_path(self, path: str) -> Path | None:
        """Where the file of a note id lies on disk (None for an unknown source)."""
        source, rel = self.split(path)
        if not source:
            return self.vault / rel
        return self.root(self.by_name[source]) / rel

    def ignore_rules(self, source: SourceConfig) -> IgnoreRules:
        """The source's excludes and ignore files, read now (a scan and the watcher)."""
        return IgnoreRules(self.root(source), source.exclude, self.index_dir)

    def included(self, source: SourceConfig, rel: str) -> bool:
        """Whether a file (or a folder, ``rel`` ending in ``/``) passes the include globs."""
        return (
            not source.include or rel.endswith("/") or self._includes[source.name].match_file(rel)
        )

    def max_size(self, source: SourceConfig | None) -> int:
        if source is not None and source.max_file_size:
            return source.max_file_size
        return self.config.vault.max_file_size

    @property
    def read_limit(self) -> int:
        """What a file may be read up to: each source's own limit is applied in its scan."""
        return max([self.max_size(None), *(self.max_size(s) for s in self.config.sources)])

    # --- scanning ---------------------------------------------------------------------
    def scan(
        self,
        vault_rules: IgnoreRules,
        only: str | None = None,
        sync: bool = False,
        rels: Sequence[str] | None = None,
    ) -> SourceScan:
        """Files of the vault and every source, or of ``only`` one (a name, or
        ``vault``); ``sync`` fetches git sources first (index runs, never ``check``).
        ``rels`` (paths inside the folder source ``only``, from the watcher) limits the
        look to them: a few stats instead of a walk of the whole source."""
        out = SourceScan()
        if only in (None, VAULT_SOURCE):
            files = scan_vault(self.vault, vault_rules, self._global)
            out.files.update(self._vault_files(files))
            out.read.add(VAULT_SOURCE)
        for source in self.config.sources:
            if only not in (None, source.name):
                continue
            try:
                files, commit = self._scan_source(source, sync, out.stale, rels)
            except (VaultsearchError, OSError) as exc:
                out.unavailable[source.name] = str(exc)
                if source.type == "git" and not (self.root(source) / ".git").is_dir():
                    out.never_read.add(source.name)
                continue
            out.files.update(files)
            out.read.add(source.name)
            if commit:
                out.commits[source.name] = commit
        return out

    def _vault_files(self, files: dict[str, FileInfo]) -> dict[str, FileInfo]:
        limit = self.max_size(None)
        out = {}
        for path, info in files.items():
            head, sep, _ = path.partition(ID_SEPARATOR)
            if sep and "/" not in head and head in self.names:
                reason = (
                    f"its path reads as a file of the source '{head}' (name:path); "
                    "rename the file to index it"
                )
                info = replace(info, skip=reason)
            out[path] = _limited(info, limit, "vault.max_file_size")
        return out

    def _scan_source(
        self,
        source: SourceConfig,
        sync: bool,
        stale: dict[str, str],
        rels: Sequence[str] | None = None,
    ) -> tuple[dict[str, FileInfo], str | None]:
        """A git source whose fetch fails but whose clone is there is read from the
        commit last fetched, and noted in ``stale``: otherwise a full rebuild during a
        network failure would leave out every note of it."""
        root = self.root(source)
        commit = None
        if source.type == "git":
            if sync:
                try:
                    commit = sync_clone(source.url, source.branch, root)
                except GitSourceError as exc:
                    commit = head_commit(root) if (root / ".git").is_dir() else None
                    if commit is None:
                        raise
                    stale[source.name] = (
                        f"{exc.message} Indexed the last fetched commit {commit[:12]}."
                    )
            elif not (root / ".git").is_dir():
                raise VaultsearchError(f"The git source '{source.name}' has not been cloned yet.")
            else:
                commit = head_commit(root)
        elif not root.is_dir():
            raise VaultsearchError(f"The folder {root} of source '{source.name}' does not exist.")
        rules = self.ignore_rules(source)
        parsers = self._parsers[source.name]
        if source.type == "folder" and rels is not None:
            found = scan_paths(root, rules, parsers, rels)
            files = {rel: info for rel, info in found.items() if self.included(source, rel)}
        else:
            listed = (
                [(rel, root / rel) for rel in tracked_files(root) if not rules.excludes(rel)]
                if source.type == "git"
                else _walk(root.resolve(), rules)
            )
            kept = [(rel, path) for rel, path in listed if self.included(source, rel)]
            files = _infos(kept, parsers, root.resolve())
        limit = self.max_size(source)
        key = (
            f"max_file_size of source '{source.name}'"
            if source.max_file_size
            else ("vault.max_file_size")
        )
        out = {}
        for rel, info in files.items():
            path = note_id(source.name, rel)
            out[path] = _limited(replace(info, path=path), limit, key)
        return out, commit


def _merged(first: dict[str, str], then: dict[str, str]) -> dict[str, str]:
    """The source's globs ahead of the global ones, its own winning a glob both name."""
    return {**first, **{glob: name for glob, name in then.items() if glob not in first}}


def _limited(info: FileInfo, limit: int, key: str) -> FileInfo:
    if info.skip is None and info.size > limit:
        return replace(info, skip=f"file is {info.size} bytes, over {key} ({limit})")
    return info


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
