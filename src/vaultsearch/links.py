"""Resolve link targets to note paths the way Obsidian does, without touching the disk.

Obsidian lets a link name a note by path, by bare file name or by alias, ignoring case
and the ``.md`` extension. Every lookup here is a dict probe prepared at build time.

Which links a change of notes can move: every table the resolver probes is keyed by a
form of a note's path or alias whose last segment, lower-cased and without a note
extension, is that entry's *name key* (``note_keys``); a link only ever probes entries
under its own target's and label's name key (``link_key``). So after notes are added,
removed, moved or change aliases, only the links whose key is among those notes' old
and new keys, and the links of those notes themselves, can resolve differently; an
update re-resolves just them (``indexing/linking.py``).
"""

from __future__ import annotations

import bisect
import posixpath
from collections.abc import Callable, Iterable

_NOTE_EXTENSIONS = (".md", ".markdown")


def _rank(path: str) -> tuple[int, str]:
    """Several candidates: the shortest path wins, then the lexicographically first."""
    return len(path), path


def _strip_note_ext(path: str) -> str | None:
    lower = path.lower()
    for ext in _NOTE_EXTENSIONS:
        if lower.endswith(ext) and len(path) > len(ext):
            return path[: -len(ext)]
    return None


def _clean(path: str) -> str:
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/")


class LinkResolver:
    """Built once from ``(path, aliases)`` of every file; paths are vault-relative POSIX.

    Attachments may be included too: a target such as ``image.png`` only ever resolves to
    a file with exactly that name, never to a note.

    ``add`` and ``remove`` change the files one at a time and leave the resolver as one
    built from the files that remain (``tests/test_link_resolution.py`` compares them):
    a long-lived writer follows a note's creation, move or deletion without building
    the vault's resolver again (5 s at a million chunks, ``indexing/linking.py``).
    """

    def __init__(self, notes: Iterable[tuple[str, Iterable[str]]]) -> None:
        self._exact: dict[str, str] = {}
        self._stems: dict[str, str] = {}
        self._exact_ci: dict[str, str] = {}
        self._stems_ci: dict[str, str] = {}
        self._names: dict[str, list[str]] = {}
        self._aliases: dict[str, str] = {}
        self._held: dict[str, tuple[str, ...] | list[tuple[str, ...]]] = {}
        """Path -> the alias keys it was added with (a list of them, one per adding, for
        a path added more than once): what ``remove`` takes back. One shared empty
        tuple for a file without aliases, most of them: a list per file made building
        the 300k files of the million-chunk vault 35% slower (2.6 CPU-s, not 1.9)."""
        self._alias_paths: dict[str, list[str]] = {}
        """Alias key -> every path holding it, once per holding: where the next best is
        found when the best goes."""
        for raw_path, aliases in notes:
            path = _clean(raw_path)
            if not path:
                continue
            self._add(path, aliases, list.append)
        for paths in self._names.values():
            paths.sort(key=_rank)

    def add(self, raw_path: str, aliases: Iterable[str]) -> None:
        """One more file, as if it had been among those built from."""
        path = _clean(raw_path)
        if path:
            self._add(path, aliases, _insert_ranked)

    def remove(self, raw_path: str) -> bool:
        """Take back one ``add`` (or build entry) of this path, with its aliases; False
        when it was not there."""
        path = _clean(raw_path)
        held = self._held.get(path)
        if held is None:
            return False
        if isinstance(held, list):
            alias_keys = held.pop()
            if len(held) == 1:
                self._held[path] = held[0]
        else:
            alias_keys = held
            del self._held[path], self._exact[path]
        name = posixpath.basename(path).lower()
        stem = _strip_note_ext(path)
        stem_name = None if stem is None else posixpath.basename(stem).lower()
        names = [name] if stem_name in (None, name) else [name, stem_name]  # as ``_add``
        for key in names:
            self._names[key].remove(path)
        self._rebest(self._exact_ci, path.lower(), path, name, str.lower)
        if stem is not None and stem_name is not None:
            self._rebest(self._stems, stem, path, stem_name, _strip_note_ext)
            self._rebest(self._stems_ci, stem.lower(), path, stem_name, _lower_stem)
        for key in names:
            if not self._names[key]:
                del self._names[key]
        for key in alias_keys:
            holders = self._alias_paths[key]
            holders.remove(path)
            if not holders:
                del self._aliases[key], self._alias_paths[key]
            elif self._aliases[key] == path and path not in holders:
                self._aliases[key] = min(holders, key=_rank)
        return True

    def _rebest(
        self,
        table: dict[str, str],
        key: str,
        gone: str,
        name: str,
        form: Callable[[str], str | None],
    ) -> None:
        """After ``gone`` was removed: the best of the paths still under ``key``. They all
        share one name key, so they are all in ``_names[name]``, best first."""
        if table.get(key) != gone:
            return
        for path in self._names.get(name, ()):
            if form(path) == key:
                table[key] = path
                return
        del table[key]

    def _add(
        self, path: str, aliases: Iterable[str], put: Callable[[list[str], str], None]
    ) -> None:
        self._exact[path] = path
        _keep_best(self._exact_ci, path.lower(), path)
        name = posixpath.basename(path).lower()
        put(self._names.setdefault(name, []), path)
        stem = _strip_note_ext(path)
        alias_keys: tuple[str, ...] = ()
        if stem is not None:
            _keep_best(self._stems, stem, path)
            _keep_best(self._stems_ci, stem.lower(), path)
            stem_name = posixpath.basename(stem).lower()
            if stem_name != name:
                put(self._names.setdefault(stem_name, []), path)
            alias_keys = tuple(
                a.strip().lower() for a in aliases if isinstance(a, str) and a.strip()
            )
            for key in alias_keys:
                self._alias_paths.setdefault(key, []).append(path)
                _keep_best(self._aliases, key, path)
        held = self._held.get(path)
        if held is None:
            self._held[path] = alias_keys
        elif isinstance(held, list):
            held.append(alias_keys)
        else:
            self._held[path] = [held, alias_keys]

    def resolve(self, target: str, source_path: str | None = None) -> str | None:
        """Path, then path relative to the source note, then file name, then alias."""
        cleaned = _clean(target)
        if not cleaned:
            return None
        for candidate in self._path_candidates(target.strip(), cleaned, source_path):
            found = self._by_path(candidate)
            if found is not None:
                return found
        return self._by_name(cleaned) or self._aliases.get(cleaned.lower())

    def resolve_link(
        self, target: str, label: str | None, source_path: str | None = None
    ) -> str | None:
        """Like ``resolve``, but Dendron writes ``[[label|note.name]]``, the reverse of
        Obsidian: when the target does not resolve and the label does, the label is
        what the author linked to (in the 1,012-note Dendron vault this resolves 550
        more links than the target alone, 1,030 of 3,136)."""
        found = self.resolve(target, source_path)
        if found is None and label:
            found = self.resolve(label, source_path)
        return found

    def _path_candidates(self, raw: str, cleaned: str, source: str | None) -> list[str]:
        relative = raw.startswith(("./", "../"))
        out = [] if relative else [cleaned]
        if source is not None:
            folder = posixpath.dirname(_clean(source))
            joined = posixpath.normpath(posixpath.join(folder, raw.replace("\\", "/")))
            if joined != "." and not joined.startswith("../") and joined not in out:
                out.append(joined)
        if relative and not out:
            normalized = posixpath.normpath(cleaned)
            if not normalized.startswith("../"):
                out.append(normalized)
        return out

    def _by_path(self, path: str) -> str | None:
        for table, key in (
            (self._exact, path),
            (self._stems, path),
            (self._exact_ci, path.lower()),
            (self._stems_ci, path.lower()),
        ):
            if key in table:
                return table[key]
        return None

    def _by_name(self, target: str) -> str | None:
        """A bare name matches any folder; ``sub/Note`` must match the end of the path."""
        lower = target.lower()
        candidates = self._names.get(posixpath.basename(lower), [])
        if "/" not in lower:
            return candidates[0] if candidates else None
        for path in candidates:
            path_lower = path.lower()
            stem = _strip_note_ext(path_lower)
            for form in (path_lower, stem):
                if form is not None and (form == lower or form.endswith("/" + lower)):
                    return path
        return None


