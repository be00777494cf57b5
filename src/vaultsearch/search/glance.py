"""What ``status`` shows of the published generation, without opening a snapshot.

A snapshot loads every note's metadata, the link graph and the keyword searcher, which
a cold ``vaultsearch status`` does not need: 117 MB of RSS at 45k chunks, where the
counts need the catalog, the state file and each derived index's ``counts`` (its list
file, Tantivy's meta). A process that holds a snapshot answers from it instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from vaultsearch.config import Config
from vaultsearch.search.snapshot import Snapshot, read_generation_state
from vaultsearch.store.catalog import Catalog
from vaultsearch.store.derived import DERIVED
from vaultsearch.store.generations import require_published
from vaultsearch.store.layout import Generation, IndexLayout
from vaultsearch.store.verify import settings_of


@dataclass(frozen=True)
class Glance:
    generation: Generation
    catalog: Catalog
    """In the read transaction that shows ``generation``'s rows."""
    derived: dict[str, int]
    """Each derived index's ``status`` counts; a damaged one's are its stand-in's."""


@contextmanager
def glance(layout: IndexLayout, config: Config, snap: Snapshot | None) -> Iterator[Glance]:
    if snap is not None:
        read = {k: v for c in DERIVED for k, v in c.status(snap.reader(c.name)).items()}
        yield Glance(snap.generation, snap.catalog, read)
        return
    hold, catalog = require_published(layout)
    try:
        generation = hold.generation
        state = read_generation_state(layout, generation)
        whole = not state or state.get("generation") == catalog.generation
        settings = settings_of(generation, config)
        derived: dict[str, int] = {}
        for cls in DERIVED:
            part = cls(generation, settings)
            counts = cls.status(cls.empty(settings))
            if cls.analyses or part.damage(state) is None:
                try:
                    found = part.counts(state)
                except Exception:
                    found = counts
                recorded = state.get(cls.count_key) if cls.count_key and whole else None
                if recorded is None or recorded == found.get(str(cls.count_key)):
                    counts = found
            derived.update(counts)
        yield Glance(generation, catalog, derived)
    finally:
        catalog.close()
        hold.release()
