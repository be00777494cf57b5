"""Bytes a one-note edit writes into the new generation folder, by kind of file.

A file counts as written when its inode is new (not a hard link of a file of the
generation before it); a reader holds the old generation during the edit so that it
stays on disk to compare with. Counts bytes, not time: fine on a loaded machine.

Run: `.venv/bin/python bench/edit_bytes.py VAULT WORK [--copies N] [--watch] [--files]`
(WORK a scratch folder outside the repository; N copies of VAULT under unique folder
names; the per-user embedding cache makes every copy after the first free to embed).
``--watch`` applies the edit as the watcher does (``update(paths=[the note])``, in a
writer that already ran once), ``--files`` lists every file written with its bytes, and
``kernel_written`` is the process's own count (``/proc/self/io``), which also sees what
no new file shows: the catalog's WAL and checkpoint, SQLite's temp files, the per-user
cache. (Per file, ``strace -f -y -e trace=write,pwrite64`` around the edit says more.)
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


def _io_written() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    return 0


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
    parser.add_argument("--watch", action="store_true")
    parser.add_argument("--files", action="store_true")
    args = parser.parse_args()
    root = args.work / "vault"
    if not root.is_dir():
        for n in range(args.copies):
            shutil.copytree(args.vault, root / f"copy{n:02d}")
    vault = Vault.open(root, index_dir=args.work / "index")
    first = vault.index()
    status = vault.status()
    note = sorted(root.rglob("*.md"))[len(list(root.rglob("*.md"))) // 2]
    manager = vault.manager()
    if args.watch:
        manager.keep_parse_child = True
        manager.update(paths=[note.relative_to(root).as_posix()])
    hold = hold_current(vault.layout)
    assert hold is not None
    before = _files(hold.generation)
    inodes = {st.st_ino for st in before.values()}
    with note.open("a", encoding="utf-8") as fh:
        fh.write("\n\nOne more line, written by bench/edit_bytes.py.\n")
    st = note.stat()
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    io0 = _io_written()
    if args.watch:
        edit = manager.update(paths=[note.relative_to(root).as_posix()])
    else:
        edit = vault.index()
    kernel = _io_written() - io0
    after = _files(vault.layout.live)
    hold.release()
    written: dict[str, int] = {}
    linked: dict[str, int] = {}
    files: dict[str, int] = {}
    for name, st in after.items():
        into = linked if st.st_ino in inodes else written
        into[_kind(name)] = into.get(_kind(name), 0) + st.st_size
        if st.st_ino not in inodes:
            files[name] = st.st_size
    print(
        json.dumps(
            {
                "chunks": status["chunks"],
                "notes": status["notes"],
                "sentences": status["sentences"],
                "first_build_embedded": first.chunks_embedded + first.sentences_embedded,
                "edit_updated": edit.updated,
                "kernel_written": kernel,
                "written_bytes": written,
                "linked_bytes": linked,
                "generation_bytes": sum(st.st_size for st in after.values()),
                **({"files": dict(sorted(files.items()))} if args.files else {}),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
