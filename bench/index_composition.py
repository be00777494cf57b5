"""What an index's bytes are made of, per chunk: each file and folder of the live
generation, its catalog (and WAL), each kind of segment file, and every table and
index inside the catalog (SQLite's ``dbstat``). Byte counts only, no timing.

Run: `.venv/bin/python bench/index_composition.py INDEX_DIR` (an index built by
`vaultsearch index VAULT --index-dir INDEX_DIR`).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

KB = 1024


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def parts(root: Path) -> tuple[int, dict[str, int], Path]:
    """(chunks, bytes by part, the catalog's path) of the live generation."""
    gen = root / "generations" / (root / "CURRENT").read_text().strip()
    chunks = int(json.loads((gen / "index.state.json").read_text())["chunks"])
    catalog = root / "catalogs" / (gen / "CATALOG").read_text().strip()
    out: dict[str, int] = {}
    for suffix in ("", "-wal", "-shm"):
        if (path := Path(f"{catalog}{suffix}")).is_file():
            out[f"catalog{suffix}"] = path.stat().st_size
    for path in sorted(gen.iterdir()):
        if path.name != "segments":
            out[path.name] = _size(path)
            continue
        for seg in path.iterdir():
            kind = f"segments/{seg.name.split('-')[0]}.{'.'.join(seg.name.split('.')[-2:])}"
            out[kind] = out.get(kind, 0) + seg.stat().st_size
    return chunks, out, catalog


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("index_dir", type=Path)
    root = parser.parse_args().index_dir
    chunks, sizes, catalog = parts(root)
    total = sum(sizes.values())
    print(f"{chunks} chunks, {total / 1e6:.1f} MB, {total / chunks / KB:.2f} KB per chunk")
    for name, size in sorted(sizes.items(), key=lambda kv: -kv[1]):
        print(f"  {name:36s} {size / 1e6:9.2f} MB {size / chunks / KB:7.3f} KB/chunk")
    db = sqlite3.connect(f"{catalog.resolve().as_uri()}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC")
        print("inside the catalog (dbstat):")
        for name, size in rows:
            print(f"  {name:36s} {size / 1e6:9.2f} MB {size / chunks / KB:7.3f} KB/chunk")
    finally:
        db.close()


if __name__ == "__main__":
    main()
