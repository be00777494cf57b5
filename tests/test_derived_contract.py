"""Every derived index registered in ``DERIVED`` through the same cases, by its own
contract (``store/derived/base.py``), on a real catalog: built, searched, updated,
reopened, checked, damaged, levelled, and stood in for when damaged. A new index is
picked up by the registry alone; what it is asked depends only on its role."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import write_files
from vaultsearch import Vault
from vaultsearch.embedding import Embedder
from vaultsearch.errors import VaultsearchError
from vaultsearch.search.query import parse_query
from vaultsearch.store.catalog import Catalog
from vaultsearch.store.derived import DERIVED, Batch, DerivedIndex, DerivedSettings, Query
from vaultsearch.store.embedcache import EmbeddingCache, default_cache_dir
from vaultsearch.store.layout import Generation, IndexLayout
from vaultsearch.store.verify import settings_of
from vaultsearch.store.writer import attach_supply

BEFORE = {
    "Volcano.md": "# Volcano\n\nMagma rises through the crater. Lava flows down the slopes "
    "of the volcano.\n\nSee [[Glacier]].\n",
    "Glacier.md": "# Glacier\n\nIce sheets creep down the valley. The glacier carves fjords "
    "as it melts.\n",
    "Violin.md": "# Violin\n\nThe violinist tunes the strings. She draws the bow across the "
    "violin.\n\nInspired by [[Volcano]].\n",
    "Bakery.md": "# Bakery\n\nThe baker kneads the dough at dawn. Sourdough bread bakes in "
    "the oven.\n\nThe café beside [[Violin]].\n",
}
COMET = (
    "# Comet\n\nThe icy nucleus of the comet grows a tail of dust. It brightens as it nears "
    "the sun.\n\nHeard in [[Violin]].\n"
)
TOPICS = {
    "Volcano.md": "magma lava crater",
    "Bakery.md": "baker dough sourdough bread",
    "Comet.md": "comet nucleus tail",
}


@dataclass
class World:
    """One vault's catalog before an edit (a copy of its index) and after it."""

    root: Path
    before: Path
    after: Path
    settings: DerivedSettings
    embedder: Embedder
    cache: EmbeddingCache

    def catalog(self, index_dir: Path) -> Catalog:
        return Catalog(IndexLayout(index_dir).live.catalog, readonly=True)

    def query(self, path: str) -> Query:
        parsed = parse_query(TOPICS[path])
        return Query(
            text=parsed.text,
            terms=tuple(parsed.keyword_terms),
            vector=self.embedder.embed_query(parsed.text),
        )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> World:
    base = tmp_path_factory.mktemp("contract")
    root = write_files(base / "vault", BEFORE)
    with Vault.open(root, index_dir=base / "index") as vault:
        vault.index()
        settings = settings_of(vault.layout.live, vault.config)
    shutil.copytree(base / "index", base / "before")
    (root / "Bakery.md").unlink()
    write_files(root, {"Comet.md": COMET})
    with Vault.open(root, index_dir=base / "index") as vault:
        vault.index()
    cache = EmbeddingCache(default_cache_dir(), 1 << 40)
    return World(root, base / "before", base / "index", settings, embedder, cache)


def generation(tmp_path: Path, name: str) -> Generation:
    folder = tmp_path / "generations" / name
    folder.mkdir(parents=True)
    return Generation(folder)


def chunks_of(catalog: Catalog, path: str) -> set[int]:
    note = catalog.note_by_path(path)
    assert note is not None, path
    return {c.id for c in catalog.chunks_of(note.id)}


def linked(catalog: Catalog, path: str) -> set[str]:
    """The notes a note links to or is linked from, as the catalog resolves them."""
    paths = {n.id: n.path for n in catalog.notes()}
    out = set()
    for link in catalog.links():
        source = paths.get(link.source_id)
        if link.target_path is None or link.target_path == source:
            continue
        if source == path:
            out.add(link.target_path)
        elif link.target_path == path:
            out.add(source)
    return out


