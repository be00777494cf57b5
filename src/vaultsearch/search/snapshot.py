"""One published index generation, opened for reading.

A reader holds the live generation (a shared lock on its ``readers.lock``, so the
writer keeps its files) until the writer publishes a new one (the pointer file
``CURRENT`` changes), then opens that at the next query. A published generation's
files are never written again, and the shared catalog is read in one read
transaction that shows that generation's rows (``generations.hold_published``), so
what a snapshot loads is always one whole state; the check that the catalog's commit
equals the state file's, and the short wait, only guard against a folder someone
changed by hand.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from vaultsearch.config import Config
from vaultsearch.errors import IndexCorruptError, IndexMissingError
from vaultsearch.search import refresh
from vaultsearch.search.boilerplate import Boilerplate, find, find_again
from vaultsearch.search.chunkmap import ChunksByNote, NoteOfChunk
from vaultsearch.search.filters import NoteMeta, SearchFilters
from vaultsearch.store.catalog import Catalog, ChunkRow
from vaultsearch.store.derived import DERIVED, DerivedSettings, Lexicon
from vaultsearch.store.generations import ReaderHold, require_published
from vaultsearch.store.layout import Generation, IndexLayout
from vaultsearch.store.manifest import read_manifest
from vaultsearch.store.verify import settings_of

SETTLE_SECONDS = 3.0
"""How long a reader waits for a commit in progress before taking what is there
(a writer that died mid-commit leaves it so until the next writer repairs it)."""

StateKey = tuple[int, int, int, int, int]


def _file_key(path: Any) -> tuple[int, int]:
    """Inode too: pointer and state are replaced, never rewritten, so a new commit is
    a new inode even when mtimes (coarse on some file systems) come out the same."""
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0)
    return (st.st_ino, st.st_mtime_ns)


def read_generation_state(layout: IndexLayout, generation: Generation) -> dict[str, Any]:
    """The state file as a reader sees it (empty when it cannot be read)."""
    return _read_state(layout, generation)[1]


def _stat_key(layout: IndexLayout, generation: Generation | None) -> StateKey:
    pointer = _file_key(layout.pointer)
    state = _file_key(generation.state) if generation is not None else (0, 0)
    return (*pointer, *state, 0)


def _read_state(layout: IndexLayout, generation: Generation) -> tuple[StateKey, dict[str, Any]]:
    """The state file's key and content from one open file, so they cannot disagree."""
    pointer = _file_key(layout.pointer)
    try:
        with generation.state.open("rb") as fh:
            st = os.fstat(fh.fileno())
            data = json.loads(fh.read())
    except (FileNotFoundError, ValueError):
        return (*pointer, 0, 0, 0), {}
    state = data if isinstance(data, dict) else {}
    return (*pointer, st.st_ino, st.st_mtime_ns, 0), state


