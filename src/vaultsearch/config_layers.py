"""Where a setting comes from: defaults < config file < ``.env`` < environment < flags.

MCP clients configure a server with an ``env`` block and CI jobs with variables, so every
key of the TOML file can also be given as ``VAULTSEARCH_<SECTION>_<KEY>`` (in the process
environment or in a ``.env`` file beside the config) and, for one run, as
``--set section.key=value``. Each layer is read as text and typed by the key's own
annotation, then handed to the same validation as the file, so a value is refused with
the same sentence wherever it was written.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, get_type_hints

from vaultsearch.errors import ConfigError

ENV_PREFIX = "VAULTSEARCH_"
DOTENV_NAME = ".env"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True, slots=True)
class Layer:
    """One place settings were written: ``values`` is section -> key -> typed value."""

    origin: str
    values: dict[str, dict[str, Any]]


def env_name(section: str, key: str) -> str:
    return f"{ENV_PREFIX}{section}_{key}".upper()


def _keys(sections: Mapping[str, type]) -> dict[str, str]:
    """Every settable ``section.key`` by its variable name."""
    return {
        env_name(name, f.name): f"{name}.{f.name}"
        for name, cls in sections.items()
        for f in fields(cls)
    }


def _suggest(wrong: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(wrong, list(known), n=1, cutoff=0.75)
    return f" Did you mean {close[0]}?" if close else ""


def typed(name: str, text: str, annotation: Any) -> Any:
    """``text`` as the key's type; lists and tables are TOML (``[1, 2]``), and a list of
    strings may also be written comma-separated (``a,b``)."""
    text = text.strip()
    origin = getattr(annotation, "__origin__", None)
    if origin in (list, dict):
        if origin is list and annotation.__args__ == (str,) and not text.startswith("["):
            return [part.strip() for part in text.split(",") if part.strip()]
        try:
            return tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            shape = "[...]" if origin is list else "{...}"
            raise ConfigError(
                f"{name} = {text!r} is invalid: expected a TOML {shape} value."
            ) from None
    if annotation is bool:
        if text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        raise ConfigError(f"{name} = {text!r} is invalid: expected true or false.")
    if annotation in (int, float):
        try:
            return annotation(text)
        except ValueError:
            what = "an integer" if annotation is int else "a number"
            raise ConfigError(f"{name} = {text!r} is invalid: expected {what}.") from None
    return text


def _layer(
    origin: str, pairs: Mapping[str, str], sections: Mapping[str, type], known: dict[str, str]
) -> Layer:
    values: dict[str, dict[str, Any]] = {}
    for name, text in pairs.items():
        dotted = known[name]
        section, key = dotted.split(".", 1)
        annotation = get_type_hints(sections[section])[key]
        values.setdefault(section, {})[key] = typed(name, text, annotation)
    return Layer(origin, values)


def env_layer(environ: Mapping[str, str], sections: Mapping[str, type], origin: str) -> Layer:
    """The ``VAULTSEARCH_<SECTION>_<KEY>`` variables of ``environ``. Variables whose
    second word is no section (``VAULTSEARCH_CONFIG``, ``VAULTSEARCH_MCP_TOKEN``) are
    other settings and are left alone; a misspelt key of a real section is refused."""
    known = _keys(sections)
    pairs: dict[str, str] = {}
    for name, text in environ.items():
        upper = name.upper()
        if not upper.startswith(ENV_PREFIX):
            continue
        section = upper[len(ENV_PREFIX) :].split("_", 1)[0].lower()
        if section not in sections:
            continue
        if upper not in known:
            raise ConfigError(
                f"Unknown setting {name} in {origin}.{_suggest(upper, known)}",
                fix="name a key as VAULTSEARCH_<SECTION>_<KEY>, e.g. "
                "VAULTSEARCH_SEARCH_KEYWORD_WEIGHT; 'vaultsearch config' lists every key",
            )
        pairs[upper] = text
    return _layer(origin, pairs, sections, known)


def read_dotenv(path: Path) -> dict[str, str]:
    """``KEY=value`` lines (``export`` and quotes allowed, ``#`` comments), as the
    dotenv tools write them; an unreadable line is named, never skipped silently."""
    out: dict[str, str] = {}
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").strip()
        name, sep, value = line.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"Line {n} of {path} is not NAME=value: {raw.strip()!r}.")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        out[name.strip()] = value
    return out


def flag_layer(items: Iterable[str], sections: Mapping[str, type]) -> Layer:
    """``--set section.key=value`` flags."""
    known = _keys(sections)
    by_dotted = {dotted: name for name, dotted in known.items()}
    pairs: dict[str, str] = {}
    for item in items:
        dotted, sep, text = item.partition("=")
        dotted = dotted.strip().lower()
        if not sep:
            raise ConfigError(
                f"--set {item!r} is not KEY=VALUE.", fix="e.g. --set search.keyword_weight=0.5"
            )
        if dotted not in by_dotted:
            raise ConfigError(
                f"Unknown config key {dotted!r} in --set.{_suggest(dotted, by_dotted)}",
                fix="'vaultsearch config' lists every key",
            )
        pairs[by_dotted[dotted]] = text
    return _layer("--set flag", pairs, sections, known)


def merge(raw: dict[str, Any], layers: Iterable[Layer]) -> tuple[dict[str, Any], dict[str, str]]:
    """``raw`` (the parsed file) with each layer over it, and where each set key came from."""
    merged = {k: dict(v) if isinstance(v, dict) else v for k, v in raw.items()}
    origins: dict[str, str] = {}
    for layer in layers:
        for section, values in layer.values.items():
            merged.setdefault(section, {}).update(values)
            origins.update({f"{section}.{key}": layer.origin for key in values})
    return merged, origins
