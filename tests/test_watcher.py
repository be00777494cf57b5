"""The watcher: file events in a real vault become debounced, path-limited index runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import HANG_GUARD, write_files
from tests.conftest import embeddings as cached_embeddings
from vaultsearch import Vault
from vaultsearch.app.live import LiveIndex, LiveState
from vaultsearch.app.watcher import Watcher, attach_watcher
from vaultsearch.config import config_from_dict
from vaultsearch.indexing.scan import IgnoreRules, scan_vault
from vaultsearch.parsers import DEFAULT_PARSER_MAP, ParserRegistry

DEBOUNCE_MS = 100


def note(title: str, body: str) -> str:
    return f"# {title}\n\n{body}\n"


def wait_until(check: Callable[[], bool], timeout: float = HANG_GUARD) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


def moved_in(path: Path, text: str) -> None:
    """Writes a file whole in one event: written in place, it is empty for a moment,
    and a starved test may let the watcher hand it over then, rightly indexing it."""
    staging = path.parent.parent / f".staging-{path.name}"
    staging.write_text(text, encoding="utf-8")
    os.replace(staging, path)


class LiveVault:
    """A vault with a LiveIndex and a watcher running, recording every run's summary."""

    def __init__(
        self, root: Path, index_dir: Path, debounce_ms: int = DEBOUNCE_MS, **config_tables: Any
    ) -> None:
        config = config_from_dict({"watch": {"debounce_ms": debounce_ms}, **config_tables})
        self.quiet = 0.5 + 2.5 * debounce_ms / 1000
        """Long enough that a run that was going to come has come."""
        self.root = root
        self.vault = Vault.open(root, index_dir=index_dir, config=config)
        self.runs: list[dict[str, Any]] = []
        self.live = LiveIndex(self.vault, on_change=self._on_change)
        self.watcher: Watcher = attach_watcher(self.live)
        self.live.start()
        assert wait_until(lambda: len(self.runs) >= 1 and self.live.wait_idle(0.1)), "first run"

    def _on_change(self, kind: str, state: LiveState) -> None:
        if kind == "run":
            self.runs.append(state.last_summary or {"error": state.last_error})

    def runs_after(self, mark: int) -> list[dict[str, Any]]:
        """Every run after ``mark``, once one came and then none for a quiet spell."""
        assert wait_until(lambda: len(self.runs) > mark), "no index run came"
        while True:
            seen = len(self.runs)
            time.sleep(self.quiet)
            if len(self.runs) == seen and self.live.wait_idle(HANG_GUARD):
                return self.runs[mark:]

    def run_after(self, mark: int) -> dict[str, Any]:
        """The run after ``mark``. A file written in place is created (or truncated), then
        written: a starved test process can pause between the two for longer than the
        debounce, and the design then indexes the file twice, the later runs only
        updating it again; any other later run is a second run the change did not ask for."""
        first, *later = self.runs_after(mark)
        for run in later:
            assert (run["added"], run["removed"], run["moved"]) == (0, 0, 0), [first, *later]
            assert run["updated"] <= 1, [first, *later]
        return first

    def together(self, *steps: Callable[[], object]) -> bool:
        """Runs ``steps``; True if no gap between them came near the debounce or the
        watcher's longest wait, so the design must hand them over as one batch."""
        gaps: list[float] = []
        start = last = time.monotonic()
        for step in steps:
            step()
            now = time.monotonic()
            gaps.append(now - last)
            last = now
        limit = self.watcher.debounce / 4
        return max(gaps, default=0.0) < limit and last - start < self.watcher.max_wait / 4

    def keyword(self, word: str) -> list[str]:
        return [h.path for h in self.vault.search(word, mode="keyword")]

    def embeddings(self) -> int:
        """Vectors in the per-user cache, where every embedding computed goes."""
        return cached_embeddings()

    def close(self) -> None:
        self.watcher.stop()
        self.live.stop()
        self.vault.close()