@dataclass
class Snapshot:
    layout: IndexLayout
    generation: Generation
    hold: ReaderHold
    key: StateKey
    catalog: Catalog
    settings: DerivedSettings
    readers: dict[str, Any]
    """Each derived index's reader by its name, in ``DERIVED`` order."""
    notes: Mapping[int, NoteMeta]
    note_by_path: Mapping[str, int]
    note_of_chunk: NoteOfChunk
    chunks_by_note: ChunksByNote
    model: str | None
    """The embedding model the index was built with, from its manifest."""
    damaged: dict[str, str] = field(default_factory=dict)
    """Derived index -> why it cannot be trusted, found at open; its reader is its empty
    stand-in (but for the ``Lexicon``'s) and a search says what it went without."""
    commit: int = 0
    """The catalog commit (meta ``generation``) whose rows the maps hold."""
    followed_paths: list[str] | None = None
    """The notes read again when it followed an older snapshot; None: loaded whole."""
    prior_boilerplate: Boilerplate | None = None
    """The followed snapshot's boilerplate, when it had found it."""
    defined: dict[int, frozenset[str]] = field(default_factory=dict, repr=False)
    """Code note -> the names its definitions are found by (``symbolrefs.defined_names``),
    filled as queries rank code files: a generation's files do not change."""

    def followed(self) -> refresh.Followed | None:
        """What a newer snapshot may follow: maps of a whole generation only."""
        if self.commit <= 0:
            return None
        maps = refresh.NoteMaps(
            self.notes, self.note_by_path, self.note_of_chunk, self.chunks_by_note
        )
        return refresh.Followed(self.generation.catalog, self.commit, maps)

    @classmethod
    def open(
        cls, layout: IndexLayout, config: Config, previous: Snapshot | None = None
    ) -> Snapshot:
        """The newest whole generation; waits out a commit in progress (bounded).
        ``previous``: this process's snapshot of an older generation, which the new one
        takes what did not change from (``search/refresh.py``); it is not changed."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            try:
                snap, whole = cls._open_once(layout, config, previous)
            except IndexMissingError:
                raise
            except Exception as exc:
                if time.monotonic() >= deadline:
                    raise _unreadable(exc) from exc
                time.sleep(0.02)  # a file replaced under us: the next try sees the new one
                continue
            if whole or time.monotonic() >= deadline:
                return snap
            snap.close()
            time.sleep(0.02)

    @classmethod
    def _open_once(
        cls, layout: IndexLayout, config: Config, previous: Snapshot | None
    ) -> tuple[Snapshot, bool]:
        hold, catalog = require_published(layout)
        try:
            return cls._open_held(layout, config, hold, catalog, previous)
        except BaseException:
            catalog.close()
            hold.release()
            raise

    @classmethod
    def _open_held(
        cls,
        layout: IndexLayout,
        config: Config,
        hold: ReaderHold,
        catalog: Catalog,
        previous: Snapshot | None,
    ) -> tuple[Snapshot, bool]:
        """``catalog`` is in the read transaction that shows ``hold``'s generation; it
        stays open for the snapshot's life (chunk texts are read as results need them).
        ``previous``: followed where the writer recorded what changed since it."""
        generation = hold.generation
        key, state = _read_state(layout, generation)
        manifest = read_manifest(generation.root) or {}
        settings = settings_of(generation, config)
        readers, damaged = _readers(
            generation, settings, state, previous.readers if previous is not None else {}
        )
        generation_no = catalog.generation
        followed = None if previous is None else previous.followed()
        paths = refresh.changed_paths(followed, generation.catalog, generation_no, state)
        if followed is not None and paths is not None:
            maps = refresh.follow(followed.maps, catalog, paths)
        else:
            maps = refresh.load(catalog)
        # the state file is written before the catalog commit that names its generation:
        # once it names the catalog's commit, a count that differs is damage, not a
        # commit still in progress
        whole = not state or state.get("generation") == generation_no
        for index in DERIVED:
            reader = readers[index.name]
            if index.count_key is None or not whole or index.name in damaged:
                continue
            if (recorded := state.get(index.count_key, len(reader))) != len(reader):
                damaged[index.name] = (
                    f"it holds {len(reader)} entries, the writer recorded {recorded}"
                )
        snap = cls(
            layout=layout,
            generation=generation,
            hold=hold,
            key=key,
            catalog=catalog,
            settings=settings,
            readers=readers,
            notes=maps.notes,
            note_by_path=maps.note_by_path,
            note_of_chunk=maps.note_of_chunk,
            chunks_by_note=maps.chunks_by_note,
            model=(manifest.get("embedding") or {}).get("model"),
            damaged=damaged,
            commit=generation_no,
            followed_paths=paths,
            prior_boilerplate=(
                previous.__dict__.get("boilerplate_found")
                if previous is not None and paths is not None
                else None
            ),
        )
        return snap, whole

    def reader(self, name: str) -> Any:
        """One index's reader, for a tool that needs that index's own calls (the graph
        walked for links, the chunk vectors for similar notes); a search goes by roles."""
        return self.readers[name]

    @functools.cached_property
    def lexicon(self) -> Lexicon:
        """The reader that analyses every query (the index whose ``analyses`` is set)."""
        return cast(Lexicon, next(self.readers[c.name] for c in DERIVED if c.analyses))

    @property
    def boilerplate(self) -> frozenset[int]:
        """Chunks repeated across most notes (``boilerplate.find``), found at the first
        search of the generation: one scan of the chunk lengths, or, following an older
        snapshot that had found them, a look at the lengths the change touched."""
        return self.boilerplate_found.chunks

    @functools.cached_property
    def boilerplate_ids(self) -> np.ndarray:
        """``boilerplate`` as a sorted array: the completion weighs it down as arrays."""
        return np.array(sorted(self.boilerplate), dtype=np.int64)

    @functools.cached_property
    def boilerplate_found(self) -> Boilerplate:
        prior, self.prior_boilerplate = self.prior_boilerplate, None
        if prior is None or self.followed_paths is None:
            return find(self.catalog.db, len(self.notes))
        added = [
            int(c)
            for p in self.followed_paths
            if (nid := self.note_by_path.get(p)) is not None
            for c in self.chunks_by_note.get(nid, ())
        ]
        return find_again(self.catalog.db, len(self.notes), prior, added)

    def release_pages(self) -> None:
        """Give back the pages of mapped files its readers hold (an idle reader)."""
        for reader in self.readers.values():
            if callable(release := getattr(reader, "release_pages", None)):
                release()

    def is_stale(self) -> bool:
        return _stat_key(self.layout, self.generation) != self.key

    def close(self) -> None:
        self.catalog.close()
        self.hold.release()

    def allowed_notes(self, filters: SearchFilters) -> set[int] | None:
        if not filters.restricts_notes:
            return None
        return {nid for nid, n in self.notes.items() if filters.accepts(n)}

    def chunks_of_notes(self, note_ids: set[int] | None) -> np.ndarray | None:
        if note_ids is None:
            return None
        return self.chunks_by_note.of_notes(note_ids)

    def first_chunks(self, note_id: int) -> list[int]:
        ids = self.chunks_by_note.get(note_id)
        return [int(ids[0])] if ids is not None and len(ids) else []

    def chunk_rows(self, ids: Iterable[int]) -> dict[int, ChunkRow]:
        return {r.id: r for r in self.catalog.chunks(list(dict.fromkeys(ids)))}

    def notes_of(self, chunk_ids: Iterable[int]) -> set[int]:
        """The notes these chunks belong to (an id this generation lacks is skipped)."""
        return {nid for cid in chunk_ids if (nid := self.note_of_chunk.get(cid)) is not None}

    def tie_order(self, chunk_ids: Sequence[int]) -> list[tuple[str, int]]:
        """Each chunk's note path and id: the order a branch gives chunks of equal score
        (``Query.tie_order``), a function of the vault alone. A chunk id alone is the
        order chunks were written: a catalog rebuilt from the files (``check --repair``)
        numbers the notes edited since the first build anew; a note's own chunks are
        numbered in their order in it."""
        note_of, notes = self.note_of_chunk.get, self.notes
        return [
            (notes[nid].path if (nid := note_of(cid)) is not None else "", cid) for cid in chunk_ids
        ]

    def notes_containing(self, excluded: Sequence[str]) -> set[int]:
        """Notes with a chunk holding an excluded word, matched as keyword search matches
        (stemmed, any field): ``-word`` removes the same notes in every mode."""
        return self.notes_of(self.lexicon.chunks_matching(excluded))

    @functools.cached_property
    def stem(self) -> Callable[[str], str]:
        """A word as the keyword index analyses it, so highlights agree with BM25: the
        cached function itself, called thousands of times a query by the snippets."""
        analyzer = self.lexicon.analyzer

        @functools.lru_cache(maxsize=65536)
        def stem(word: str) -> str:
            tokens = analyzer.analyze(word)
            return tokens[0] if tokens else word.lower()

        return stem


def _readers(
    generation: Generation,
    settings: DerivedSettings,
    state: dict[str, Any],
    previous: dict[str, Any],
) -> tuple[dict[str, Any], dict[str, str]]:
    """Each derived index's reader, and the ones found damaged at open. A damaged index
    is read as its empty stand-in so the search can go on without it and say so; the
    ``Lexicon``'s index is opened all the same (it analyses every query), and fails the
    open when it cannot be."""
    readers: dict[str, Any] = {}
    damaged: dict[str, str] = {}
    for cls in DERIVED:
        part = cls(generation, settings)
        reason = part.damage(state)
        if reason is None or cls.analyses:
            try:
                readers[cls.name] = part.reader(previous.get(cls.name))
            except IndexCorruptError:
                raise
            except Exception as exc:
                if cls.analyses:
                    raise
                reason = f"it cannot be read ({type(exc).__name__}: {str(exc)[:120]})"
        if reason is not None:
            damaged[cls.name] = reason
        if cls.name not in readers:
            readers[cls.name] = cls.empty(settings)
    return readers, damaged


def _unreadable(exc: Exception) -> Exception:
    if isinstance(exc, IndexCorruptError):
        return exc
    return IndexCorruptError(
        f"The index cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0][:160]}).",
        fix="vaultsearch check --repair",
    )
