"""Named sources: folders and git repositories indexed beside the vault.

They come from ``[[sources]]`` tables in the config file and from a managed file,
``<vault>/.vaultsearch/sources.toml``, that ``vaultsearch sources add/remove`` write.
The managed file holds nothing but ``[[sources]]`` tables, so the program can rewrite
it whole without touching the comments and layout of a config file a person edits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vaultsearch.errors import ConfigError
from vaultsearch.gitvalues import URL_FORMS, branch_problem, url_problem

SOURCE_TYPES = ("folder", "git")
MANAGED_NAME = "sources.toml"
ID_SEPARATOR = ":"
"""``name:rel/path``: Obsidian refuses ':' in note names and Windows in any file name,
so a vault note's own path practically never contains it (the scan refuses the rare one
that would read as a source's id)."""
VAULT_SOURCE = "vault"
"""What scopes and listings call the vault's own notes (their ids carry no prefix)."""
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_KEYS = ("name", "type", "path", "url", "branch", "include", "exclude", "parsers", "max_file_size")


@dataclass(frozen=True)
class SourceConfig:
    name: str
    type: str = "folder"
    path: str = ""
    """A folder source's folder; relative paths start at the vault."""
    url: str = ""
    """A git source's repository: an https, ssh or file URL, ``user@host:path`` or a
    local path (``gitvalues.url_problem``)."""
    branch: str = ""
    """Empty: the remote's default branch."""
    include: list[str] = field(default_factory=list)
    """Gitignore-style globs; empty means every file a parser reads."""
    exclude: list[str] = field(default_factory=list)
    parsers: dict[str, str] = field(default_factory=dict)
    """Glob -> parser, tried before the global ``[parsers]`` table."""
    max_file_size: int = 0
    """0: ``vault.max_file_size``."""
    origin: str = ""
    """The file that declared it (not a key): ``sources remove`` edits only its own."""

    @property
    def location(self) -> str:
        return self.url if self.type == "git" else self.path

    def to_table(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.type}
        for key in ("path", "url", "branch", "include", "exclude", "parsers", "max_file_size"):
            value = getattr(self, key)
            if value:
                out[key] = value
        return out


def note_id(source: str, rel: str) -> str:
    """The catalog path of a file: bare for the vault's own notes, ``name:rel`` else."""
    return f"{source}{ID_SEPARATOR}{rel}" if source else rel


def split_note_id(path: str, names: frozenset[str] | set[str]) -> tuple[str, str]:
    """(source, path inside it); a path whose prefix names no source is the vault's."""
    head, sep, rest = path.partition(ID_SEPARATOR)
    if sep and head in names and "/" not in head:
        return head, rest
    return "", path


def _check(ok: bool, where: str, message: str) -> None:
    if not ok:
        raise ConfigError(f"{where}: {message}.")


def _strings(where: str, key: str, value: Any) -> list[str]:
    _check(
        isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value),
        where,
        f"'{key}' must be a list of non-empty strings, got {value!r}",
    )
    return list(value)


def source_from_table(raw: Any, origin: str, index: int) -> SourceConfig:
    where = f"[[sources]] #{index + 1} in {origin}"
    _check(isinstance(raw, dict), where, f"expected a table, got {raw!r}")
    unknown = sorted(set(raw) - set(_KEYS))
    _check(not unknown, where, f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(_KEYS)}")
    name = raw.get("name")
    _check(
        isinstance(name, str) and bool(_NAME.fullmatch(name)),
        where,
        f"'name' = {name!r} must be letters, digits, '_', '-' or '.' (up to 64, "
        "starting with a letter or digit)",
    )
    where = f"source '{name}' in {origin}"
    _check(name != VAULT_SOURCE, where, f"'{VAULT_SOURCE}' names the vault itself; pick another")
    kind = raw.get("type", "folder")
    _check(kind in SOURCE_TYPES, where, f"'type' = {kind!r}; allowed: folder, git")
    text = {}
    for key in ("path", "url", "branch"):
        value = raw.get(key, "")
        _check(isinstance(value, str), where, f"'{key}' must be a string, got {value!r}")
        text[key] = value.strip()
    if kind == "folder":
        _check(bool(text["path"]), where, "a folder source needs 'path' (the folder)")
        _check(not text["url"] and not text["branch"], where, "'url' and 'branch' are for git")
    else:
        _check(bool(text["url"]), where, "a git source needs 'url' (anything git clone accepts)")
        _check(not text["path"], where, "'path' is for folder sources; a git source has 'url'")
        bad_url = url_problem(text["url"])
        _check(
            bad_url is None,
            where,
            f"'url' = {text['url']!r} is refused: {bad_url} (allowed: {URL_FORMS})",
        )
        bad_branch = branch_problem(text["branch"]) if text["branch"] else None
        _check(
            bad_branch is None,
            where,
            f"'branch' = {text['branch']!r} is not a branch name git takes as it is: {bad_branch}",
        )
    parsers = raw.get("parsers", {})
    _check(
        isinstance(parsers, dict) and all(isinstance(v, str) for v in parsers.values()),
        where,
        f"'parsers' must be a table of glob = parser name, got {parsers!r}",
    )
    size = raw.get("max_file_size", 0)
    _check(
        isinstance(size, int) and not isinstance(size, bool) and size >= 0,
        where,
        f"'max_file_size' must be 0 (vault.max_file_size) or a number of bytes, got {size!r}",
    )
    return SourceConfig(
        name=name,
        type=kind,
        path=text["path"],
        url=text["url"],
        branch=text["branch"],
        include=_strings(where, "include", raw.get("include", [])),
        exclude=_strings(where, "exclude", raw.get("exclude", [])),
        parsers={str(k): v for k, v in parsers.items()},
        max_file_size=size,
        origin=origin,
    )


def sources_from_list(raw: Any, origin: str) -> tuple[SourceConfig, ...]:
    if not isinstance(raw, list):
        raise ConfigError(f"'sources' in {origin} must be [[sources]] tables, got {raw!r}.")
    return tuple(source_from_table(t, origin, i) for i, t in enumerate(raw))


def check_unique(sources: tuple[SourceConfig, ...]) -> None:
    seen: dict[str, str] = {}
    for s in sources:
        if s.name in seen:
            raise ConfigError(
                f"Two sources are named '{s.name}' ({seen[s.name]} and {s.origin}); "
                "source names must be unique."
            )
        seen[s.name] = s.origin


def managed_path(vault: Path) -> Path:
    return vault / ".vaultsearch" / MANAGED_NAME


def read_managed(vault: Path) -> tuple[SourceConfig, ...]:
    import tomllib

    path = managed_path(vault)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return ()
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}.") from None
    unknown = sorted(set(raw) - {"sources"})
    if unknown:
        raise ConfigError(f"{path} may hold only [[sources]] tables, not {', '.join(unknown)}.")
    return sources_from_list(raw.get("sources", []), str(path))