@pytest.fixture
def live(tmp_path: Path, embedder: object, request: pytest.FixtureRequest) -> Iterator[LiveVault]:
    """Parametrized indirectly, the parameter is the debounce in ms (default 100)."""
    root = write_files(
        tmp_path / "vault",
        {
            ".gitignore": "private/\n",
            "alpha.md": note("Alpha", "The alpha note talks about apples."),
            "folder/beta.md": note("Beta", "The beta note talks about bananas."),
        },
    )
    lv = LiveVault(root, tmp_path / "index", getattr(request, "param", DEBOUNCE_MS))
    try:
        yield lv
    finally:
        lv.close()


def test_create_modify_delete_a_file(live: LiveVault) -> None:
    mark = len(live.runs)
    (live.root / "gamma.md").write_text(note("Gamma", "A note about zebras."), encoding="utf-8")
    run = live.run_after(mark)
    assert (run["added"], run["updated"], run["removed"]) == (1, 0, 0)
    assert live.keyword("zebras") == ["gamma.md"]

    mark = len(live.runs)
    (live.root / "gamma.md").write_text(note("Gamma", "Now about giraffes."), encoding="utf-8")
    run = live.run_after(mark)
    assert (run["added"], run["updated"], run["removed"]) == (0, 1, 0)
    assert live.keyword("giraffes") == ["gamma.md"]
    assert live.keyword("zebras") == []

    mark = len(live.runs)
    (live.root / "gamma.md").unlink()
    run = live.run_after(mark)
    assert (run["added"], run["updated"], run["removed"]) == (0, 0, 1)
    assert live.keyword("giraffes") == []


def test_a_moved_file_keeps_its_embeddings(live: LiveVault) -> None:
    before = live.embeddings()
    mark = len(live.runs)
    (live.root / "alpha.md").rename(live.root / "folder" / "alpha renamed.md")
    run = live.run_after(mark)
    assert (run["moved"], run["added"], run["removed"], run["chunks_embedded"]) == (1, 0, 0, 0)
    assert live.keyword("apples") == ["folder/alpha renamed.md"]
    assert live.embeddings() == before


def test_a_folder_is_created_renamed_and_deleted(live: LiveVault) -> None:
    staging = live.root.parent / "outside"
    write_files(staging, {f"n{i}.md": note(f"Topic {i}", f"Kiwi fact {i}.") for i in range(6)})
    mark = len(live.runs)
    shutil.move(staging, live.root / "topics")  # a folder moved in from outside the vault
    run = live.run_after(mark)
    assert run["added"] == 6

    before = live.embeddings()
    mark = len(live.runs)
    (live.root / "topics").rename(live.root / "subjects")
    run = live.run_after(mark)
    assert (run["moved"], run["added"], run["removed"], run["chunks_embedded"]) == (6, 0, 0, 0)
    assert live.embeddings() == before
    assert sorted(live.keyword("kiwi")) == [f"subjects/n{i}.md" for i in range(6)]

    mark = len(live.runs)
    shutil.rmtree(live.root / "subjects")  # six unlinks: a starved test may split them
    assert sum(run["removed"] for run in live.runs_after(mark)) == 6
    assert live.keyword("kiwi") == []


def test_an_atomic_save_is_one_modification(live: LiveVault) -> None:
    mark = len(live.runs)
    tmp = live.root / "folder" / "beta.md.tmp"
    tmp.write_text(note("Beta", "The beta note now talks about cherries."), encoding="utf-8")
    os.replace(tmp, live.root / "folder" / "beta.md")
    run = live.run_after(mark)
    assert (run["added"], run["updated"], run["removed"], run["moved"]) == (0, 1, 0, 0)
    assert live.keyword("cherries") == ["folder/beta.md"]

    # vim: move the note to a backup, write it anew, drop the backup
    mark = len(live.runs)
    target = live.root / "alpha.md"
    together = live.together(
        lambda: target.rename(live.root / "alpha.md~"),
        lambda: target.write_text(note("Alpha", "The alpha note now talks plums."), "utf-8"),
        lambda: (live.root / "alpha.md~").unlink(),
    )
    runs = live.runs_after(mark)
    if together:  # else the note was rightly seen gone, then new
        assert [(r["added"], r["updated"], r["removed"], r["moved"]) for r in runs] == [
            (0, 1, 0, 0)
        ]
    assert live.keyword("plums") == ["alpha.md"]


