"""What every derived index is to the store and to a search: one two-sided contract.

A derived index holds nothing the catalog does not but vectors, so it can always be
checked against the catalog and rebuilt from it; a vector index, which holds the only
copy of its vectors in the index, is rebuilt with the rows of the generation it
replaces and the per-user cache (``derived/vectors.Supply``), never the model.
The writer, ``check``, the snapshot and the query orchestrator loop over the
registry in ``derived/__init__.py``; each index's module owns its files (inside the
generation's folder), its write side, its read side and its check, and declares
the role a search gives it, so nothing else names FAISS, Tantivy or the graph.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from vaultsearch.store.catalog import Catalog
from vaultsearch.store.fuzzy import Expansion
from vaultsearch.store.layout import Generation

Role = Literal["branch", "rescore", "boost"]
"""What a search does with an index's reader:

- ``branch``: a retrieval branch; ``search(query, k, allowed)`` gives its top-k chunks,
  fused under the weight ``FusionSettings.weights[branch]``;
- ``rescore``: it searches nothing by itself; ``search(query, k, allowed)`` scores the
  chunks the branches found (``allowed``), a branch of its own in the fusion;
- ``boost``: ``neighbours(path)`` gives the notes a fused note lends a share of its score.
"""


@dataclass(frozen=True, slots=True)
class Query:
    """A query as every derived index reads it: the words for a lexical index, the
    vector for a dense one (None in keyword mode, where the model is not called)."""

    text: str = ""
    terms: tuple[str, ...] = ()
    phrases: tuple[tuple[str, ...], ...] = ()
    excluded: tuple[str, ...] = ()
    expansions: tuple[Expansion, ...] = ()
    """Index terms standing in for mistyped or cut words (``Lexicon.expand``)."""
    vector: np.ndarray | None = None
    boosts: Mapping[str, float] | None = None
    """Field weights for a lexical index instead of the configured ones (the tuning bench)."""
    tie_order: Callable[[Sequence[int]], Sequence[Any]] | None = None
    """Sort keys of chunk ids, by which a branch (keywords, vectors) cuts a tie at its
    k-th score (``Snapshot.tie_order``: the note's path, then the chunk id; see
    ``store/ties.py``); None: a lexical index by chunk id alone, a vector index by
    position."""


class Reader(Protocol):
    """What a search reads of one index: opened read-only, without a lock or a write."""

    def __len__(self) -> int: ...

    def search(self, query: Query, k: int, allowed: Any = None) -> list[tuple[int, float]]:
        """(chunk id, score), best first; ``allowed``: the chunk ids a filter admits (or,
        for a rescorer, the chunks to score), None for all."""


class Lexicon(Protocol):
    """The reader of the index that analyses every query (``analyses``): how a word is
    stemmed, which words a typo stands for, which chunks hold a ``-word``."""

    analyzer: Any

    def expand(self, words: Sequence[str]) -> list[Expansion]: ...

    def chunks_matching(self, words: Sequence[str]) -> list[int]: ...

    def doc_freq(self, term: str) -> tuple[int, int]:
        """(documents holding the analysed term, documents in all)."""

    def most_begun(self, prefix: str) -> tuple[str, int]:
        """The commonest term beginning with ``prefix`` and its document count."""


@dataclass(frozen=True, slots=True)
class DerivedSettings:
    embedding_key: str
    """The key its vectors are cached under in the catalog (the model fingerprint)."""
    dimension: int
    stemming: bool
    meta_keys: tuple[str, ...] = ()
    """Frontmatter keys whose text the keyword index searches in its own field."""
    sentences: bool = True
    """Whether the sentence index holds the chunks' sentences (else it stays empty)."""
    boosts: tuple[tuple[str, float], ...] = ()
    """Keyword field weights a search uses (``[keyword]`` settings, not the manifest)."""
    vector_index: str = "auto"
    """``[index] vector_index``: a segment of more rows than ``ann_threshold`` gets an
    approximate index beside it unless this is ``flat``."""
    ann_threshold: int = 50_000


