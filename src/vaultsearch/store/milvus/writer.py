"""The write side: a local catalog's rows into Milvus, by id.

``build`` fills a new generation and then switches the alias, the one step readers
see: a build that fails or is killed before it leaves the alias where it was, and its
half-filled collections are dropped by the next build. ``sync`` brings the live
generation level with the catalog by upserting the rows whose digest differs and
deleting the ids the catalog no longer has, so an edit costs its own rows; a manifest
that no longer fits (another model, chunking or schema version) makes it a build.

Vectors come from the generation's vector segments (their only copy), never from the
model. There is one writer per prefix; readers may be many.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from vaultsearch.errors import IndexIncompatibleError
from vaultsearch.store.catalog import Catalog
from vaultsearch.store.graph import build_graph, neighbours
from vaultsearch.store.milvus.client import connect, engine_errors
from vaultsearch.store.milvus.live import current_generation, load, read_manifest
from vaultsearch.store.milvus.schema import (
    PARTS,
    chunk_row,
    collection,
    create_generation,
    generation_name,
    generation_number,
    note_fields,
    note_row,
    run_ids,
)
from vaultsearch.store.milvus.target import MilvusTarget

BATCH = 500
SHAPING = ("schema_version", "embedding", "chunking", "keyword", "sentences")
"""What a generation's rows depend on: when any of it differs, sync builds anew."""


@dataclass(frozen=True, slots=True)
class LocalIndex:
    """What the writer reads: a catalog, the vectors of the same generation and what
    shaped it (its manifest)."""

    catalog: Catalog
    embedding_key: str
    dimension: int
    stemming: bool
    sentences: bool
    manifest: dict[str, Any]
    vectors: Any
    """The chunk vectors: ``vectors_of(ids)`` gives (held ids, float32 rows)."""
    sentence_vectors: Any
    """The sentence vectors, the same way, by sentence id."""


