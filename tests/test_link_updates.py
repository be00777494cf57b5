"""An update resolves only the links its changes can move (``indexing/linking.py``) and
updates the graph only where they moved (``store/derived/graph.py``): after every step
of a series of adds, edits, alias changes, moves and deletes, the links the index holds
are exactly what resolving every link from scratch gives, and its graph is the one
built whole from them. The writer is one long-lived process, as ``watch`` is: its link
resolvers are built once and carried from step to step, never built again."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.conftest import write_files
from vaultsearch import Vault
from vaultsearch.indexing import linking
from vaultsearch.indexing.linking import resolve_links
from vaultsearch.store.catalog import Catalog
from vaultsearch.store.derived import graph as derived_graph
from vaultsearch.store.derived.graph import GraphPart
from vaultsearch.store.graph import build_graph, graph_data, load_graph, read_delta
from vaultsearch.store.layout import IndexLayout
from vaultsearch.store.manifest import read_state
from vaultsearch.store.writer import GenerationWriter, copy_catalog

NAMES = ["Alpha", "Beta", "Gamma", "Delta", "Omega"]
FOLDERS = ["", "a/", "a/b/", "c/"]

LinkState = list[tuple[int, str, str | None, int, str | None]]


def _link(rng: random.Random) -> str:
    name, folder = rng.choice(NAMES), rng.choice(FOLDERS)
    return rng.choice(
        [
            f"[[{name}]]",
            f"[[{folder}{name}]]",
            f"[[{name.lower()}.md]]",
            f"[[./{name}]]",
            f"[[../{name}]]",
            f"[[nowhere|{name}]]",  # Dendron's order: the label is what resolves
            f"[[{name} alias]]",
            f"[{name}]({folder}{name}.md)",
        ]
    )


def _note(rng: random.Random, title: str) -> str:
    aliases = rng.sample(NAMES, rng.randint(0, 2))
    front = f"---\naliases: [{', '.join(a + ' alias' for a in aliases)}]\n---\n" if aliases else ""
    links = " ".join(_link(rng) for _ in range(rng.randint(1, 4)))
    return f"{front}# {title}\n\nAbout {title}: {links} {rng.random()}\n"


def _stored(catalog: Catalog) -> LinkState:
    return [(x.source_id, x.target, x.label, x.line, x.target_path) for x in catalog.links()]


def _resolved_from_scratch(
    index_dir: Path, scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> LinkState:
    """Every link resolved by resolvers built from every note, in resolvers of its own:
    the writer's kept ones stay as a long-lived writer would have them."""
    scratch.unlink(missing_ok=True)
    copy_catalog(IndexLayout(index_dir).live.catalog, scratch)
    catalog = Catalog(scratch)
    try:
        with monkeypatch.context() as patch, catalog.transaction():
            patch.setattr(linking, "_KEPT", {})
            catalog.db.execute("UPDATE links SET target_path=NULL")
            resolve_links(catalog, everything=True)
        return _stored(catalog)
    finally:
        catalog.close()


def _kept(index_dir: Path) -> object:
    """The writer's kept resolvers, which must be keyed by the catalog's names now."""
    catalog = Catalog(IndexLayout(index_dir).live.catalog, readonly=True)
    try:
        (key, kept), *others = linking._KEPT.items()
        assert not others and key == (str(catalog.path), catalog.names_token())
        return kept
    finally:
        catalog.close()


def _step(rng: random.Random, root: Path, files: dict[str, str]) -> set[str]:
    """One change to the vault; returns the paths it touched."""
    kind = rng.choice(["add", "add", "edit", "move", "delete"] if len(files) > 4 else ["add"])
    if kind == "add":
        path = f"{rng.choice(FOLDERS)}{rng.choice(NAMES)}{rng.choice(['', ' 2', ''])}.md"
        files[path] = _note(rng, path)
        write_files(root, {path: files[path]})
        return {path}
    path = rng.choice(sorted(files))
    if kind == "edit":
        files[path] = _note(rng, path)
        write_files(root, {path: files[path]})
    elif kind == "move":
        target = f"{rng.choice(FOLDERS)}{rng.choice(NAMES)} {rng.randint(0, 9)}.md"
        if target not in files:
            (root / target).parent.mkdir(parents=True, exist_ok=True)
            (root / path).rename(root / target)
            files[target] = files.pop(path)
            return {path, target}
    else:
        (root / path).unlink()
        del files[path]
    return {path}