def answer(cls: type[DerivedIndex], reader: Any, world: World, catalog: Catalog, path: str) -> Any:
    """What the index answers about one note, by its role: the chunk a branch finds, or
    a re-scorer puts first among every chunk; the notes a boost lends to."""
    if cls.role == "boost":
        return set(reader.neighbours(path))
    allowed = np.asarray(catalog.chunk_ids()) if cls.role == "rescore" else None
    hits = reader.search(world.query(path), 3, allowed)
    return hits[0][0] if hits else None


def right(cls: type[DerivedIndex], catalog: Catalog, path: str, got: Any) -> bool:
    if cls.role == "boost":
        return bool(got == linked(catalog, path) and got)
    return got in chunks_of(catalog, path)


def writing(cls: type[DerivedIndex], gen: Generation, world: World, fresh: bool) -> DerivedIndex:
    """The index opened for writing as the writer opens it: a vector index finds the
    vectors of the chunks it adds in the per-user cache (the catalog keeps none)."""
    part = cls(gen, world.settings)
    part.open(fresh=fresh)
    attach_supply(part, world.cache)
    return part


def build(cls: type[DerivedIndex], world: World, gen: Generation) -> dict[str, Any]:
    """The index written whole from the catalog before the edit, by ``apply``."""
    catalog = world.catalog(world.before)
    try:
        part = writing(cls, gen, world, fresh=True)
        paths = [n.path for n in catalog.notes()]
        part.apply(Batch(catalog, [], catalog.chunk_ids(), paths))
        return part.commit(catalog)
    finally:
        catalog.close()


def update(
    cls: type[DerivedIndex], world: World, source: Generation, gen: Generation
) -> dict[str, Any]:
    """The edit (Bakery removed, Comet added) as one batch on a copy of ``source``."""
    old, new = world.catalog(world.before), world.catalog(world.after)
    try:
        cls.carry(source, gen)
        part = writing(cls, gen, world, fresh=False)
        assert not part.level_with(old), "an index just written is level with its catalog"
        before, after = set(old.chunk_ids()), set(new.chunk_ids())
        part.apply(
            Batch(new, sorted(before - after), sorted(after - before), ["Bakery.md", "Comet.md"])
        )
        return part.commit(new)
    finally:
        old.close()
        new.close()


def files_of(gen: Generation) -> list[Path]:
    """The files the index wrote (the generation holds nothing else); lock files are the
    engine's own, never read for content."""
    return sorted(p for p in gen.root.rglob("*") if p.is_file() and not p.name.endswith(".lock"))


def found(
    cls: type[DerivedIndex], gen: Generation, world: World, recorded: dict[str, Any]
) -> list[str]:
    """``check``'s problems; an exception counts as one, as ``vaultsearch check`` counts it."""
    catalog = world.catalog(world.after)
    try:
        return cls(gen, world.settings).check(catalog, recorded)
    except BaseException as exc:  # a Rust panic included
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        return [f"raised {type(exc).__name__}"]
    finally:
        catalog.close()


BY_NAME = pytest.mark.parametrize("cls", DERIVED, ids=[c.name for c in DERIVED])


@BY_NAME
def test_a_build_from_the_catalog_answers_and_its_check_is_clean(
    cls: type[DerivedIndex], world: World, tmp_path: Path
) -> None:
    gen = generation(tmp_path, "g000001")
    recorded = build(cls, world, gen)
    assert cls.written(gen) and cls.location(gen).exists()
    reader = cls(gen, world.settings).reader()
    assert len(reader) > 0
    catalog = world.catalog(world.before)
    try:
        for path in ("Volcano.md", "Bakery.md"):
            assert right(cls, catalog, path, answer(cls, reader, world, catalog, path)), path
        assert cls(gen, world.settings).check(catalog, recorded) == []
        assert cls(gen, world.settings).damage(recorded) is None
    finally:
        catalog.close()


