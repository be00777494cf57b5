"""Reading the config again in a running server, and the config as ``section.key`` pairs.

Search settings take effect at once. Settings the index records (``RECORDED_SETTINGS``)
take effect too, and the next update rebuilds what they shape; the ones a running
process has built its parts from (the model, the index folder, the watcher) wait for a
restart. Any error keeps the running config whole.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultsearch.config import Config, find_config_path, load_config
from vaultsearch.errors import VaultsearchError
from vaultsearch.store.manifest import is_recorded

if TYPE_CHECKING:
    from vaultsearch.app.vault import Vault

RESTART_SECTIONS = ("embedding", "watch")
RESTART_KEYS = ("vault.index_dir",)


def flat_config(config: Config) -> dict[str, Any]:
    """Every setting as ``section.key`` -> value (``parsers.<glob>`` -> parser name)."""
    out: dict[str, Any] = {}
    for f in fields(Config):
        value = getattr(config, f.name)
        if f.name == "parsers":
            out.update({f"parsers.{glob}": name for glob, name in value.items()})
        elif hasattr(value, "__dataclass_fields__"):
            out.update({f"{f.name}.{k.name}": getattr(value, k.name) for k in fields(value)})
    return out


SECRET_KEYS = frozenset({"store.token"})
"""Settings whose value is a credential: shown as set or not, never printed or served."""


def shown_config(config: Config) -> dict[str, Any]:
    """``flat_config`` for people and pages: a secret reads ``(set)``."""
    flat = flat_config(config)
    return {k: ("(set)" if k in SECRET_KEYS and v else v) for k, v in flat.items()}


def rebuild_keys(config: Config) -> list[str]:
    """The keys of this config whose change forces a rebuild of the index."""
    return [k for k in flat_config(config) if is_recorded(k)]


def needs_restart(key: str) -> bool:
    return key.split(".", 1)[0] in RESTART_SECTIONS or key in RESTART_KEYS


@dataclass(frozen=True, slots=True)
class ConfigReload:
    source: str
    applied: tuple[str, ...] = ()
    """Changed keys now in effect."""
    rebuild: tuple[str, ...] = ()
    """Applied keys the index records: the next update rebuilds what they shape."""
    restart: tuple[str, ...] = ()
    """Changed keys that take effect only when the server is started again."""
    error: str | None = None
    """Why the new config was refused (the running one is kept whole)."""

    def message(self) -> str:
        if self.error:
            return f"Kept the running config: {self.error}"
        if not (self.applied or self.restart):
            return f"No setting changed in {self.source}."
        parts = []
        if self.applied:
            parts.append(f"Applied {', '.join(self.applied)}.")
        if self.rebuild:
            parts.append(
                f"{', '.join(self.rebuild)} change what the index holds: "
                "the next update rebuilds it (reindex starts it now)."
            )
        if self.restart:
            parts.append(f"{', '.join(self.restart)} take effect after a restart.")
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "source": self.source,
            "applied": list(self.applied),
            "needs_rebuild": list(self.rebuild),
            "needs_restart": list(self.restart),
            "message": self.message(),
        }
        if self.error:
            out["error"] = self.error
        return out


def changed_keys(old: Config, new: Config) -> list[str]:
    a, b = flat_config(old), flat_config(new)
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def merge_for_running(old: Config, new: Config) -> Config:
    """``new`` with the settings that need a restart kept at their running values."""
    kept: dict[str, Any] = {s: getattr(old, s) for s in RESTART_SECTIONS}
    merged = replace(new, **kept)
    return replace(merged, vault=replace(new.vault, index_dir=old.vault.index_dir))


def config_path(vault_root: Path, running: Config) -> Path | None:
    """The file the running config came from, else where a new one would be found."""
    source = Path(running.source)
    if running.source not in ("built-in defaults", "<dict>") and source.suffix == ".toml":
        return source
    return find_config_path(None, vault_root)


def _stamp(path: Path | None) -> tuple[int, int] | None:
    try:
        st = path.stat() if path is not None else None
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size) if st is not None else None


class ConfigFollower:
    """Reads the config file again when it changed on disk, so a long-lived process
    (the Index Console page) sees an edit without a restart and says what it means for
    the index, as ``index --check`` does in a fresh process."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.stamp = _stamp(config_path(vault.root, vault.config))

    def follow(self) -> ConfigReload | None:
        """The reload when the file changed since the last look, else None."""
        stamp = _stamp(config_path(self.vault.root, self.vault.config))
        if stamp == self.stamp:
            return None
        result = reload_config(self.vault)
        if result.error is None:
            self.stamp = stamp
        return result


def reload_config(vault: Vault) -> ConfigReload:
    """Read the vault's config file again and apply what a running server can."""
    old = vault.config
    path = config_path(vault.root, old)
    source = str(path) if path else "built-in defaults"
    try:
        new = load_config(path, vault.root, old.flags)  # with no file: defaults, env, sources
    except VaultsearchError as exc:
        return ConfigReload(source, error=str(exc))
    except OSError as exc:
        return ConfigReload(source, error=f"cannot read {source} ({exc.strerror or exc}).")
    changed = changed_keys(old, new)
    restart = tuple(k for k in changed if needs_restart(k))
    applied = tuple(k for k in changed if not needs_restart(k))
    if applied or new.source != old.source:
        vault.use_config(merge_for_running(old, new))
    return ConfigReload(
        source,
        applied=applied,
        rebuild=tuple(k for k in applied if is_recorded(k)),
        restart=restart,
    )
