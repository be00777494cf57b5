"""Named sources on real git repositories, real FAISS, Tantivy and the bundled model."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_files
from vaultsearch import Vault
from vaultsearch.cli.main import main
from vaultsearch.config import config_from_dict
from vaultsearch.errors import ConfigError, IndexBusyError, QueryError, VaultsearchError
from vaultsearch.indexing import sources as source_scan
from vaultsearch.sourceconfig import source_from_table
from vaultsearch.store.catalog import Catalog
from vaultsearch.store.layout import IndexLayout

GIT_ID = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.org",
}

LIB = {
    "README.md": "# Lib\n\nThe library sorts cherries by ripeness. See [[index]].\n",
    "index.md": "# Index\n\nThe library's own index page about cherries.\n",
    "notes/design.md": "# Design\n\n## Storage\n\nCherries are stored in crates.\n",
    "build/out.md": "# Built\n\nGenerated output about cherries.\n",
    ".gitignore": "build/\n",
}


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ID}
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def make_repo(root: Path, files: dict[str, str | bytes]) -> tuple[Path, Path]:
    """A working repository with one commit, and a bare clone of it (the 'remote')."""
    work = root / "work"
    work.mkdir(parents=True)
    git(work, "init", "-q", "-b", "main")
    write_files(work, files)
    git(work, "add", "-A")
    git(work, "commit", "-qm", "first")
    bare = root / "lib.git"
    git(root, "clone", "-q", "--bare", str(work), str(bare))
    return work, bare


def push_change(work: Path, bare: Path, files: dict[str, str | bytes]) -> None:
    write_files(work, files)
    git(work, "add", "-A")
    git(work, "commit", "-qm", "change")
    git(work, "push", "-q", str(bare), "main")


def vault_with_sources(tmp_path: Path, lib_url: str) -> Path:
    vault = write_files(
        tmp_path / "vault",
        {
            "Home.md": "# Home\n\nApples grow on trees. See [[index]].\n",
            "index.md": "# Index\n\nThe vault's index page about apples.\n",
        },
    )
    write_files(
        tmp_path / "docs",
        {
            "guide.md": "# Guide\n\nBananas ripen in the sun.\n",
            "notes.txt": "Plain text about banana bread.\n",
            "secret.md": "# Secret\n\nBananas hidden by .ragignore.\n",
            "private/x.md": "# Private\n\nBananas hidden by .vaultsearchignore.\n",
            "big.md": "# Big\n\n" + "banana " * 400,
            "blob.txt": b"bin\x00\x00\x01\x02\x03\x04\x05\x06\x07data" * 10,
            ".ragignore": "secret.md\n",
            ".vaultsearchignore": "private/\n",
        },
    )
    config = vault / ".vaultsearch" / "config.toml"
    config.parent.mkdir()
    config.write_text(
        """
[[sources]]
name = "docs"
path = "../docs"
max_file_size = 1000
""",
        encoding="utf-8",
    )
    (vault / ".vaultsearch" / "sources.toml").write_text(  # as `sources add` writes it
        f'[[sources]]\nname = "lib"\ntype = "git"\nurl = "{lib_url}"\nbranch = "main"\n',
        encoding="utf-8",
    )
    return vault


def indexed_sources(tmp_path: Path) -> tuple[Vault, Path, Path]:
    """A vault of its own with the folder source and the git source, indexed once:
    the vault, the git source's working copy and its bare remote."""
    work, bare = make_repo(tmp_path / "repo", LIB)
    vault = Vault.open(vault_with_sources(tmp_path, bare.as_uri()))
    vault.index()
    return vault, work, bare


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> Vault:
    """One vault with a folder source and a git source, indexed once for the module's
    read-only tests."""
    root = tmp_path_factory.mktemp("sources")
    _, bare = make_repo(root / "repo", LIB)
    vault = Vault.open(vault_with_sources(root, bare.as_uri()))
    vault.index()
    yield vault
    vault.close()