def _insert_ranked(paths: list[str], path: str) -> None:
    bisect.insort(paths, path, key=_rank)


def _lower_stem(path: str) -> str | None:
    stem = _strip_note_ext(path)
    return None if stem is None else stem.lower()


def _keep_best(table: dict[str, str], key: str, path: str) -> None:
    current = table.get(key)
    if current is None or _rank(path) < _rank(current):
        table[key] = path


def _name_key(lower: str) -> str:
    base = posixpath.basename(lower)
    stem = _strip_note_ext(base)
    return stem if stem is not None else base


def note_keys(path: str, aliases: Iterable[object]) -> set[str]:
    """The name keys under which a note (source-relative path) can be found."""
    keys = {_name_key(_clean(path).lower())}
    keys.update(_name_key(a.strip().lower()) for a in aliases if isinstance(a, str) and a.strip())
    return keys


ALWAYS = "*"
"""The key of a link with no single name key: it is resolved again on every update."""


def link_key(target: str) -> str:
    """The name key every lookup of ``target`` probes under; ``ALWAYS`` when it has no
    single one (a path ending in ``/``, ``.`` or ``..``)."""
    cleaned = _clean(target).lower()
    last = cleaned.rsplit("/", 1)[-1]
    if cleaned and (last in ("", ".", "..") or posixpath.basename(target.strip()) in (".", "..")):
        return ALWAYS
    return _name_key(cleaned)
