"""Searches on several threads while the same process commits new generations."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.conftest import HANG_GUARD, bump_mtime, write_files
from vaultsearch import Vault


def test_threads_search_while_the_index_changes(tmp_path: Path, embedder: object) -> None:
    root = write_files(
        tmp_path / "vault", {f"n{i}.md": f"# Note {i}\n\nriver stone {i}\n" for i in range(20)}
    )
    vault = Vault.open(root)
    vault.index()
    reader = Vault.open(root)  # a second Vault: its own orchestrator, as another client would

    def search_many(worker: int) -> int:
        found = 0
        for i in range(25):
            mode = ("keyword", "hybrid")[(worker + i) % 2]
            found += len(reader.search("river stone", mode=mode, top_k=5))
        return found

    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(search_many, w) for w in range(4)]
        for round_ in range(5):
            note = root / f"n{round_}.md"
            note.write_text(f"# Note {round_}\n\nriver stone edited {round_}\n")
            bump_mtime(note)
            vault.index()
        results = [f.result(timeout=HANG_GUARD) for f in futures]
    assert all(r > 0 for r in results)
    assert reader.search("edited", mode="keyword", top_k=10)


def test_faiss_scans_on_one_thread_in_every_thread_that_searches() -> None:
    """OpenMP's thread count belongs to the calling thread: a setting made once at import
    held for the main thread only, and the query pool's searches ran on two threads."""
    import faiss
    import numpy as np

    from vaultsearch.store.vectors import SegmentedVectors

    rows = np.random.default_rng(0).random((50, 8), dtype=np.float32)
    index = SegmentedVectors.from_arrays(np.arange(50), rows)
    seen: list[int] = []

    def search() -> None:
        assert index.search(np.ones(8, dtype=np.float32), 5)
        seen.append(faiss.omp_get_max_threads())

    with ThreadPoolExecutor(2) as pool:
        for f in [pool.submit(search) for _ in range(4)]:
            f.result()
    assert seen == [1, 1, 1, 1]