@BY_NAME
def test_a_filter_limits_what_a_search_returns(
    cls: type[DerivedIndex], world: World, tmp_path: Path
) -> None:
    if cls.role == "boost":
        pytest.skip("a boost is asked about notes the fusion found, never searched")
    gen = generation(tmp_path, "g000001")
    build(cls, world, gen)
    reader = cls(gen, world.settings).reader()
    catalog = world.catalog(world.before)
    try:
        glacier = chunks_of(catalog, "Glacier.md")
        hits = reader.search(world.query("Volcano.md"), 10, np.asarray(sorted(glacier)))
        assert {cid for cid, _ in hits} <= glacier
        assert reader.search(world.query("Volcano.md"), 10, np.zeros(0, dtype=np.int64)) == []
    finally:
        catalog.close()


@BY_NAME
def test_an_update_is_seen_and_leaves_the_earlier_generation_as_it_was(
    cls: type[DerivedIndex], world: World, tmp_path: Path
) -> None:
    first, second = generation(tmp_path, "g000001"), generation(tmp_path, "g000002")
    build(cls, world, first)
    recorded = update(cls, world, first, second)
    new, old = world.catalog(world.after), world.catalog(world.before)
    try:
        reader = cls(second, world.settings).reader()
        assert right(cls, new, "Comet.md", answer(cls, reader, world, new, "Comet.md"))
        assert right(cls, new, "Volcano.md", answer(cls, reader, world, new, "Volcano.md"))
        gone = chunks_of(old, "Bakery.md")
        if cls.role == "boost":
            assert reader.neighbours("Bakery.md") == []
        else:
            everything = reader.search(world.query("Bakery.md"), 100, None)
            assert not gone & {cid for cid, _ in everything}
        assert found(cls, second, world, recorded) == []
        earlier = cls(first, world.settings).reader()  # hard links, never rewritten
        assert right(cls, old, "Bakery.md", answer(cls, earlier, world, old, "Bakery.md"))
    finally:
        new.close()
        old.close()


@BY_NAME
def test_reopened_after_its_commit_it_is_level_and_answers_the_same(
    cls: type[DerivedIndex], world: World, tmp_path: Path
) -> None:
    first, second = generation(tmp_path, "g000001"), generation(tmp_path, "g000002")
    build(cls, world, first)
    update(cls, world, first, second)
    catalog = world.catalog(world.after)
    try:
        before = answer(cls, cls(second, world.settings).reader(), world, catalog, "Comet.md")
        part = writing(cls, second, world, fresh=False)
        assert not part.level_with(catalog)
        again = answer(cls, cls(second, world.settings).reader(), world, catalog, "Comet.md")
        assert again == before
    finally:
        catalog.close()


@BY_NAME
def test_check_finds_every_file_deleted_or_changed(
    cls: type[DerivedIndex], world: World, tmp_path: Path
) -> None:
    first, second = generation(tmp_path, "g000001"), generation(tmp_path, "g000002")
    build(cls, world, first)
    recorded = update(cls, world, first, second)
    files = files_of(second)
    assert files
    missed = []
    for path in files:
        data = path.read_bytes()
        path.unlink()
        if not found(cls, second, world, recorded):
            missed.append(f"{path.name} deleted")
        middle = len(data) // 2
        path.write_bytes(data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :])
        if not found(cls, second, world, recorded):
            missed.append(f"{path.name} changed")
        path.write_bytes(data)
    assert missed == []
    assert found(cls, second, world, recorded) == []


@BY_NAME
def test_damage_at_open_says_its_files_are_gone(
    cls: type[DerivedIndex], world: World, tmp_path: Path
) -> None:
    first, second = generation(tmp_path, "g000001"), generation(tmp_path, "g000002")
    build(cls, world, first)
    recorded = update(cls, world, first, second)
    assert cls(second, world.settings).damage(recorded) is None
    where = cls.location(second)
    if where.is_dir():
        shutil.rmtree(where)
    else:
        where.unlink()
    assert not cls.written(second)
    reason = cls(second, world.settings).damage(recorded)
    assert isinstance(reason, str) and reason


