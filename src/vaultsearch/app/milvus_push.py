"""A local index handed to Milvus: the published generation's catalog, as it is."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from vaultsearch.store.derived.sentences import SentencePart
from vaultsearch.store.manifest import read_manifest
from vaultsearch.store.milvus.schema import SCHEMA_VERSION
from vaultsearch.store.milvus.target import MilvusTarget
from vaultsearch.store.milvus.writer import LocalIndex, MilvusWriter, PushSummary
from vaultsearch.store.segments import open_segments
from vaultsearch.store.vectors import SegmentedVectors
from vaultsearch.store.verify import settings_of

if TYPE_CHECKING:
    from vaultsearch.app.vault import Vault


def push(
    vault: Vault,
    target: MilvusTarget,
    full: bool = False,
    before_switch: Callable[[], None] | None = None,
    mid_sync: Callable[[], None] | None = None,
) -> PushSummary:
    """Copy the vault's published index into Milvus without embedding anything. The
    snapshot holds the generation's reader lock and one read transaction of the
    catalog, so what is pushed is one whole generation even while a writer runs."""
    vault.require_index()
    snap = vault.orchestrator.snapshot()
    writer = MilvusWriter(target)
    try:
        local = local_index(snap.generation, snap.catalog, vault, snap.reader("vectors"))
        return writer.push(local, full, before_switch, mid_sync)
    finally:
        writer.close()


def local_index(generation: Any, catalog: Any, vault: Vault, vectors: Any) -> LocalIndex:
    """``vectors``: the generation's chunk vector reader; its sentence vectors are read
    by id from their segments."""
    settings = settings_of(generation, vault.config)
    sentences = SentencePart.location(generation)
    sentence_vectors = (
        SegmentedVectors(*_opened(sentences))
        if sentences.is_file()
        else SegmentedVectors(settings.dimension)
    )
    manifest = read_manifest(generation.root) or {}
    embedding = manifest.get("embedding") or {}
    shaped = {
        "schema_version": SCHEMA_VERSION,
        "embedding": {
            "model": embedding.get("model"),
            "fingerprint": embedding.get("fingerprint"),
            "dimension": settings.dimension,
            "key": settings.embedding_key,
        },
        "chunking": manifest.get("chunking"),
        "keyword": {"stemming": settings.stemming},
        "sentences": settings.sentences,
    }
    return LocalIndex(
        catalog=catalog,
        embedding_key=settings.embedding_key,
        dimension=settings.dimension,
        stemming=settings.stemming,
        sentences=settings.sentences,
        manifest=shaped,
        vectors=vectors,
        sentence_vectors=sentence_vectors,
    )


def _opened(path: Any) -> tuple[int, list[Any]]:
    listing, segments = open_segments(path)
    return listing.dim, segments