def test_every_source_is_indexed_under_its_ids(indexed: Vault) -> None:
    paths = {n.path: n for n in indexed.orchestrator.snapshot().notes.values()}
    assert set(paths) == {
        "Home.md",
        "index.md",
        "docs:guide.md",
        "docs:notes.txt",
        "lib:README.md",
        "lib:index.md",
        "lib:notes/design.md",
    }
    assert paths["docs:notes.txt"].kind == "text"
    assert paths["docs:guide.md"].source == "docs"
    failed = indexed.status()["failed"]
    assert failed["docs:blob.txt"] == "binary file (NUL bytes)"
    assert "over max_file_size of source 'docs' (1000)" in failed["docs:big.md"]


def test_git_source_indexes_tracked_files_of_the_branch(indexed: Vault) -> None:
    clone = indexed.manager().sources.clones / "lib"
    assert (clone / ".git").is_dir()
    assert not any(p.startswith("lib:build/") for p in indexed.orchestrator.snapshot().note_by_path)
    entry = next(s for s in indexed.sources() if s["name"] == "lib")
    assert entry["commit"] == git(clone, "rev-parse", "HEAD").strip()
    assert (entry["files"], entry["type"], entry["url"]) == (3, "git", entry["url"])


def test_links_resolve_within_their_source(indexed: Vault) -> None:
    graph = indexed.orchestrator.snapshot().reader("graph").graph
    assert graph.has_edge("Home.md", "index.md")
    assert graph.has_edge("lib:README.md", "lib:index.md")
    assert not graph.has_edge("lib:README.md", "index.md")


def test_hits_carry_their_source_and_kind(indexed: Vault) -> None:
    hits = indexed.search("banana bread", top_k=3)
    top = hits[0]
    assert (top.path, top.source, top.kind) == ("docs:notes.txt", "docs", "text")
    assert top.to_dict()["kind"] == "text"


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        ({"sources": ["lib"]}, {"lib:README.md", "lib:index.md", "lib:notes/design.md"}),
        ({"sources": ["vault"]}, {"Home.md", "index.md"}),
        ({"sources": ["docs", "vault"], "kinds": ["text"]}, {"docs:notes.txt"}),
        ({"kinds": ["note"], "path_prefix": ["notes/"]}, {"lib:notes/design.md"}),
        ({"path_prefix": ["lib:notes", "docs:"]}, {"lib:notes/design.md", "docs:guide.md",
                                                   "docs:notes.txt"}),
        ({"files": ["index.md"]}, {"index.md", "lib:index.md"}),
        ({"files": ["index.md"], "sources": ["lib"]}, {"lib:index.md"}),
    ],
)  # fmt: skip
def test_scope_or_within_and_between(
    indexed: Vault, scope: dict[str, list[str]], expected: set[str]
) -> None:
    hits = indexed.search("fruit page", top_k=20, **scope)  # type: ignore[arg-type]
    assert {h.path for h in hits} == expected


def test_scope_errors_name_what_exists(indexed: Vault) -> None:
    with pytest.raises(QueryError, match="no source 'nope'; sources: docs, lib, vault"):
        indexed.search("x", sources=["nope"])
    with pytest.raises(QueryError, match="Unknown kind video"):
        indexed.search("x", kinds=["video"])


def test_check_is_clean_and_status_counts_per_source(indexed: Vault) -> None:
    assert indexed.manager().verify().ok
    rows = {r["name"]: r for r in indexed.status()["sources"]}
    assert {k: (r["files"], r["chunks"], r["failed"]) for k, r in rows.items()} == {
        "vault": (2, 2, 0),
        "docs": (2, 2, 2),
        "lib": (3, 4, 0),
    }
    assert all(r.get("last_indexed") for r in rows.values())


