"""Where each part of an index lives inside the index folder.

The derived indexes live in a generation folder; a pointer file names the
generation readers use. The catalog lives once in ``catalogs/``, shared by the
generations that name it in their ``CATALOG`` file, so an update writes the rows it
changes instead of a copy of the whole catalog (``store/generations.py`` says how a
reader still sees one generation's catalog). A generation of an older index holds
its own ``catalog.sqlite`` and no ``CATALOG`` file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

MANIFEST_NAME = "index.manifest.json"
STATE_NAME = "index.state.json"
POINTER_NAME = "CURRENT"
CATALOG_REF = "CATALOG"
_GENERATION = re.compile(r"^g(\d{6,})$")
_CATALOG = re.compile(r"^c(\d{6,})\.sqlite$")
_CATALOG_FILE = re.compile(r"^c(\d{6,})\.sqlite(-wal|-shm|-journal)?$")


@dataclass(frozen=True, slots=True)
class Generation:
    """One self-contained copy of the index: catalog, derived indexes, manifest, state.
    Each derived index names its own files in the folder (``location`` in
    ``store/derived/``)."""

    root: Path

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def number(self) -> int:
        m = _GENERATION.match(self.name)
        return int(m.group(1)) if m else 0

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST_NAME

    @property
    def state(self) -> Path:
        return self.root / STATE_NAME

    @property
    def catalog(self) -> Path:
        """The shared catalog this generation names, or its own (an older index)."""
        try:
            name = self.catalog_ref.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return self.own_catalog
        if not _CATALOG.match(name):
            return self.own_catalog
        return self.root.parent.parent / "catalogs" / name

    @property
    def own_catalog(self) -> Path:
        return self.root / "catalog.sqlite"

    @property
    def catalog_ref(self) -> Path:
        return self.root / CATALOG_REF

    @property
    def shares_catalog(self) -> bool:
        return self.catalog != self.own_catalog

    @property
    def reader_lock(self) -> Path:
        """Readers hold a shared flock on it; the writer deletes only what it can lock."""
        return self.root / "readers.lock"


@dataclass(frozen=True, slots=True)
class IndexLayout:
    root: Path

    @property
    def pointer(self) -> Path:
        return self.root / POINTER_NAME

    @property
    def generations(self) -> Path:
        return self.root / "generations"

    @property
    def manifest(self) -> Path:
        """A copy of the live generation's manifest, for git and CI cache keys."""
        return self.root / MANIFEST_NAME

    @property
    def lock(self) -> Path:
        return self.root / "writer.lock"

    @property
    def catalogs(self) -> Path:
        return self.root / "catalogs"

    def all_catalogs(self) -> list[Path]:
        try:
            names = sorted(p.name for p in self.catalogs.iterdir())
        except OSError:
            return []
        return [self.catalogs / n for n in names if _CATALOG.match(n)]

    def catalog_files(self) -> list[Path]:
        """Every catalog a file in ``catalogs/`` belongs to, the catalog itself or only
        its ``-wal``, ``-shm`` or ``-journal`` (what a lost catalog leaves)."""
        try:
            names = [p.name for p in self.catalogs.iterdir()]
        except OSError:
            return []
        found = {int(m.group(1)) for n in names if (m := _CATALOG_FILE.match(n))}
        return [self.catalogs / f"c{n:06d}.sqlite" for n in sorted(found)]

    def next_catalog(self) -> Path:
        """A name no file in ``catalogs/`` uses, counting a lost catalog's ``-wal``: a
        new file under that name would take the old WAL's pages as its own."""
        numbers = [int(p.name[1:-7]) for p in self.catalog_files()]
        return self.catalogs / f"c{max(numbers, default=0) + 1:06d}.sqlite"

    @property
    def legacy_catalog(self) -> Path:
        """Where the catalog lived before generations (spec version 1)."""
        return self.root / "catalog.sqlite"

    def generation(self, name: str) -> Generation:
        return Generation(self.generations / name)

    def current(self) -> Generation | None:
        try:
            name = self.pointer.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return None
        return self.generation(name) if _GENERATION.match(name) else None

    @property
    def live(self) -> Generation:
        """The generation readers use; for tests and tools that know one exists."""
        current = self.current()
        if current is None:
            raise FileNotFoundError(f"no index generation has been published in {self.root}")
        return current

    def all_generations(self) -> list[Generation]:
        try:
            names = sorted(p.name for p in self.generations.iterdir())
        except OSError:
            return []
        return [self.generation(n) for n in names if _GENERATION.match(n)]

    def next_generation(self) -> Generation:
        numbers = [g.number for g in self.all_generations()]
        current = self.current()
        if current is not None:
            numbers.append(current.number)
        return self.generation(f"g{max(numbers, default=0) + 1:06d}")

    def exists(self) -> bool:
        current = self.current()
        return current is not None and current.catalog.is_file()

    def size_on_disk(self) -> int:
        """The live generation, its catalog and the root files: what a reader uses."""
        if not self.root.is_dir():
            return 0
        current = self.current()
        files = [p for p in self.root.iterdir() if p.is_file()]
        if current is not None and current.root.is_dir():
            files += [p for p in current.root.rglob("*") if p.is_file()]
            if current.shares_catalog:
                catalog = current.catalog
                files += [catalog.with_name(catalog.name + x) for x in ("", "-wal")]
        return sum(p.stat().st_size for p in files if p.is_file())