def test_ignored_paths_trigger_no_run(live: LiveVault) -> None:
    batches, mark = live.watcher.batches, len(live.runs)
    write_files(
        live.root,
        {
            ".obsidian/workspace.json": "{}",
            ".obsidian/snippets/a.md": note("Obs", "hidden"),
            ".trash/old.md": note("Old", "trashed"),
            ".hidden/n.md": note("Hidden", "hidden folder"),
            "node_modules/pkg/readme.md": note("Pkg", "vendored"),
            "private/secret.md": note("Secret", "gitignored folder"),
            "private/deeper/more.md": note("More", "gitignored below"),
            "folder/.beta.md.swp": "swap",
            "folder/beta.md~": "backup",
            "~$alpha.md": "office lock",
            ".#alpha.md": "emacs lock",
            "draft.tmp": "temp",
            "picture.png": b"\x89PNG\r\n",
        },
    )
    moved_in(live.root / "huge.md", "# Huge\n\n" + "words " * 400_000)  # over max_file_size
    time.sleep(live.quiet)
    assert (live.watcher.batches, len(live.runs)) == (batches, mark)

    (live.root / "private" / "secret.md").unlink()
    shutil.rmtree(live.root / ".obsidian")
    time.sleep(live.quiet)
    assert (live.watcher.batches, len(live.runs)) == (batches, mark)

    (live.root / "visible.md").write_text(note("Visible", "A real note."), encoding="utf-8")
    assert live.run_after(mark)["added"] == 1  # the watcher was listening all along


@pytest.mark.parametrize("live", [400], indirect=True)  # 20 ms gaps stay far below it
def test_a_burst_of_changes_is_one_run(live: LiveVault) -> None:
    def step(i: int) -> None:
        (live.root / f"burst {i}.md").write_text(note(f"Burst {i}", "Mango."), encoding="utf-8")
        (live.root / "alpha.md").write_text(note("Alpha", f"Version {i}."), encoding="utf-8")
        time.sleep(0.02)

    mark = len(live.runs)
    together = live.together(*(partial(step, i) for i in range(20)))
    runs = live.runs_after(mark)
    if together:  # else a starved test paused past the debounce, and the design split it
        assert [(r["added"], r["updated"]) for r in runs] == [(20, 1)]
    assert sum(r["added"] for r in runs) == 20
    assert len(live.keyword("mango")) == 10  # top_k


def test_an_edited_gitignore_is_applied(live: LiveVault) -> None:
    mark = len(live.runs)
    with (live.root / ".gitignore").open("a", encoding="utf-8") as fh:
        fh.write("folder/\n")
    run = live.run_after(mark)
    assert run["removed"] == 1
    assert live.keyword("bananas") == []


def test_update_with_paths_looks_only_at_them(tmp_path: Path, embedder: object) -> None:
    root = write_files(
        tmp_path / "vault",
        {"a.md": note("A", "one"), "b.md": note("B", "two"), "d/c.md": note("C", "three")},
    )
    with Vault.open(root, index_dir=tmp_path / "index") as vault:
        vault.index()
        (root / "a.md").write_text(note("A", "one more"), encoding="utf-8")
        (root / "b.md").write_text(note("B", "two more"), encoding="utf-8")
        (root / "d").rename(root / "e")
        manager = vault.manager()
        s = manager.update(paths=["a.md", "d", "e"])
        assert (s.updated, s.moved, s.removed, s.added) == (1, 1, 0, 0)
        assert manager.update(paths=["nothing/here.md"]).to_dict()["updated"] == 0
        assert manager.update().updated == 1  # b.md, left for the whole-vault look