# --- runs that change things: each on its own vault ---------------------------------
def test_new_commit_reembeds_only_changed_chunks_and_removal_leaves_nothing(
    tmp_path: Path, embedder: object
) -> None:
    work, bare = make_repo(tmp_path / "repo", LIB)
    vault = Vault.open(vault_with_sources(tmp_path, str(bare)))  # a plain path, not a URL
    first = vault.index()
    assert first.added == 7
    push_change(
        work,
        bare,
        {"notes/design.md": "# Design\n\n## Storage\n\nCherries are stored in cold crates.\n"},
    )
    second = vault.index()
    assert (second.updated, second.added, second.unchanged) == (1, 0, 6)
    assert second.chunks_embedded == 1
    hits = vault.search("cold crates", top_k=1, sources=["lib"])
    assert hits[0].path == "lib:notes/design.md"

    summary = vault.remove_source("lib")
    assert summary.removed == 3
    report = vault.manager().verify()
    assert report.ok, report.problems
    snap = vault.orchestrator.snapshot()
    assert not [p for p in snap.note_by_path if p.startswith("lib:")]
    assert not [n for n in snap.reader("graph").graph.nodes if str(n).startswith("lib:")]
    assert (
        len(snap.reader("vectors")) == len(snap.reader("keywords")) == len(snap.note_of_chunk) == 4
    )
    assert not (vault.manager().sources.clones / "lib").exists()
    assert vault.check().status == "current"
    vault.close()


def test_unreadable_source_keeps_what_was_indexed(tmp_path: Path, embedder: object) -> None:
    vault, _, _ = indexed_sources(tmp_path)
    (tmp_path / "docs").rename(tmp_path / "docs-unmounted")
    summary = vault.index()
    assert summary.removed == 0
    assert "does not exist" in summary.unavailable["docs"]
    assert vault.search("bananas ripen", top_k=1)[0].path == "docs:guide.md"
    assert vault.check().status == "current"
    vault.close()


def test_a_full_rebuild_is_refused_rather_than_drop_an_unreadable_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], embedder: object
) -> None:
    vault, _, _ = indexed_sources(tmp_path)
    root = vault.root
    (tmp_path / "docs").rename(tmp_path / "docs-unmounted")
    with pytest.raises(VaultsearchError, match=r"leave out the \d+ indexed notes of source 'docs'"):
        vault.index(full=True)
    assert vault.search("bananas ripen", top_k=1)[0].path == "docs:guide.md"
    vault.close()
    assert main(["index", str(root), "--full", "--quiet"]) == 2
    assert "without --full" in capsys.readouterr().err
    (tmp_path / "docs-unmounted").rename(tmp_path / "docs")
    vault = Vault.open(root)
    rebuilt = vault.index(full=True)
    assert rebuilt.unavailable == rebuilt.left_out == {}
    assert vault.search("bananas ripen", top_k=1)[0].path == "docs:guide.md"
    assert vault.check().status == "current"
    vault.close()


def test_a_needed_rebuild_reports_an_unreadable_source_as_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], embedder: object
) -> None:
    vault, _, _ = indexed_sources(tmp_path)
    root = vault.root
    vault.close()
    (tmp_path / "docs").rename(tmp_path / "docs-unmounted")
    config = root / ".vaultsearch" / "config.toml"
    config.write_text(config.read_text(encoding="utf-8") + "\n[chunking]\nsize = 800\n")
    capsys.readouterr()
    assert main(["index", str(root), "--quiet"]) == 0  # the chunking change needs a rebuild
    out = capsys.readouterr().out
    assert "source docs not read (left out of this rebuild): The folder" in out
    assert "kept as indexed" not in out
    vault = Vault.open(root)
    assert not [h for h in vault.search("bananas ripen", top_k=5) if h.path.startswith("docs:")]
    (tmp_path / "docs-unmounted").rename(tmp_path / "docs")
    summary = vault.index()
    assert summary.added >= 1 and summary.left_out == summary.unavailable == {}
    assert vault.search("bananas ripen", top_k=1)[0].path == "docs:guide.md"
    vault.close()


