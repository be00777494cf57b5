"""A local index of a vault with its vectors taken from a Milvus store: the way back
from ``push``, for a member who has the vault's files (a checkout of the handbook) but
not its index, which CI built into Milvus.

The store's vectors are keyed the way the embedding cache keys them (the hash of each
chunk's embedded text, and of each sentence unit as ``catalog.sentence_units`` derives
it again from the chunk's text), put into the per-user cache where it lacks them, and
the vault is then indexed as always: a note whose text is the one the store holds
costs no model call, and one edited since the push is embedded (and counted).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from vaultsearch.embedding.locate import text_hash
from vaultsearch.errors import ConfigError, IndexIncompatibleError
from vaultsearch.parsers.sentences import unit_texts
from vaultsearch.store.catalog import sentence_id
from vaultsearch.store.milvus.client import connect, engine_errors
from vaultsearch.store.milvus.live import live_manifest, load
from vaultsearch.store.milvus.schema import collection
from vaultsearch.store.milvus.target import MilvusTarget

if TYPE_CHECKING:
    from vaultsearch.app.vault import Vault
    from vaultsearch.indexing.summary import IndexSummary

PAGE = 1024


@dataclass
class PullSummary:
    uri: str
    generation: str
    vectors: int
    """Chunk and sentence vectors read from the store."""
    cached: int
    """Of those, the ones the per-user cache lacked and now holds."""
    index: dict[str, Any]
    """The local index run's summary (``chunks_embedded`` 0 when the vault is the one
    that was pushed)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def pull(vault: Vault, target: MilvusTarget, full: bool = False) -> PullSummary:
    cache = vault.manager().cache
    if cache.folder is None or cache.max_bytes <= 0:
        raise ConfigError(
            "Pulling from a Milvus store hands its vectors to the index through the "
            "embedding cache, which is turned off.",
            fix="set embedding.cache_dir to a folder (not 'off') and embedding.cache_size_mb "
            "above 0 for the pull",
        )
    key = vault.embedder.cache_key
    generation, vectors = store_vectors(target, key)
    have = cache.get(key, vectors)
    missing = {h: v for h, v in vectors.items() if h not in have}
    cache.put(key, missing)
    summary: IndexSummary = vault.index(full=full, reason=f"pulled from {target.shown()}")
    return PullSummary(target.uri, generation, len(vectors), len(missing), summary.to_dict())


def store_vectors(target: MilvusTarget, key: str) -> tuple[str, dict[str, np.ndarray]]:
    """(the live generation, every vector of it by the hash of its text)."""
    client = connect(target)
    try:
        with engine_errors(target):
            manifest = live_manifest(client, target)
            stored = (manifest.get("embedding") or {}).get("key")
            if stored != key:
                raise IndexIncompatibleError(
                    f"The Milvus store {target.shown()} holds vectors of the embedding model "
                    f"'{stored}', and this vault embeds with '{key}'.",
                    fix=f"set embedding.model = '{(manifest.get('embedding') or {}).get('model')}'"
                    " (same runtime and weights) to pull from it",
                )
            gen = manifest["generation"]
            load(client, gen)
            out: dict[str, np.ndarray] = {}
            hash_of: dict[int, str] = {}
            fields = ["id", "text", "kind", "embed_hash", "dense"]
            for row in _rows(client, collection(gen, "chunks"), fields):
                out[row["embed_hash"]] = np.asarray(row["dense"], dtype=np.float32)
                units = [text_hash(u) for u in unit_texts(row["text"], row["kind"])]
                for k, h in enumerate(units or [row["embed_hash"]]):
                    hash_of[sentence_id(int(row["id"]), k)] = h
            if manifest.get("sentences"):
                for row in _rows(client, collection(gen, "sentences"), ["id", "dense"]):
                    h = hash_of.get(int(row["id"]))
                    if h is not None and h not in out:
                        out[h] = np.asarray(row["dense"], dtype=np.float32)
        return gen, out
    finally:
        client.close()


def _rows(client: Any, name: str, fields: list[str]) -> Any:
    it = client.query_iterator(name, batch_size=PAGE, filter="id >= 0", output_fields=fields)
    try:
        while page := it.next():
            yield from page
    finally:
        it.close()
