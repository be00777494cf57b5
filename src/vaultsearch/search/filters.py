"""Filters over note metadata, turned into the set of chunk ids a search may return.

They are applied inside retrieval (FAISS and Tantivy only see allowed ids), not by
cutting a top-k list afterwards, so a filtered query still returns k results when
k exist.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from typing import Any

from vaultsearch.errors import QueryError
from vaultsearch.search.request import KINDS

_GLOB_CHARS = set("*?[")
VAULT = "vault"
"""The name a scope uses for the vault's own notes (their ``source`` is empty)."""


@dataclass(frozen=True, slots=True)
class NoteMeta:
    id: int
    path: str
    title: str
    tags: tuple[str, ...]
    frontmatter: Mapping[str, Any]
    date: float
    source: str = ""
    kind: str = "note"
    language: str = ""

    @property
    def rel_path(self) -> str:
        """The path inside its source (the note id without ``source:``)."""
        return self.path[len(self.source) + 1 :] if self.source else self.path


def parse_date(value: date | datetime | str | None, name: str, end: bool = False) -> float | None:
    """Epoch seconds; a bare date means the start of that day (UTC)."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime.combine(value, time.min)
    else:
        try:
            dt = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError:
            raise QueryError(
                f"The '{name}' filter {value!r} is not a date; use YYYY-MM-DD "
                "or an ISO date-time such as 2024-05-01T12:00."
            ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def tag_matches(wanted: str, tags: Iterable[str]) -> bool:
    """Hierarchical: ``project`` matches ``project`` and ``project/alpha``, any case."""
    w = wanted.lower().lstrip("#").rstrip("/")
    return any(t.lower() == w or t.lower().startswith(w + "/") for t in tags)


def folder_matches(spec: str, path: str) -> bool:
    """Three forms: ``/a/b`` from the vault root, a glob over folder paths (matching a
    folder or any of its ancestors), or a folder name anywhere. A glob's trailing
    ``/**`` (``hooks/**``, ``**/hooks/**``) means the folder and everything below it,
    which matching ancestors already gives, so it is dropped rather than demanding a
    subfolder."""
    folder = path.rsplit("/", 1)[0] if "/" in path else ""
    if any(c in spec for c in _GLOB_CHARS):
        glob = spec.strip("/")
        while glob.endswith("/**"):
            glob = glob[:-3]
        if glob in ("", "**"):
            return True
        pattern = _folder_glob(glob)
        parts = folder.split("/") if folder else []
        return any(pattern.fullmatch("/".join(parts[:i])) for i in range(1, len(parts) + 1))
    if spec.startswith("/"):
        root = spec.strip("/")
        return root == "" or folder == root or folder.startswith(root + "/")
    name = spec.strip("/")
    parts = folder.split("/") if folder else []
    if "/" in name:
        n = name.split("/")
        return any(parts[i : i + len(n)] == n for i in range(len(parts)))
    return name in parts


@functools.lru_cache(maxsize=256)
def _folder_glob(glob: str) -> re.Pattern[str]:
    """``*`` and ``?`` stay within one folder name, ``**`` spans any depth."""
    out = []
    for piece in re.split(r"(\*\*/?|\*|\?)", glob):
        if piece.startswith("**"):
            out.append("(?:.*/)?" if piece.endswith("/") else ".*")
        elif piece == "*":
            out.append("[^/]*")
        elif piece == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(piece))
    return re.compile("".join(out))


def _value_matches(actual: Any, wanted: Any) -> bool:
    options = wanted if isinstance(wanted, list) else [wanted]
    values = actual if isinstance(actual, list) else [actual]
    norm = {_norm(v) for v in values}
    return any(_norm(o) in norm for o in options)


def _norm(v: Any) -> str:
    return str(v).strip().lower() if not isinstance(v, bool) else str(v).lower()