def test_a_failed_fetch_indexes_the_last_fetched_commit_even_in_a_full_rebuild(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], embedder: object
) -> None:
    vault, _, bare = indexed_sources(tmp_path)
    root = vault.root
    bare.rename(tmp_path / "repo" / "gone.git")  # the remote is unreachable from now on
    summary = vault.index(full=True)
    assert "lib" not in summary.unavailable
    assert "git fetch failed" in summary.stale["lib"], summary.stale
    assert "Indexed the last fetched commit" in summary.stale["lib"]
    hits = vault.search("cherries stored in crates", top_k=1, sources=["lib"])
    assert hits and hits[0].path == "lib:notes/design.md"
    assert vault.check().status == "current"
    vault.close()

    assert main(["index", str(root), "--quiet"]) == 0
    assert "source lib not fetched: git fetch failed" in capsys.readouterr().out
    assert main(["sources", "--vault", str(root), "--json", "list"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert "git fetch failed" in rows["lib"]["error"] and rows["lib"]["files"] == 3


def test_index_one_source_leaves_the_others(tmp_path: Path, embedder: object) -> None:
    vault, work, bare = indexed_sources(tmp_path)
    push_change(work, bare, {"index.md": "# Index\n\nNow about plums.\n"})
    write_files(tmp_path / "docs", {"guide.md": "# Guide\n\nBananas ripen in the shade.\n"})
    summary = vault.index(source="lib")
    assert (summary.updated, summary.unchanged, summary.removed) == (1, 2, 0)
    assert vault.check().reasons == ["1 file modified"]
    assert vault.index(source="docs").updated == 1
    assert vault.check().status == "current"
    with pytest.raises(ConfigError, match=r"no source named 'nope' \(sources: vault, docs, lib\)"):
        vault.index(source="nope")
    with pytest.raises(ConfigError, match="cannot be limited to one"):
        vault.index(full=True, source="lib")
    vault.close()


def test_older_catalog_gains_the_columns_without_reembedding(
    tmp_path: Path, embedder: object
) -> None:
    vault_dir = write_files(tmp_path / "v", {"a.md": "# A\n\nOranges.\n", "b.txt": "Limes.\n"})
    vault = Vault.open(vault_dir)
    vault.index()
    vault.close()
    catalog = IndexLayout(vault_dir / ".vaultsearch").live.catalog
    db = sqlite3.connect(catalog)
    for table, column in (("notes", "source"), ("notes", "kind"), ("notes", "language")):
        db.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    for column in ("qualified_name", "node_type", "page"):
        db.execute(f"ALTER TABLE chunks DROP COLUMN {column}")
    db.commit()
    db.close()

    old = Vault.open(vault_dir)
    hits = old.search("oranges", top_k=1)  # a reader of the old file as it is
    assert (hits[0].path, hits[0].source, hits[0].kind) == ("a.md", "", "note")
    write_files(vault_dir, {"c.md": "# C\n\nGrapes.\n"})
    summary = old.index()
    assert (summary.added, summary.chunks_embedded) == (1, 1)
    writer = Catalog(IndexLayout(vault_dir / ".vaultsearch").live.catalog, readonly=True)
    assert writer.missing == set()
    assert writer.note_by_path("c.md").kind == "note"  # type: ignore[union-attr]
    writer.close()
    old.close()


# --- config and CLI -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"name": "a b", "path": "x"}, "'name' = 'a b' must be letters"),
        ({"name": "vault", "path": "x"}, "'vault' names the vault itself"),
        ({"name": "g", "type": "git"}, "a git source needs 'url'"),
        ({"name": "f"}, "a folder source needs 'path'"),
        ({"name": "f", "path": "x", "colour": 1}, "unknown key(s) colour"),
        ({"name": "f", "path": "x", "parsers": {"*.py": "nope"}}, "unknown parser 'nope'"),
        ({"name": "f", "type": "svn", "path": "x"}, "'type' = 'svn'"),
    ],
)
def test_bad_source_tables_are_refused_with_the_reason(
    table: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        config_from_dict({"sources": [table]})


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(ConfigError, match="Two sources are named 'a'"):
        config_from_dict({"sources": [{"name": "a", "path": "x"}, {"name": "a", "path": "y"}]})


def test_cli_sources_add_list_remove(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], embedder: object
) -> None:
    _, bare = make_repo(tmp_path / "repo", LIB)
    vault = write_files(tmp_path / "vault", {"Home.md": "# Home\n\nApples.\n"})
    docs = write_files(tmp_path / "docs", {"guide.md": "# Guide\n\nBananas.\n"})
    v = ["--vault", str(vault)]
    assert main(["sources", *v, "add", "docs", str(docs)]) == 0
    assert main(["sources", *v, "add", "lib", bare.as_uri(), "--branch", "main", "--index"]) == 0
    assert "indexed 5 files, 6 chunks embedded" in capsys.readouterr().out  # the first run: all
    assert main(["index", str(vault), "--quiet", "--all", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["unchanged"] == 5
    assert main(["sources", *v, "--json", "list"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["docs"]["path"] == str(docs) and rows["docs"]["files"] == 1
    assert (rows["lib"]["type"], rows["lib"]["branch"], rows["lib"]["files"]) == ("git", "main", 3)

    assert main(["search", "bananas", *v, "--json", "--source", "docs", "--kind", "note"]) == 0
    assert [h["path"] for h in json.loads(capsys.readouterr().out)] == ["docs:guide.md"]
    assert main(["sources", *v, "add", "docs", str(docs)]) == 2
    assert "already exists" in capsys.readouterr().err

    assert main(["sources", *v, "remove", "lib"]) == 0
    assert main(["check", str(vault)]) == 0
    assert "consistent" in capsys.readouterr().out
    assert main(["sources", *v, "remove", "lib"]) == 2
    assert "no source named 'lib'" in capsys.readouterr().err


def test_a_new_git_source_makes_check_ask_for_an_update(tmp_path: Path, embedder: object) -> None:
    _, bare = make_repo(tmp_path / "repo", LIB)
    vault = Vault.open(write_files(tmp_path / "vault", {"Home.md": "# Home\n\nApples.\n"}))
    vault.index()
    table = {"name": "lib", "type": "git", "url": str(bare), "parsers": {"**/*.md": "text"}}
    vault.add_source(source_from_table(table, "test", 0))
    assert vault.check().reasons == ["source lib has not been cloned yet"]
    vault.index()
    assert vault.check().status == "current"
    kinds = {n.path: n.kind for n in vault.orchestrator.snapshot().notes.values()}
    assert kinds["lib:README.md"] == "text"  # the source's own glob wins over [parsers]
    assert kinds["Home.md"] == "note"
    vault.close()


def test_include_exclude_and_ignore_files_of_a_folder_source(tmp_path: Path) -> None:
    """What a scan of a folder source yields, before anything is parsed or embedded."""
    vault = write_files(tmp_path / "vault", {"Home.md": "# Home\n", "docs:clash.md": "# Clash\n"})
    write_files(
        tmp_path / "handbook",
        {
            "a.md": "# A\n",
            "b.txt": "B\n",
            "drafts/c.md": "# C\n",
            "deep/d.md": "# D\n",
            "tmp/e.md": "# E\n",
            "f.py": "print()\n",
            ".gitignore": "tmp/\n",
        },
    )
    raw = {"name": "docs", "path": "../handbook", "include": ["*.md"], "exclude": ["drafts/"]}
    cfg = config_from_dict({"sources": [raw]})
    files = Vault(vault, vault / ".vaultsearch", cfg).manager().scan()
    assert sorted(files) == ["Home.md", "docs:a.md", "docs:clash.md", "docs:deep/d.md"]
    assert "reads as a file of the source 'docs'" in (files["docs:clash.md"].skip or "")
    assert files["docs:a.md"].abs_path == (tmp_path / "handbook" / "a.md").resolve()


def test_remove_waits_for_no_other_writer(tmp_path: Path) -> None:
    """Another process writing the index: the source stays configured, nothing half done."""
    vault = write_files(tmp_path / "vault", {"Home.md": "# Home\n"})
    docs = write_files(tmp_path / "docs", {"a.md": "# A\n"})
    managed = vault / ".vaultsearch" / "sources.toml"
    managed.parent.mkdir()
    managed.write_text(f'[[sources]]\nname = "docs"\npath = "{docs}"\n', encoding="utf-8")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from vaultsearch.store.lock import "
            "WriterLock; lock = WriterLock(Path(sys.argv[1])); assert lock.acquire(); "
            "print('held', flush=True); time.sleep(3600)",
            str(vault / ".vaultsearch" / "writer.lock"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        v = Vault.open(vault)
        with pytest.raises(IndexBusyError, match="the source 'docs' was not removed"):
            v.remove_source("docs")
        assert "docs" in managed.read_text(encoding="utf-8")
    finally:
        holder.kill()
        holder.wait()
    assert v.remove_source("docs").removed == 0
    assert "docs" not in managed.read_text(encoding="utf-8")
    assert [s["name"] for s in v.sources()] == ["vault"]


def test_a_watched_path_of_a_folder_source_is_looked_at_alone(
    tmp_path: Path, embedder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the watcher hands over for a folder source is stat-ed, not found by a walk of
    the whole source: a large source must not be walked on every saved file."""
    vault, _, _ = indexed_sources(tmp_path)
    try:
        docs = tmp_path / "docs"
        (docs / "guide.md").write_text("# Guide\n\nPapayas ripen in the sun.\n", "utf-8")
        (docs / "later.md").write_text("# Later\n\nPapayas for the whole look.\n", "utf-8")
        walked: list[Path] = []
        walk = source_scan._walk

        def spy(root: Path, *args: object) -> object:
            walked.append(root)
            return walk(root, *args)  # type: ignore[arg-type]

        monkeypatch.setattr(source_scan, "_walk", spy)
        s = vault.manager().update(paths=["docs:guide.md", "docs:gone/"])
        assert (s.added, s.updated, s.removed, walked) == (0, 1, 0, [])
        assert [h.path for h in vault.search("papayas", mode="keyword")] == ["docs:guide.md"]
        s = vault.manager().update(paths=["docs:"])  # the whole source
        assert (s.added, s.updated, len(walked)) == (1, 0, 1)
    finally:
        vault.close()


# --- hostile url and branch values ------------------------------------------------------
HOSTILE_BRANCH = "--upload-pack=touch pwned; git-upload-pack"


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("branch", HOSTILE_BRANCH, "starts with '-', so git would read it as an option"),
        ("branch", "+main", "starts with '+'"),
        ("branch", "a..b", "holds '..'"),
        ("branch", "@{-1}", "names a revision"),
        ("branch", "main\nx", "control character"),
        ("url", "fd::3", "runs a git remote helper"),
        ("url", "ext::sh -c touch% /tmp/x", "runs a git remote helper"),
        ("url", "--upload-pack=touch pwned", "starts with '-'"),
        ("url", "ssh://-oProxyCommand=touch%20pwned/x", "user or host starts with '-'"),
        ("url", "git://example.org/lib.git", "the 'git://' transport is not allowed"),
        ("url", "/srv/lib\x07.git", "control character"),
    ],
)
def test_hostile_git_values_are_refused_in_the_config(key: str, value: str, message: str) -> None:
    table = {"name": "lib", "type": "git", "url": "/srv/lib.git", key: value}
    with pytest.raises(ConfigError, match=re.escape(message)) as caught:
        config_from_dict({"sources": [table]})
    assert caught.value.message.count(". ") == 0 and caught.value.message.endswith(".")


@pytest.mark.parametrize(
    "name",
    ["main", "feature/x", "v1.2", "é", "-x", "--upload-pack=x", "a..b", "a b", "a~1", "a^",
     "a:b", "a?", "a*", "a[", "a\\b", "HEAD", "a.lock", "a/.b", ".a", "a/", "/a", "a//b",
     "a.", "x@{y", "@{-1}", "a\tb", "a\x7fb", "refs/heads/x", "a@b"],
)  # fmt: skip
def test_the_branch_rules_are_gits_own(name: str) -> None:
    """The config is checked without starting git; the rules must agree with it."""
    from vaultsearch.gitvalues import branch_problem

    done = subprocess.run(
        ["git", "check-ref-format", "--branch", name], cwd="/", capture_output=True, check=False
    )
    assert (branch_problem(name) is None) == (done.returncode == 0), name


def test_a_hostile_branch_in_the_sources_file_never_runs(tmp_path: Path, embedder: object) -> None:
    """The issue's case: a clone exists, then sources.toml is edited by hand; two index
    runs refuse it with one sentence and run nothing, and git itself is never given it."""
    from vaultsearch.indexing.gitsource import GitSourceError, sync_clone

    vault, _, bare = indexed_sources(tmp_path)
    vault.close()
    managed = vault.root / ".vaultsearch" / "sources.toml"
    managed.write_text(managed.read_text().replace('"main"', json.dumps(HOSTILE_BRANCH)))
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-m", "vaultsearch.cli", "index", str(vault.root)],
            cwd=tmp_path,  # where a command run by the branch would leave its file
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")},
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert "'branch' = '--upload-pack=" in done.stderr and "git would read it as an option" in (
            done.stderr
        )
        assert "Traceback" not in done.stderr
    clone = vault.index_dir / "clones" / "lib"
    assert (clone / ".git").is_dir()
    for url, branch in (
        (str(bare), HOSTILE_BRANCH),
        ("fd::3", ""),
        ("ext::sh -c touch% pwned", ""),
    ):
        with pytest.raises(GitSourceError, match="is refused"):
            sync_clone(url, branch, clone)
    assert [p for p in tmp_path.rglob("pwned*")] == []
    assert not Path("pwned").exists()


def test_sources_add_refuses_hostile_values_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, bare = make_repo(tmp_path / "repo", LIB)
    vault = write_files(tmp_path / "vault", {"Home.md": "# Home\n\nApples.\n"})
    v = ["--vault", str(vault)]
    cases = [
        ["lib", str(bare), "--branch", HOSTILE_BRANCH],
        ["lib", "fd::3"],
        ["lib", "ext::sh -c touch% /tmp/x"],
        ["lib", "ext::sh -c touch% pwned", "--type", "git"],
        ["lib", "--type", "git", "--", "--upload-pack=touch pwned"],
    ]
    for args in cases:
        assert main(["sources", *v, "add", *args]) == 2, args
        err = capsys.readouterr().err
        assert "is refused" in err or "is not a branch name git takes" in err, err
    assert not (vault / ".vaultsearch" / "sources.toml").exists()
    assert [p for p in tmp_path.rglob("pwned*")] == []


def test_a_plain_path_git_source_clones_then_follows_new_commits(tmp_path: Path) -> None:
    from vaultsearch.indexing.gitsource import sync_clone

    work, bare = make_repo(tmp_path / "repo", LIB)
    clone = tmp_path / "clone"
    first = sync_clone(str(bare), "main", clone)
    assert first == git(work, "rev-parse", "HEAD").strip()
    push_change(work, bare, {"index.md": "# Index\n\nNow about plums.\n"})
    second = sync_clone(str(bare), "", clone)
    assert second != first and second == git(work, "rev-parse", "HEAD").strip()
    assert "plums" in (clone / "index.md").read_text()


@pytest.mark.parametrize("url", ["fd::3", "ext::sh -c touch% pwned", "git://127.0.0.1:9/x"])
def test_git_itself_refuses_other_transports(tmp_path: Path, url: str) -> None:
    """The second wall, for a value that got past the checks: protocol.allow=never."""
    from vaultsearch.indexing.gitsource import GitSourceError
    from vaultsearch.indexing.gitsource import git as run_git

    scheme = url.split(":")[0]
    with pytest.raises(GitSourceError, match=f"transport '{scheme}' not allowed"):
        run_git(["clone", "--quiet", "--", url, str(tmp_path / "clone")])
    assert [p for p in tmp_path.rglob("pwned*")] == []
