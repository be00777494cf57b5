"""A map that is another map with a few keys changed: what a reader following a writer
holds instead of a copy of every note's entry.

At a million chunks (298k notes) copying the two note maps on every followed edit cost
most of the reader's note-map work (``bench/edit_stages.py``); a layer over the previous
map costs what changed. It reads and iterates as the dict a full load builds: a kept key
in its place, a key added (or deleted and added again) last. Past a share of its base the
layer is folded into a plain dict, so a long-lived reader pays one copy per
``len(base) / FOLD`` changed keys rather than one per edit.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from typing import Any, TypeVar, cast

K = TypeVar("K")
V = TypeVar("V")

FOLD = 16
"""The layer is folded into one dict once it holds more than ``len(base) / FOLD`` keys."""
FOLD_AT_LEAST = 1024
"""...and never below this many: small vaults fold rarely, and copy little when they do."""

_MISSING: Any = object()


class Layered(Mapping[K, V]):
    """``base`` (never changed) under ``top`` (keys set since) less ``gone`` (keys of
    ``base`` deleted since). A key of ``base`` in ``top`` and not in ``gone`` keeps its
    place; a key in ``top`` that is new, or was deleted first, comes after ``base``'s."""

    __slots__ = ("_base", "_gone", "_len", "_top")

    def __init__(self, base: dict[K, V]) -> None:
        self._base = base
        self._top: dict[K, V] = {}
        self._gone: set[K] = set()
        self._len = len(base)

    @classmethod
    def over(cls, previous: Mapping[K, V]) -> Layered[K, V]:
        """A new layer to change, sharing ``previous``'s base (a dict or a ``Layered``);
        ``previous`` itself is not changed (a search may still read it)."""
        if isinstance(previous, Layered):
            out = cls(previous._base)
            out._top, out._gone, out._len = dict(previous._top), set(previous._gone), len(previous)
            return out
        return cls(cast(dict[K, V], previous))

    # --- building (only while no one else reads it) ------------------------------
    def put(self, key: K, value: V) -> None:
        if key not in self:
            self._len += 1
        self._top[key] = value

    def drop(self, key: K) -> None:
        """Like ``del``; a key not present is left alone."""
        if key not in self:
            return
        self._len -= 1
        self._top.pop(key, None)
        if key in self._base:
            self._gone.add(key)

    def settled(self) -> Mapping[K, V]:
        """This map to hand to readers: itself, or one dict once the layer is large."""
        if len(self._top) + len(self._gone) <= max(FOLD_AT_LEAST, len(self._base) // FOLD):
            return self
        return dict(self.items())

    # --- reading ------------------------------------------------------------------
    def __getitem__(self, key: K) -> V:
        value = self._top.get(key, _MISSING)
        if value is not _MISSING:
            return cast(V, value)
        if key in self._gone:
            raise KeyError(key)
        return self._base[key]

    def get(self, key: K, default: Any = None) -> Any:
        value = self._top.get(key, _MISSING)
        if value is not _MISSING:
            return value
        if self._gone and key in self._gone:
            return default
        return self._base.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._top or (key not in self._gone and key in self._base)

    def __len__(self) -> int:
        return self._len

    def _appended(self) -> Iterator[K]:
        base, gone = self._base, self._gone
        return (k for k in self._top if k not in base or k in gone)

    def __iter__(self) -> Iterator[K]:
        gone = self._gone
        if gone:
            yield from (k for k in self._base if k not in gone)
        else:
            yield from self._base
        yield from self._appended()

    def items(self) -> ItemsView[K, V]:
        return _Items(self)

    def values(self) -> ValuesView[V]:
        return _Values(self)

    def _pairs(self) -> Iterator[tuple[K, V]]:
        top, gone = self._top, self._gone
        for key, value in self._base.items():
            if key in gone:
                continue
            yield key, top.get(key, value)
        for key in self._appended():
            yield key, top[key]

    def __repr__(self) -> str:
        return f"Layered({len(self)} keys, {len(self._top)} set, {len(self._gone)} deleted)"


class _Items(ItemsView[K, V]):
    """One pass over the base, not a lookup per key (a filter reads every note)."""

    _mapping: Layered[K, V]

    def __iter__(self) -> Iterator[tuple[K, V]]:
        return self._mapping._pairs()


class _Values(ValuesView[V]):
    _mapping: Layered[Any, V]

    def __iter__(self) -> Iterator[V]:
        return (v for _, v in self._mapping._pairs())