@dataclass(frozen=True, slots=True)
class SearchFilters:
    tags: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    after: float | None = None
    before: float | None = None
    where: Mapping[str, Any] = field(default_factory=dict)
    min_score: float | None = None
    scope: Scope = field(default_factory=lambda: Scope())

    @classmethod
    def build(
        cls,
        tags: Iterable[str] | None = None,
        folders: Iterable[str] | None = None,
        after: date | datetime | str | None = None,
        before: date | datetime | str | None = None,
        where: Mapping[str, Any] | None = None,
        min_score: float | None = None,
        scope: Scope | None = None,
    ) -> SearchFilters:
        if isinstance(tags, str) or isinstance(folders, str):
            raise QueryError("'tags' and 'folders' take a list of strings, not one string.")
        if where is not None and not isinstance(where, Mapping):
            raise QueryError("'where' takes a mapping of frontmatter field to value or list.")
        a, b = parse_date(after, "after"), parse_date(before, "before")
        if a is not None and b is not None and a > b:
            raise QueryError(f"The 'after' date {after} is later than the 'before' date {before}.")
        return cls(
            tuple(t for t in (tags or ()) if t),
            tuple(f for f in (folders or ()) if f),
            (),
            a,
            b,
            dict(where or {}),
            min_score,
            scope or Scope(),
        )

    def with_query(self, tags: Iterable[str], paths: Iterable[str]) -> SearchFilters:
        """Add the ``tag:`` and ``path:`` operators found in the query text."""
        from dataclasses import replace

        return replace(self, tags=self.tags + tuple(tags), paths=self.paths + tuple(paths))

    @property
    def restricts_notes(self) -> bool:
        return bool(
            self.tags
            or self.folders
            or self.paths
            or self.where
            or self.after is not None
            or self.before is not None
            or self.scope.restricts
        )

    def accepts(self, note: NoteMeta) -> bool:
        if not self.scope.accepts(note):
            return False
        if self.tags and not all(tag_matches(t, note.tags) for t in self.tags):
            return False
        if self.folders and not any(folder_matches(f, note.path) for f in self.folders):
            return False
        if self.paths and not all(p.lower() in note.path.lower() for p in self.paths):
            return False
        if self.after is not None and note.date < self.after:
            return False
        if self.before is not None and note.date >= self.before:
            return False
        for key, wanted in self.where.items():
            if key not in note.frontmatter or not _value_matches(note.frontmatter[key], wanted):
                return False
        return True


def _names(value: Iterable[str] | None, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        raise QueryError(f"'{what}' takes a list of strings, not one string.")
    out = tuple(v.strip() for v in value if isinstance(v, str) and v.strip())
    if len(out) != len([v for v in value if not isinstance(v, str) or v.strip()]):
        raise QueryError(f"'{what}' takes a list of strings.")
    return out


@dataclass(frozen=True, slots=True)
class Scope:
    """Where a search may look: sources, kinds of file, path prefixes, exact files.

    Any value of one kind of filter will do (OR); every kind given must hold (AND). A
    prefix or a file is matched against the path inside the source and against the
    whole note id, so ``src/`` and ``code:src/`` both work.
    """

    sources: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    files: tuple[str, ...] = ()

    @classmethod
    def build(
        cls,
        sources: Iterable[str] | None = None,
        kinds: Iterable[str] | None = None,
        prefixes: Iterable[str] | None = None,
        files: Iterable[str] | None = None,
        known_sources: Iterable[str] | None = None,
    ) -> Scope:
        s, k = _names(sources, "sources"), _names(kinds, "kinds")
        p, f = _names(prefixes, "path_prefix"), _names(files, "files")
        bad = sorted({x for x in k if x not in KINDS})
        if bad:
            raise QueryError(f"Unknown kind {', '.join(bad)}; kinds are: {', '.join(KINDS)}.")
        if known_sources is not None:
            known = {VAULT, *known_sources}
            missing = sorted(set(s) - known)
            if missing:
                raise QueryError(
                    f"There is no source {', '.join(map(repr, missing))}; "
                    f"sources: {', '.join(sorted(known))}."
                )
        return cls(s, k, tuple(x.lstrip("/") for x in p), tuple(x.lstrip("/") for x in f))

    @property
    def restricts(self) -> bool:
        return bool(self.sources or self.kinds or self.prefixes or self.files)

    def accepts(self, note: NoteMeta) -> bool:
        if self.sources and (note.source or VAULT) not in self.sources:
            return False
        if self.kinds and note.kind not in self.kinds:
            return False
        rel = note.rel_path
        if self.prefixes and not any(
            rel.startswith(p) or note.path.startswith(p) for p in self.prefixes
        ):
            return False
        return not self.files or any(f in (rel, note.path) for f in self.files)