def test_a_single_path_is_judged_like_a_scan(tmp_path: Path) -> None:
    root = write_files(
        tmp_path / "vault",
        {
            ".gitignore": "build/\n*.draft.md\n!keep.draft.md\n",
            ".vaultsearchignore": "archive/2019/\n",
            "a.md": "a",
            "keep.draft.md": "k",
            "x.draft.md": "x",
            "build/out.md": "b",
            "archive/2019/old.md": "o",
            "archive/2020/new.md": "n",
            "notes/.obsidian/w.md": "w",
            "notes/sub/deep.md": "d",
            "notes/sub/.#deep.md": "lock",
        },
    )
    rules = IgnoreRules(root, ["notes/sub/skip*"])
    (root / "notes" / "sub" / "skip me.md").write_text("s", encoding="utf-8")
    scanned = set(scan_vault(root, rules, ParserRegistry(DEFAULT_PARSER_MAP)))
    every = {p.relative_to(root).as_posix() for p in root.rglob("*.md")}
    assert scanned == {p for p in every if not rules.excludes(p)}
    assert scanned == {"a.md", "keep.draft.md", "archive/2020/new.md", "notes/sub/deep.md"}


def test_a_watch_limit_is_one_clear_error(tmp_path: Path) -> None:
    """inotify's limits surface as ENOSPC or EMFILE: not "the disk is full"."""
    script = textwrap.dedent(
        """
        import os, resource, sys
        from vaultsearch import Vault
        from vaultsearch.errors import VaultsearchError
        from vaultsearch.app.live import LiveIndex
        from vaultsearch.app.watcher import attach_watcher
        import watchdog.observers.inotify_c

        live = LiveIndex(Vault.open(sys.argv[1], index_dir=sys.argv[2]))
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        held = []
        try:
            while True:
                held.append(os.open(os.devnull, os.O_RDONLY))
        except OSError:
            pass
        try:
            attach_watcher(live)
        except VaultsearchError as exc:
            print(exc)
            sys.exit(3)
        """
    )
    (tmp_path / "vault").mkdir()
    run = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "vault"), str(tmp_path / "index")],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert run.returncode == 3, run.stderr
    assert "a limit on file watching" in run.stdout and "max_user_watches" in run.stdout


def os_watches() -> int:
    """inotify watches this process holds, as the kernel counts them."""
    total = 0
    for fd in Path("/proc/self/fdinfo").iterdir():
        try:
            total += fd.read_text().count("inotify wd:")
        except OSError:
            continue
    return total


@pytest.mark.skipif(not Path("/proc/self/fdinfo").is_dir(), reason="needs Linux /proc")
def test_ignored_folders_hold_no_os_watch(tmp_path: Path, embedder: object) -> None:
    root = write_files(tmp_path / "vault", {"notes/a.md": note("A", "Apricots.")})
    for top in (".git/objects", "node_modules", "build"):
        for i in range(40):
            (root / top / f"d{i}").mkdir(parents=True)
    (root / ".gitignore").write_text("build/\n", encoding="utf-8")
    before = os_watches()
    live = LiveVault(root, tmp_path / "index")
    try:
        assert os_watches() - before == 2  # the vault and notes/
        mark = len(live.runs)
        (root / "node_modules" / "pkg").mkdir()
        (root / "fresh" / "deeper").mkdir(parents=True)
        (root / "fresh" / "deeper" / "b.md").write_text(note("B", "Blueberries."), "utf-8")
        live.run_after(mark)
        assert wait_until(lambda: os_watches() - before == 4)  # + fresh/ and fresh/deeper/
        assert live.keyword("blueberries") == ["fresh/deeper/b.md"]
        mark = len(live.runs)
        (root / "fresh" / "deeper" / "c.md").write_text(note("C", "Cloudberries."), "utf-8")
        live.run_after(mark)
        assert live.keyword("cloudberries") == ["fresh/deeper/c.md"]
    finally:
        live.close()