@BY_NAME
def test_level_with_brings_an_index_of_an_older_catalog_level(
    cls: type[DerivedIndex], world: World, tmp_path: Path
) -> None:
    """An index left by another run (the catalog before the edit) under the catalog
    after it, and an empty one: each is levelled, committed, and answers as the
    catalog does."""
    first = generation(tmp_path, "g000001")
    build(cls, world, first)
    catalog = world.catalog(world.after)
    try:
        for name, fresh in (("g000002", False), ("g000003", True)):
            gen = generation(tmp_path, name)
            cls.carry(first, gen)
            part = writing(cls, gen, world, fresh=fresh)
            changed = part.level_with(catalog)
            assert changed or fresh, "the older index was left as it was"
            recorded = part.commit(catalog)
            assert found(cls, gen, world, recorded) == [], name
            reader = cls(gen, world.settings).reader()
            assert right(cls, catalog, "Comet.md", answer(cls, reader, world, catalog, "Comet.md"))
    finally:
        catalog.close()


@BY_NAME
def test_the_empty_stand_in_answers_nothing(cls: type[DerivedIndex], world: World) -> None:
    reader = cls.empty(world.settings)
    assert len(reader) == 0
    if cls.role == "boost":
        assert reader.neighbours("Volcano.md") == []
    else:
        assert reader.search(world.query("Volcano.md"), 10, None) == []
    assert cls.status(reader) and all(v == 0 for v in cls.status(reader).values())


@BY_NAME
def test_a_search_without_it_says_so_or_stops(
    cls: type[DerivedIndex], world: World, tmp_path: Path
) -> None:
    """The role decides what a search does when the index is gone at open: a boost or a
    re-scorer is left out and named, a lost branch leaves hybrid search to the other
    branches, and the index that analyses every query stops the search with the fix."""
    index_dir = tmp_path / "index"
    shutil.copytree(world.after, index_dir)
    where = cls.location(IndexLayout(index_dir).live)
    if where.is_dir():
        shutil.rmtree(where)
    else:
        where.unlink()
    with Vault.open(world.root, index_dir=index_dir) as vault:
        if cls.analyses:
            with pytest.raises(VaultsearchError) as exc:
                vault.orchestrator.search(TOPICS["Comet.md"], mode="hybrid")
            assert "check --repair" in str(exc.value.fix)
            return
        hits = vault.orchestrator.search(TOPICS["Comet.md"], mode="hybrid")
        assert hits.degraded is not None and cls.label in hits.degraded
        assert len(hits) > 0, "the search went on without it"


@BY_NAME
def test_a_reader_made_from_the_earlier_ones_answers_as_a_fresh_one(
    cls: type[DerivedIndex], world: World, tmp_path: Path
) -> None:
    """A long-lived reader opens the next generation from the reader it holds (mapped
    segments kept, graph records applied): every answer and count as a fresh open."""
    first, second = generation(tmp_path, "g000001"), generation(tmp_path, "g000002")
    build(cls, world, first)
    recorded = update(cls, world, first, second)
    old, new = world.catalog(world.before), world.catalog(world.after)
    try:
        earlier = cls(first, world.settings).reader()
        assert answer(cls, earlier, world, old, "Bakery.md") is not None  # its files read
        followed = cls(second, world.settings).reader(earlier)
        fresh = cls(second, world.settings).reader()
        allowed = np.asarray(new.chunk_ids())
        for path in TOPICS:
            if cls.role == "boost":
                assert followed.neighbours(path) == fresh.neighbours(path), path
            else:
                q = world.query(path)
                assert followed.search(q, 50, allowed) == fresh.search(q, 50, allowed), path
        assert cls.status(followed) == cls.status(fresh)
        assert cls(second, world.settings).counts(recorded) == cls.status(fresh)
    finally:
        old.close()
        new.close()
