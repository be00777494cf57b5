"""``sources add`` and ``sources remove``: rewrite the managed sources.toml whole.

A person's config.toml keeps its comments and layout because the program never writes
it; a source declared there is changed there, by hand, and ``remove`` says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vaultsearch.errors import ConfigError
from vaultsearch.sourceconfig import SourceConfig, check_unique, managed_path, read_managed
from vaultsearch.store.atomic import atomic_write_bytes

HEADER = (
    "# Written by `vaultsearch sources add` and `vaultsearch sources remove`.\n"
    "# Holds only [[sources]] tables, with the keys of the config's [[sources]].\n"
)


def add_managed(vault: Path, configured: tuple[SourceConfig, ...], source: SourceConfig) -> Path:
    managed = list(read_managed(vault))
    path = managed_path(vault)
    if any(s.name == source.name for s in configured):
        raise ConfigError(
            f"A source named '{source.name}' already exists.",
            fix=f"pick another name, or 'vaultsearch sources remove {source.name}' first",
        )
    check_unique((*configured, source))
    write_managed(path, [*managed, source])
    return path


def remove_managed(vault: Path, configured: tuple[SourceConfig, ...], name: str) -> SourceConfig:
    path = managed_path(vault)
    found = next((s for s in configured if s.name == name), None)
    if found is None:
        known = ", ".join(s.name for s in configured) or "none"
        raise ConfigError(f"There is no source named '{name}' (sources: {known}).")
    managed = list(read_managed(vault))
    if not any(s.name == name for s in managed):
        raise ConfigError(
            f"The source '{name}' is declared in {found.origin}, not in {path}.",
            fix=f"delete its [[sources]] table from {found.origin}, then run 'vaultsearch index'",
        )
    write_managed(path, [s for s in managed if s.name != name])
    return found


def write_managed(path: Path, sources: list[SourceConfig]) -> None:
    lines = [HEADER]
    for s in sources:
        lines.append("[[sources]]")
        lines += [f"{key} = {_toml(value)}" for key, value in s.to_table().items()]
        lines.append("")
    atomic_write_bytes(path, "\n".join(lines).encode("utf-8"))


def _toml(value: Any) -> str:
    """JSON strings (ASCII, backslash escapes) and arrays are valid TOML as they are."""
    if isinstance(value, dict):
        return (
            "{ " + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in value.items()) + " }"
        )
    return json.dumps(value)
