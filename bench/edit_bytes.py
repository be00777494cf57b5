"""Bytes a one-note edit writes into the new generation folder, by kind of file.

A file counts as written when its inode is new (not a hard link of a file of the
generation before it); a reader holds the old generation during the edit so that it
stays on disk to compare with. Counts bytes, not time: fine on a loaded machine.

Run: `.venv/bin/python bench/edit_bytes.py VAULT WORK [--copies N]` (WORK a scratch
folder outside the repository; N copies of VAULT under unique folder names; the
per-user embedding cache makes every copy after the first free to embed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

from vaultsearch import Vault
from vaultsearch.store.generations import hold_current
from vaultsearch.store.layout import Generation


def _files(generation: Generation) -> dict[str, os.stat_result]:
    return {
        str(p.relative_to(generation.root)): p.stat()
        for p in generation.root.rglob("*")
        if p.is_file()
    }


def _kind(name: str) -> str:
    if name.startswith("segments/") or name in ("vectors.json", "sentences.json"):
        return "vectors"
    if name.endswith((".faiss",)):
        return "vectors"
    return name.split("/")[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("vault", type=Path)
    parser.add_argument("work", type=Path)
    parser.add_argument("--copies", type=int, default=1)
    args = parser.parse_args()
    root = args.work / "vault"
    if not root.is_dir():
        for n in range(args.copies):
            shutil.copytree(args.vault, root / f"copy{n:02d}")
    vault = Vault.open(root, index_dir=args.work / "index")
    first = vault.index()
    status = vault.status()
    note = sorted(root.rglob("*.md"))[len(list(root.rglob("*.md"))) // 2]
    hold = hold_current(vault.layout)
    assert hold is not None
    before = _files(hold.generation)
    inodes = {st.st_ino for st in before.values()}
    with note.open("a", encoding="utf-8") as fh:
        fh.write("\n\nOne more line, written by bench/edit_bytes.py.\n")
    st = note.stat()
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    edit = vault.index()
    after = _files(vault.layout.live)
    hold.release()
    written: dict[str, int] = {}
    linked: dict[str, int] = {}
    for name, st in after.items():
        into = linked if st.st_ino in inodes else written
        into[_kind(name)] = into.get(_kind(name), 0) + st.st_size
    print(
        json.dumps(
            {
                "chunks": status["chunks"],
                "notes": status["notes"],
                "sentences": status["sentences"],
                "first_build_embedded": first.chunks_embedded + first.sentences_embedded,
                "edit_updated": edit.updated,
                "written_bytes": written,
                "linked_bytes": linked,
                "generation_bytes": sum(st.st_size for st in after.values()),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