@dataclass(frozen=True, slots=True)
class Batch:
    """One committed catalog transaction, as the derived indexes must follow it."""

    catalog: Catalog
    removed_chunks: Sequence[int]
    added_chunks: Sequence[int]
    changed_paths: Sequence[str]
    """Notes (old and new paths) whose documents must be taken again from the catalog."""


class DerivedIndex(Protocol):
    name: str
    """Its key in the state file, ``check``'s report and a degraded search's sentence."""
    role: Role
    branch: str
    """The fusion branch its results form (the weight key); "" for a boost."""
    modes: frozenset[str]
    """The search modes that read it ("hybrid", "keyword", "semantic"); a branch read in
    "semantic" mode takes the query vector, one read in "keyword" mode the words."""
    label: str
    """How a sentence names it ("the vector index")."""
    count_key: str | None
    """The state file's count of its entries, compared with its reader's ``len`` at open."""
    completes: bool
    """A branch that also scores (``reader.score(query, ids)``, and ``reader.scores``: the
    same as two arrays) the chunks of notes only the other branches found, so such a note
    is not rated below every unrelated one."""
    analyses: bool
    """Its reader is the snapshot's ``Lexicon``: opened even when ``damage`` says it is
    damaged (a search still analyses its words), and one that cannot open fails the open."""

    def __init__(self, generation: Generation, settings: DerivedSettings) -> None: ...

    def open(self, fresh: bool) -> None:
        """For writing: empty when ``fresh``, else the generation's files (raises when
        they cannot be read; the writer then builds a new generation)."""

    def level_with(self, catalog: Catalog) -> bool:
        """Hold exactly what the catalog holds (after a crash); True when it changed."""

    def apply(self, batch: Batch) -> None: ...

    def commit(self, catalog: Catalog) -> dict[str, Any]:
        """Write to disk; returns what the state file records (counts, and digests of
        files nothing else can be compared with)."""

    def check(self, catalog: Catalog, recorded: dict[str, Any]) -> list[str]:
        """Problems found reading the generation's files, against the catalog and what
        ``commit`` recorded in the state file, without writing anything."""

    def damage(self, state: dict[str, Any]) -> str | None:
        """Why a search cannot trust the generation's file, from what is cheap to look
        at when a reader opens it (present, the digest the state file recorded); None
        when it looks whole. ``check`` is the thorough look."""

    def reader(self, previous: Any = None) -> Any:
        """What a search reads (a ``Reader``; for a boost, ``neighbours`` and ``len``):
        opened read-only, without a lock or a write. ``previous``: this index's reader
        of an older generation in the same process, from which it may take what did not
        change (mapped segments, the graph); any reader, or None, must do."""

    @classmethod
    def empty(cls, settings: DerivedSettings) -> Any:
        """The reader a search uses when ``damage`` names a reason: it answers nothing."""

    @staticmethod
    def location(generation: Generation) -> Path:
        """Its file, or folder, in the generation's folder (``check``, tools, tests)."""

    @staticmethod
    def written(generation: Generation) -> bool:
        """Whether a commit wrote it there (a cheap look; ``check`` is the thorough one)."""

    @staticmethod
    def carry(source: Generation, target: Generation) -> None:
        """Put ``source``'s files in the new generation ``target`` for an update to change,
        linking the immutable ones rather than copying them."""

    @staticmethod
    def status(reader: Any) -> dict[str, int]:
        """Counts ``vaultsearch status`` shows of its reader."""

    def counts(self, state: dict[str, Any]) -> dict[str, int]:
        """``status``'s counts without holding the reader's data (a cold ``vaultsearch
        status`` loads no vectors and no graph), for a generation ``damage`` finds
        whole: equal to ``status(self.reader())``."""
