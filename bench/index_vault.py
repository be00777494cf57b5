"""Index a real vault from scratch, then re-run, edit, delete and rename: issue #2's figures.

"From scratch" means an empty per-user embedding cache too (a temporary one), so the
first run pays every model call; a second first build without sentence vectors
(``embedding.sentences = false``) in the same run gives their cost as a ratio.

Run: `make bench-index` (or `.venv/bin/python bench/index_vault.py [VAULT]`).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import SHARED, require, write_section
from vaultsearch import Vault
from vaultsearch.config import config_from_dict
from vaultsearch.indexing.progress import LogProgress
from vaultsearch.store.derived.vectors import VectorPart
from vaultsearch.store.embedcache import CACHE_ENV
from vaultsearch.store.segments import read_list


def main() -> None:
    source = require(
        Path(sys.argv[1]) if len(sys.argv) > 1 else SHARED / "vaults" / "vaultofknowledge"
    )
    work = Path(tempfile.mkdtemp(prefix="vs-bench-index-"))
    try:
        vault_dir = work / "vault"
        shutil.copytree(source, vault_dir)
        os.environ[CACHE_ENV] = str(work / "cache-chunks-only")
        plain = Vault.open(
            vault_dir,
            index_dir=work / "index-chunks-only",
            config=config_from_dict({"embedding": {"sentences": False}}),
        )
        plain.embedder.embed_query("model load")  # each build's own model, loaded untimed
        t = time.perf_counter()
        chunks_only = plain.index(progress=LogProgress(every=15))
        chunks_only_s = time.perf_counter() - t
        plain_size = plain.status()["size_on_disk"]
        plain.close()
        os.environ[CACHE_ENV] = str(work / "cache")
        vault = Vault.open(vault_dir, index_dir=work / "index")
        files = len(vault.manager().scan())
        vault.embedder.embed_query("model load")

        t = time.perf_counter()
        first = vault.index(progress=LogProgress(every=15))
        first_s = time.perf_counter() - t
        t = time.perf_counter()
        second = vault.index()
        second_s = time.perf_counter() - t

        notes = sorted(vault.manager().scan())
        edit = vault_dir / notes[len(notes) // 2]
        edit.write_text(
            edit.read_text(encoding="utf-8") + "\n\nAn appended closing line.\n", encoding="utf-8"
        )
        edited = vault.index()

        vectors_before = len(read_list(VectorPart.location(vault.layout.live)))
        victim = max(notes[: len(notes) // 2], key=lambda p: (vault_dir / p).stat().st_size)
        (vault_dir / victim).unlink()
        deleted = vault.index()
        vectors_after = len(read_list(VectorPart.location(vault.layout.live)))

        src = vault_dir / notes[len(notes) // 4]
        src.rename(src.with_name("renamed " + src.name))
        renamed = vault.index()
        status = vault.status()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    failed = "".join(f"\n  - `{p}`: {r}" for p, r in first.failed.items()) or " none"
    body = f"""
Vault: `{source.name}` ({files} note files).

| run | seconds | chunks (+ sentences) embedded | notes |
| --- | ---: | ---: | --- |
| first index (from scratch) | {first_s:.1f} | {first.chunks_embedded} (+ {first.sentences_embedded}) | {first.added} added, {first.chunks_written / first_s:.1f} chunks/s |
| first index without sentence vectors (`embedding.sentences = false`) | {chunks_only_s:.1f} | {chunks_only.chunks_embedded} | sentence vectors cost {first_s / chunks_only_s:.2f}x the time of a first build |
| second run, nothing changed | {second_s:.2f} | {second.chunks_embedded} | {100 * second_s / first_s:.2f}% of the first run |
| one note edited (a line appended) | {edited.seconds:.2f} | {edited.chunks_embedded} | {edited.updated} updated |
| one note deleted | {deleted.seconds:.2f} | {deleted.chunks_embedded} | vectors {vectors_before} → {vectors_after} |
| one note renamed | {renamed.seconds:.2f} | {renamed.chunks_embedded} | {renamed.moved} moved |

Index: {status["notes"]} notes, {status["chunks"]} chunks, {status["links"]} links
({status["broken_links"]} broken), {status["size_on_disk"] / 1e6:.1f} MB on disk
({plain_size / 1e6:.1f} MB without sentence vectors).
Failed files:{failed}
"""
    write_section("index", "Indexing a real vault", body)


if __name__ == "__main__":
    main()