@pytest.mark.parametrize(("compact_min", "by"), [(512, "scan"), (3, "scan"), (512, "paths")])
def test_incremental_links_and_graph_equal_resolving_and_building_everything(
    tmp_path: Path, embedder: object, monkeypatch: pytest.MonkeyPatch, compact_min: int, by: str
) -> None:
    """With a delta that grows for the whole series (512), and one folded into a new
    base every few steps (3): the graph a reader loads is the one built whole, its
    counts (kept by adding what each update changed) are the state file's, and a base no
    commit rewrote is a hard link. ``paths``: each update is told the paths that changed,
    as the watcher tells it, and reads only their catalog rows."""
    monkeypatch.setattr(derived_graph, "COMPACT_MIN", compact_min)
    rng = random.Random(23)
    root = tmp_path / "vault"
    files: dict[str, str] = {}
    for _ in range(8):
        _step(rng, root, files)
    index_dir = tmp_path / "index"
    moved_elsewhere = compactions = 0
    with Vault.open(root, index_dir=index_dir) as vault:
        vault.index()
        before: dict[tuple[int, str, int], str | None] = {}
        kept, names_changed = _kept(index_dir), 0
        token = next(iter(linking._KEPT))[1]
        for step in range(40):
            touched = _step(rng, root, files)
            base = GraphPart.location(IndexLayout(index_dir).live).stat()
            if by == "paths":
                vault.manager().update(paths=sorted(touched))
            else:
                vault.index()
            live = IndexLayout(index_dir).live
            compactions += not read_delta(GraphPart.location(live))[1]
            if read_delta(GraphPart.location(live))[1]:
                assert GraphPart.location(live).stat().st_ino == base.st_ino, (
                    step
                )  # linked, not written
            catalog = Catalog(IndexLayout(index_dir).live.catalog, readonly=True)
            try:
                stored = _stored(catalog)
                path_of = {i: p for i, p, _, _ in catalog.note_names()}
                built = graph_data(build_graph(catalog.notes(), catalog.links()))
                counted = catalog.graph_counts()
            finally:
                catalog.close()
            scratch = tmp_path / "scratch.sqlite"
            assert stored == _resolved_from_scratch(index_dir, scratch, monkeypatch), step
            assert _kept(index_dir) is kept, step  # carried over, not built again
            names_changed += token != (token := next(iter(linking._KEPT))[1])
            loaded = load_graph(GraphPart.location(live))
            assert graph_data(loaded) == built, step
            state = read_state(live.root) or {}
            assert state["links"] == loaded.number_of_edges(), step
            assert state["unresolved_links"] == loaded.graph["unresolved_links"], step
            assert (state["links"], state["unresolved_links"]) == counted, step
            now = {(s, t, line): p for s, t, _, line, p in stored if path_of[s] not in touched}
            moved_elsewhere += sum(1 for k, p in now.items() if k in before and before[k] != p)
            before = {(s, t, line): p for s, t, _, line, p in stored}
    assert moved_elsewhere > 0, "no step moved a link of an unchanged note: nothing was tested"
    assert names_changed > 20, names_changed
    assert (compactions > 2) == (compact_min == 3), compactions
    assert any(p is not None for *_, p in stored) and any(p is None for *_, p in stored)


def test_a_lost_delta_is_found_by_check_even_where_the_base_alone_agrees(
    tmp_path: Path, embedder: object
) -> None:
    """Right after a build the delta is empty, so the base alone still gives the right
    graph: a missing or changed delta is damage all the same, and check says so."""
    root = write_files(tmp_path / "vault", {"A.md": "# A\n\n[[B]]\n", "B.md": "# B\n\nhi\n"})
    with Vault.open(root, index_dir=tmp_path / "index") as vault:
        vault.index()
        live = IndexLayout(tmp_path / "index").live
        delta = live.root / "graph.delta.json"
        text = delta.read_text(encoding="utf-8")
        delta.unlink()
        assert "graph: graph.delta.json is missing" in vault.manager().verify().problems
        vault.manager().repair()
        assert vault.manager().verify().ok
        live = IndexLayout(tmp_path / "index").live
        delta = live.root / "graph.delta.json"
        same_graph = delta.read_text(encoding="utf-8").replace('"nodes":2', '"nodes":3')
        assert same_graph != delta.read_text(encoding="utf-8"), text
        delta.unlink()
        delta.write_text(same_graph, encoding="utf-8")  # parses, and gives the same graph
        problems = vault.manager().verify().problems
        assert "graph: graph.delta.json differs from the checksum the writer recorded" in problems


def test_a_run_that_fails_after_carrying_the_resolvers_leaves_none_ahead_of_the_catalog(
    tmp_path: Path, embedder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run adds ``Target.md`` and carries the writer's resolvers over to it, then
    fails before its commit: the catalog never had ``Target.md``. The next run, which
    resolves ``[[Target]]`` again, must not find it in resolvers that ran ahead."""
    root = write_files(tmp_path / "vault", {"A.md": "# A\n\n[[Target]]\n", "B.md": "# B\n"})
    with Vault.open(root, index_dir=tmp_path / "index") as vault:
        vault.index()
        write_files(root, {"Target.md": "# Target\n"})
        with monkeypatch.context() as patch:
            patch.setattr(GenerationWriter, "commit", _fail)
            with pytest.raises(RuntimeError, match="after the links"):
                vault.manager().update(paths=["Target.md"])
        (root / "Target.md").unlink()
        write_files(root, {"A.md": "# A\n\n[[Target]] again\n"})
        vault.manager().update(paths=["A.md", "Target.md"])
        catalog = Catalog(IndexLayout(tmp_path / "index").live.catalog, readonly=True)
        try:
            assert [(x.target, x.target_path) for x in catalog.links()] == [("Target", None)]
        finally:
            catalog.close()


def _fail(*_: object) -> None:
    raise RuntimeError("a failure after the links were resolved")