@pytest.fixture
def live_source(tmp_path: Path, embedder: object) -> Iterator[tuple[LiveVault, Path]]:
    """A watched vault with a folder source beside it, which has its own excludes,
    include globs and size limit."""
    root = write_files(tmp_path / "vault", {"alpha.md": note("Alpha", "About apples.")})
    ext = write_files(tmp_path / "ext", {"kept.md": note("Kept", "About kiwis.")})
    source = {
        "name": "ext",
        "path": str(ext),
        "exclude": ["drafts/"],
        "include": ["*.md"],
        "max_file_size": 2000,
    }
    lv = LiveVault(root, tmp_path / "index", sources=[source])
    try:
        yield lv, ext
    finally:
        lv.close()


def test_a_folder_source_is_watched_by_its_own_rules(
    live_source: tuple[LiveVault, Path],
) -> None:
    live, ext = live_source
    assert live.keyword("kiwis") == ["ext:kept.md"]

    staging = write_files(ext.parent / "staging", {"new.md": note("New", "About quinces.")})
    mark = len(live.runs)
    shutil.move(staging, ext / "deep")  # one event: a folder moved in whole
    run = live.run_after(mark)
    assert (run["added"], run["updated"], run["removed"]) == (1, 0, 0)
    assert live.keyword("quinces") == ["ext:deep/new.md"]

    batches, mark = live.watcher.batches, len(live.runs)
    write_files(
        ext,
        {
            "drafts/d.md": note("Draft", "Excluded quinces."),  # the source's exclude
            "other.txt": "Not in the source's include globs.",
        },
    )
    moved_in(ext / "big.md", "# Big\n\n" + "quince " * 400)  # over the source's max_file_size
    time.sleep(live.quiet)
    assert (live.watcher.batches, len(live.runs)) == (batches, mark)

    (ext / "kept.md").write_text(note("Kept", "Now about figs."), encoding="utf-8")
    run = live.run_after(mark)
    assert (run["added"], run["updated"], run["removed"]) == (0, 1, 0)
    assert live.keyword("figs") == ["ext:kept.md"]

    mark = len(live.runs)
    (ext / "deep" / "new.md").unlink()
    run = live.run_after(mark)
    assert run["removed"] == 1
    assert live.keyword("quinces") == []


def _parse_children() -> set[int]:
    """This process's child processes that are parse boxes (from /proc)."""
    out = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:  # the thread ended between listing and reading
            continue
        for pid in children:
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"vaultsearch.indexing.parsebox" in cmd:
                out.add(int(pid))
    return out


def test_a_live_index_keeps_its_parse_child_and_a_one_shot_run_does_not(
    live: LiveVault, tmp_path: Path
) -> None:
    before = _parse_children()
    one_shot = Vault.open(live.root, index_dir=tmp_path / "other-index")
    one_shot.index()
    assert _parse_children() == before  # stopped when the run ended, closed or not

    def live_child() -> int | None:
        box = live.vault.manager()._box
        child = box._child if box is not None else None
        return child.pid if child is not None else None

    mark = len(live.runs)
    (live.root / "gamma.md").write_text(note("Gamma", "The gamma note talks about grapes."))
    live.run_after(mark)
    kept = live_child()
    assert kept is not None and kept in _parse_children(), "kept between runs"
    mark = len(live.runs)
    (live.root / "gamma.md").write_text(note("Gamma", "Gamma now talks about guavas."))
    live.run_after(mark)
    assert live_child() == kept  # the same child served the next run
