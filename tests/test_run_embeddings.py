"""A writer's run keeps the vectors it found or embedded in a temp table of its catalog
connection: putting them there must not write them to disk again and again."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from vaultsearch.config import EmbeddingConfig
from vaultsearch.embedding import Embedder, text_hash
from vaultsearch.indexing.batch import BatchEmbedder
from vaultsearch.indexing.progress import SilentProgress
from vaultsearch.indexing.summary import IndexSummary
from vaultsearch.store.catalog import Catalog
from vaultsearch.store.embedcache import EmbeddingCache
from vaultsearch.store.vectors import normalize

N = 20_000
"""About 34 MB of float32 rows: within the temp table's page cache."""


def _written() -> int:
    """Bytes this process passed to write calls (``wchar``): temp files included, which
    SQLite unlinks as soon as it opens them."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/self/io")


def test_a_run_puts_cached_vectors_in_its_temp_table_without_a_statement_journal(
    tmp_path: Path, embedder: Embedder
) -> None:
    """A first build's step takes every vector from the per-user cache and puts it in
    the run's temp table, batch after batch, inside the run's one transaction. Put in a
    savepoint per batch, each temp-table page an insert changed was first copied to a
    statement journal on disk (inserts by hash touch pages all over the table): 330 to
    400 MB of temp files for the 45k chunks of a first build."""
    rng = np.random.default_rng(7)
    texts = {text_hash(f"sentence number {i}"): f"sentence number {i}" for i in range(N)}
    vectors = normalize(rng.standard_normal((N, 384)).astype(np.float32))
    cache = EmbeddingCache(tmp_path / "cache", 1 << 40)
    cache.put(embedder.cache_key, dict(zip(texts, vectors, strict=True)))
    catalog = Catalog(tmp_path / "catalog.sqlite")
    batches = BatchEmbedder(embedder, cache, threading.Event())
    items = list(texts.items())
    summary = IndexSummary()
    try:
        catalog.begin_run()
        before = _written()
        for start in range(0, N, 256):
            part = dict(items[start : start + 256])
            batches.embed_sentences(catalog, part, summary, SilentProgress(), EmbeddingConfig())
        written = _written() - before
        assert batches.from_cache == N and summary.sentences_embedded == 0
        held = catalog.embedding_blobs(embedder.cache_key, texts)
        assert len(held) == N
        assert (
            np.frombuffer(held[items[123][0]], dtype=np.float32).tolist() == vectors[123].tolist()
        )
        assert written < 1 << 20, f"{written / 1e6:.1f} MB written to put {N} vectors in"
        catalog.finish("g000001")
    finally:
        catalog.close()
        cache.close()