@dataclass(slots=True)
class PushSummary:
    uri: str
    generation: str = ""
    rebuilt: bool = False
    chunks: int = 0
    notes: int = 0
    sentences: int = 0
    upserted_chunks: int = 0
    deleted_chunks: int = 0
    upserted_notes: int = 0
    deleted_notes: int = 0
    upserted_sentences: int = 0
    purged_chunks: int = 0
    """Rows of chunks an earlier push removed, deleted by this one (``_sync``)."""
    embedded: int = 0
    """Texts sent to a model: always 0, the vectors come from the catalog."""
    seconds: float = 0.0
    dropped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class MilvusWriter:
    def __init__(self, target: MilvusTarget) -> None:
        self.target = target
        self.client = connect(target, create=True)

    def push(
        self,
        local: LocalIndex,
        full: bool = False,
        before_switch: Callable[[], None] | None = None,
        mid_sync: Callable[[], None] | None = None,
    ) -> PushSummary:
        """``sync`` into the live generation, or ``build`` a new one when there is none,
        it was shaped otherwise, or ``full``. ``before_switch`` and ``mid_sync`` are
        the points where the tests kill a writer."""
        started = time.perf_counter()
        with engine_errors(self.target):
            live = current_generation(self.client, self.target.prefix)
            manifest = read_manifest(self.client, self.target) if live else None
            shaped = {k: local.manifest.get(k) for k in SHAPING}
            fits = manifest is not None and {k: manifest.get(k) for k in SHAPING} == shaped
            if full or live is None or not fits:
                summary = self._build(local, before_switch)
            else:
                load(self.client, live)
                summary = self._sync(local, live, mid_sync=mid_sync, manifest=manifest)
        summary.seconds = round(time.perf_counter() - started, 3)
        return summary

    # --- build ------------------------------------------------------------------
    def _build(self, local: LocalIndex, before_switch: Callable[[], None] | None) -> PushSummary:
        prefix = self.target.prefix
        existing = self.client.list_collections()
        numbers = [n for c in existing if (n := generation_number(prefix, c)) is not None]
        generation = generation_name(prefix, max(numbers, default=0) + 1)
        create_generation(self.client, generation, local.dimension)
        summary = self._sync(local, generation, fresh=True)
        summary.rebuilt = True
        if before_switch is not None:
            before_switch()
        previous = current_generation(self.client, prefix)
        alias_target = collection(generation, "manifest")
        if prefix in self.client.list_aliases().get("aliases", []):
            self.client.alter_alias(collection_name=alias_target, alias=prefix)
        else:
            self.client.create_alias(collection_name=alias_target, alias=prefix)
        summary.dropped = self._drop_superseded(generation, previous)
        return summary

    def _drop_superseded(self, live: str, previous: str | None) -> list[str]:
        """Every generation but the live one and the one the alias named before: a
        reader that resolved the alias just before the switch still finds its
        collections. A killed build's leftovers are neither, so they go too."""
        prefix = self.target.prefix
        keep = {live, previous}
        dropped = []
        for name in self.client.list_collections():
            n = generation_number(prefix, name)
            if n is not None and generation_name(prefix, n) not in keep:
                self.client.drop_collection(name)
                dropped.append(name)
        return sorted(dropped)

    # --- sync -------------------------------------------------------------------
    def _sync(
        self,
        local: LocalIndex,
        generation: str,
        fresh: bool = False,
        mid_sync: Callable[[], None] | None = None,
        manifest: dict[str, Any] | None = None,
    ) -> PushSummary:
        """Upserts and deletes by id into ``generation``. Into the live one, the rows of
        four collections cannot change in one step, so each note changes in one: its
        new chunk rows are written first, unseen (a reader uses only the chunks a note
        row lists), then its note row, which lists them instead of the old ones, and the
        old rows, listed by no note, are deleted by the next push (a reader that read a
        note row just before the switch still finds the chunks it lists). A reader sees
        each note whole, as before or after the push; across notes it may see both, so
        the manifest says ``syncing`` from before the first change until the last: a
        reader meanwhile, or after the writer was killed, is told so, and the next push
        finds every row still different by its digest and finishes the job.

        It ends with a flush of the four collections: rows left in Milvus's growing
        segments are searched without their index (Milvus Lite 3 keeps them in a memtable
        that a keyword search at 9k chunks took 3.8 s of CPU to scan, against 48 ms
        once flushed), and a server seals and indexes a flushed segment at once."""
        catalog = local.catalog
        summary = PushSummary(uri=self.target.uri, generation=generation)
        names = {part: collection(generation, part) for part in PARTS}
        notes = catalog.notes()
        fields = {n.id: note_fields(n) for n in notes}
        chunks = catalog.chunks()
        rows = {c.id: chunk_row(c, fields[c.note_id], local.stemming) for c in chunks}
        stored = {} if fresh else self._digests(names["chunks"], ("digest", "embed_hash"))
        stored_notes = {} if fresh else self._digests(names["notes"], ("digest", "chunks"))
        listed = {i for r in stored_notes.values() for i in run_ids(r.get("chunks") or [])}
        changed = [
            cid for cid, row in rows.items() if stored.get(cid, {}).get("digest") != row["digest"]
        ]
        removed = [cid for cid in stored if cid not in rows and cid in listed]
        unlisted = [cid for cid in stored if cid not in rows and cid not in listed]
        new_text = [
            cid
            for cid in changed
            if stored.get(cid, {}).get("embed_hash") != rows[cid]["embed_hash"]
        ]
        self._require_vectors(local, changed)
        if not fresh and manifest is not None and (changed or removed):
            since = manifest.get("syncing") or datetime.now(UTC).isoformat(timespec="seconds")
            marked = {**manifest, "syncing": since}
            self.client.upsert(
                names["manifest"], [{"id": 1, "manifest": marked, "pad": [1.0, 0.0]}]
            )
        for part in _batches(changed):
            _, vectors = local.vectors.vectors_of(part)
            data = [rows[cid] | {"dense": vectors[i].tolist()} for i, cid in enumerate(part)]
            self.client.upsert(names["chunks"], data)
            if mid_sync is not None:
                mid_sync()
        for part in _batches([c for c in new_text if c in stored]):  # same id, new text
            self.client.delete(names["sentences"], filter=f"chunk_id in {part}")
        if local.sentences:
            for part in _batches(new_text):
                ids, vecs = local.sentence_vectors.vectors_of(catalog.sentence_units(part)[0])
                data = [
                    {"id": int(sid), "chunk_id": int(sid) >> _sentence_shift(), "dense": v.tolist()}
                    for sid, v in zip(ids, vecs, strict=True)
                ]
                for piece in _batches(data, BATCH * 4):
                    self.client.upsert(names["sentences"], piece)
                summary.upserted_sentences += len(data)
        summary.upserted_notes, summary.deleted_notes = self._sync_notes(
            catalog, names["notes"], stored_notes, chunks
        )
        for part in _batches(unlisted):  # listed by no note since a push before this one
            self.client.delete(names["sentences"], filter=f"chunk_id in {part}")
            self.client.delete(names["chunks"], ids=part)
        summary.upserted_chunks, summary.deleted_chunks = len(changed), len(removed)
        summary.purged_chunks = len(unlisted)
        summary.chunks, summary.notes = len(rows), len(notes)
        summary.sentences = _count(self.client, names["sentences"])
        manifest = {
            **{k: local.manifest.get(k) for k in SHAPING},
            "generation": generation,
            "counts": {
                "notes": len(notes),
                "chunks": len(rows),
                "sentences": summary.sentences,
                "links": catalog.count("links"),
            },
            "updated": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        self.client.upsert(names["manifest"], [{"id": 1, "manifest": manifest, "pad": [1.0, 0.0]}])
        for name in names.values():
            self.client.flush(name)
        return summary

    def _sync_notes(
        self,
        catalog: Catalog,
        name: str,
        stored: dict[int, dict[str, Any]],
        chunks: Sequence[Any],
    ) -> tuple[int, int]:
        """The notes collection holds each note's chunk ids and its neighbours (out- and
        backlinks) for the graph boost; an edit changes the rows of the notes whose
        neighbours moved too, which the digests find."""
        notes = catalog.notes()
        graph = build_graph(notes, catalog.links())
        first: dict[int, tuple[int, int]] = {}
        ids: dict[int, list[int]] = {}
        for c in chunks:
            ids.setdefault(c.note_id, []).append(c.id)
            if c.note_id not in first or (c.ordinal, c.id) < first[c.note_id]:
                first[c.note_id] = (c.ordinal, c.id)
        rows = {
            n.id: note_row(
                n, neighbours(graph, n.path), first.get(n.id, (0, 0))[1], ids.get(n.id, [])
            )
            for n in notes
        }
        changed = [
            nid for nid, r in rows.items() if stored.get(nid, {}).get("digest") != r["digest"]
        ]
        removed = [nid for nid in stored if nid not in rows]
        for part in _batches(changed):
            self.client.upsert(name, [rows[n] for n in part])
        for part in _batches(removed):
            self.client.delete(name, ids=part)
        return len(changed), len(removed)

    def _digests(self, name: str, fields: tuple[str, ...]) -> dict[int, dict[str, Any]]:
        out: dict[int, dict[str, Any]] = {}
        it = self.client.query_iterator(name, batch_size=4096, filter="id >= 0",
                                        output_fields=list(fields))  # fmt: skip
        try:
            while page := it.next():
                for r in page:
                    out[int(r["id"])] = r
        finally:
            it.close()
        return out

    def _require_vectors(self, local: LocalIndex, chunk_ids: Sequence[int]) -> None:
        held, _ = local.vectors.vectors_of(chunk_ids)
        missing = len(set(chunk_ids)) - len(held)
        if missing:
            raise IndexIncompatibleError(
                f"{missing} chunks have no vector of {local.embedding_key} in the local "
                "index, and a push never embeds.",
                fix="run 'vaultsearch check --repair' on the vault first, then push again",
            )

    def close(self) -> None:
        self.client.close()


def _sentence_shift() -> int:
    from vaultsearch.store.catalog import SENTENCE_BITS

    return SENTENCE_BITS


def _batches(items: Sequence[Any], size: int = BATCH) -> list[list[Any]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def _count(client: Any, name: str) -> int:
    rows = client.query(name, filter="", output_fields=["count(*)"])
    return int(rows[0]["count(*)"]) if rows else 0
