"""Which of the graph delta's records link to a path: the reverse of their ``out`` lists.

A reader that follows a writer must, when a note appears, apply again the delta records
that link to it (a fresh read adds their edges to the new node). Scanning every record
for them was ~250 ms of each followed add or move at a million chunks (~73k records);
this map answers it for the appeared paths alone, and is updated with the records a
follow brings, so its upkeep is in proportion to the change.
"""

from __future__ import annotations

from collections.abc import Iterable

from vaultsearch.store.graphdelta import Record

_ABSENT: object = object()


def _targets(record: Record) -> Iterable[str]:
    return () if record is None else (t for t, _, _ in record.get("out", ()))


class Linkers:
    """target path -> the delta paths whose record links to it. Owned by one reader at a
    time: a follower takes it over (``handed``) and updates it in place, so no copy of
    its ~73k entries is made per follow."""

    def __init__(self, records: dict[str, Record]) -> None:
        self._by_target: dict[str, set[str]] = {}
        for path, record in records.items():
            for target in _targets(record):
                self._by_target.setdefault(target, set()).add(path)

    def of(self, target: str) -> set[str]:
        """The delta paths whose record links to ``target`` (do not change it)."""
        return self._by_target.get(target, set())

    def update(self, before: dict[str, Record], records: dict[str, Record]) -> None:
        """The map of ``before`` (what it was built for) made the map of ``before``
        with ``records`` applied over it."""
        for path, record in records.items():
            old = before.get(path, _ABSENT)
            if old is not _ABSENT:
                for target in _targets(old):  # type: ignore[arg-type]
                    sources = self._by_target.get(target)
                    if sources is not None:
                        sources.discard(path)
                        if not sources:
                            del self._by_target[target]
            for target in _targets(record):
                self._by_target.setdefault(target, set()).add(path)

    def as_dict(self) -> dict[str, set[str]]:
        """For tests: the whole map."""
        return {t: set(s) for t, s in self._by_target.items()}
