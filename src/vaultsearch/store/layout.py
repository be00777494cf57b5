"""Where each part of an index lives inside the index folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vaultsearch.store.manifest import MANIFEST_NAME, STATE_NAME


@dataclass(frozen=True, slots=True)
class IndexLayout:
    root: Path

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST_NAME

    @property
    def state(self) -> Path:
        return self.root / STATE_NAME

    @property
    def catalog(self) -> Path:
        return self.root / "catalog.sqlite"

    @property
    def vectors(self) -> Path:
        return self.root / "vectors.faiss"

    @property
    def keywords(self) -> Path:
        return self.root / "keywords"

    @property
    def graph(self) -> Path:
        return self.root / "graph.json"

    @property
    def lock(self) -> Path:
        return self.root / "writer.lock"

    def exists(self) -> bool:
        return self.catalog.is_file()

    def size_on_disk(self) -> int:
        if not self.root.is_dir():
            return 0
        return sum(p.stat().st_size for p in self.root.rglob("*") if p.is_file())
