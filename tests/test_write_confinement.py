"""Writes stay in the vault even when the vault changes under them: symlinked folders
(pointing out, or at .git), a folder swapped for a link between the path check and
the write, names no file system takes, and temp files that killed writes left."""

from __future__ import annotations

import itertools
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import HANG_GUARD
from tests.test_mcp_stdio import make_vault, server_args
from vaultsearch.errors import PathOutsideVaultError, QueryError, VaultsearchError
from vaultsearch.reports.report import write_report
from vaultsearch.writes.confined import ConfinedVault, sweep_temps
from vaultsearch.writes.documents import Document, DocumentStore
from vaultsearch.writes.guard import note_path
from vaultsearch.writes.notes import NoteFiles

LINK_REFUSAL = "is a symbolic link, and vaultsearch never writes through or over a link"


def files_under(folder: Path) -> list[str]:
    return sorted(str(Path(d, f).relative_to(folder)) for d, _, fs in os.walk(folder) for f in fs)


@pytest.fixture
def vault(tmp_path: Path) -> tuple[Path, Path]:
    """A vault with .git/hooks, a link 'gitlink' -> .git, a link 'sub/away' -> an
    outside folder, two notes and a link 'linked.md' -> one of them; (root, outside)."""
    root, outside = tmp_path / "vault", tmp_path / "outside"
    (root / ".git/hooks").mkdir(parents=True)
    (root / "sub").mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text("secret\n")
    (root / "gitlink").symlink_to(".git")
    (root / "sub/away").symlink_to(outside)
    (root / "Note.md").write_text("# Note\n\n[[Other]]\n")
    (root / "Other.md").write_text("# Other\n")
    (root / "linked.md").symlink_to("Other.md")
    return root, outside


def notes_of(root: Path) -> NoteFiles:
    return NoteFiles(root, root / ".vaultsearch", lambda: ["Note.md", "Other.md"])


def test_links_to_git_and_out_of_the_vault_are_never_written_through(
    vault: tuple[Path, Path],
) -> None:
    root, outside = vault
    notes = notes_of(root)
    refusals = [
        lambda: notes.write("gitlink/hooks/post-checkout", "#!/bin/sh\n", False),
        lambda: notes.move("Other.md", "gitlink/hooks/moved"),
        lambda: write_report(root, "gitlink/hooks", "r.md", "x", root / ".vaultsearch"),
        lambda: DocumentStore(root, "gitlink", None).upsert([Document("d", "t", {})]),
        lambda: notes.write("linked", "overwrite the target?", True),
        lambda: notes.edit("linked", "append", "more"),
        lambda: notes.delete("linked"),
        lambda: notes.move("linked", "moved-link"),
    ]
    for refuse in refusals:
        with pytest.raises(PathOutsideVaultError, match=LINK_REFUSAL) as caught:
            refuse()
        assert str(caught.value).count(".") <= 4 and "\n" not in str(caught.value)
    assert files_under(root / ".git") == []
    assert (root / "Other.md").read_text() == "# Other\n" and (root / "linked.md").is_symlink()
    assert not (root / "moved-link.md").exists()
    # a link out of the vault is refused by the path check already
    with pytest.raises(PathOutsideVaultError, match="leads outside the vault"):
        notes.write("sub/away/new", "x", False)
    assert files_under(outside) == ["secret.md"]


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda n, r: n.write("x" * 300, "t", False), "303 bytes long; a file or folder name"),
        (lambda n, r: n.write("d/" + "é" * 130, "t", False), "263 bytes long"),
        (lambda n, r: n.move("Note.md", "y" * 256), "259 bytes long"),
        (lambda n, r: write_report(r, "rag", "z" * 260, "t"), "260 bytes long"),
        (lambda n, r: write_report(r, "w" * 256, "r.md", "t"), "256 bytes long"),
        (
            lambda n, r: DocumentStore(r, "documents", None).upsert([Document("é" * 60, "t", {})]),
            "too long for a file name: it would need 363 bytes",
        ),
        (lambda n, r: n.write("a\0b", "t", False), "contains a NUL character"),
        (lambda n, r: n.edit("Note\0.md", "append", "t"), "contains a NUL character"),
        (lambda n, r: write_report(r, "rag\0", "r.md", "t"), "contains a NUL character"),
    ],
)
def test_names_no_file_system_takes_get_one_sentence(
    vault: tuple[Path, Path], call: Any, expected: str
) -> None:
    root, _ = vault
    before = files_under(root)
    with pytest.raises(QueryError, match=expected) as caught:
        call(notes_of(root), root)
    assert "\n" not in str(caught.value)
    assert files_under(root) == before


def test_a_folder_swapped_for_a_link_after_the_check_is_not_written_through(
    vault: tuple[Path, Path],
) -> None:
    root, outside = vault
    (root / "work").mkdir()
    rel, _ = note_path(root, "work/Plan", root / ".vaultsearch")
    assert rel == "work/Plan.md"
    (root / "work").rename(root / "work-parked")
    (root / "work").symlink_to(outside)
    with pytest.raises(PathOutsideVaultError, match=LINK_REFUSAL):
        ConfinedVault(root, root / ".vaultsearch").write(rel, b"plan\n")
    assert files_under(outside) == ["secret.md"]
    (root / "work").unlink()
    (root / "work").mkdir()
    assert ConfinedVault(root).write(rel, b"plan\n") is True
    assert (root / "work/Plan.md").read_text() == "plan\n"


def test_the_index_folder_is_refused_even_without_a_dot(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    (root / "idx").mkdir(parents=True)
    with pytest.raises(PathOutsideVaultError, match="inside the index folder"):
        ConfinedVault(root, root / "idx").write("idx/x.md", b"x")
    assert list((root / "idx").iterdir()) == []


def test_killed_writes_temps_are_swept_when_old_and_kept_when_fresh(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    (root / "a/b").mkdir(parents=True)
    (root / ".hidden").mkdir()
    old = [
        root / "a/b/.vaultsearch-0123456789abcdef.tmp",
        root / ".vaultsearch-fedcba9876543210.tmp",
        root / "a/.Note.md.k2j_x9zq.tmp",  # the temp name writes had before
    ]
    kept = [
        root / "a/.vaultsearch-00112233445566ff.tmp",  # fresh: a write may be running
        root / "a/b/vaultsearch-0123456789abcdef.tmp",  # not ours
        root / "a/b/.notes.txt.tmp",
        root / ".hidden/.vaultsearch-0123456789abcdef.tmp",  # never written by us there
    ]
    for path in old + kept:
        path.write_text("partial")
    for path in [*old, *kept[1:]]:
        os.utime(path, (time.time() - 3600, time.time() - 3600))
    removed = sweep_temps(root)
    assert sorted(removed) == sorted(p.relative_to(root).as_posix() for p in old)
    assert all(p.exists() for p in kept) and not any(p.exists() for p in old)


def test_writes_and_a_folder_swapping_process_race_and_nothing_lands_outside(
    tmp_path: Path,
) -> None:
    """A thread swaps 'shared' for a link to a decoy and back while notes, documents
    and reports are written into it. Any order is allowed: a write is refused, or it
    lands in the real folder (under whatever name that folder has by then); never in
    the decoy."""
    root, decoy = tmp_path / "vault", tmp_path / "decoy"
    (root / "shared").mkdir(parents=True)
    decoy.mkdir()
    notes = NoteFiles(root, root / ".vaultsearch", lambda: [])
    docs = DocumentStore(root, "shared", root / ".vaultsearch")
    stop = threading.Event()
    swaps = 0

    def swapper() -> None:
        nonlocal swaps
        for n in itertools.count():
            if stop.is_set():
                return
            parked = root / f"parked-{n}"
            try:
                (root / "shared").rename(parked)
                link = root / f"link-{n}"
                link.symlink_to(decoy)
                link.rename(root / "shared")
                (root / "shared").unlink()
                parked.rename(root / "shared")
                swaps += 1
            except OSError:
                for stray in root.glob("link-*"):
                    stray.unlink()
                if (root / "shared").is_symlink():
                    (root / "shared").unlink()

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    created: list[str] = []
    refused = 0
    try:
        for i in range(400):
            try:
                if i % 3 == 0:
                    rel, made = notes.write(f"shared/n{i}", "x", False)
                    if made:
                        created.append(Path(rel).name)
                elif i % 3 == 1:
                    ((stored, made),) = docs.upsert([Document(f"d{i}", "x", {})])
                    created.append(Path(stored.path).name)
                else:
                    rel = write_report(root, "shared", f"r{i}.md", "x", root / ".vaultsearch")
                    created.append(Path(rel).name)
            except VaultsearchError:
                refused += 1
    finally:
        stop.set()
        thread.join(timeout=HANG_GUARD)
    assert files_under(decoy) == []
    inside = {Path(p).name for p in files_under(root)}
    assert set(created) <= inside
    assert not [n for n in inside if n.endswith(".tmp")]
    assert len(created) + refused == 400 and swaps > 0


def test_a_server_with_writes_refuses_in_one_sentence_and_sweeps_old_temps(
    tmp_path: Path, embedder: object
) -> None:
    root, index_dir = make_vault(tmp_path, index=True)
    (root / ".git/hooks").mkdir(parents=True)
    (root / "gitlink").symlink_to(".git")
    stale = root / "garden/.vaultsearch-0123456789abcdef.tmp"
    fresh = root / "garden/.vaultsearch-fedcba9876543210.tmp"
    stale.write_text("a killed move's copy")
    fresh.write_text("a write running now")
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    errlog, calls = tmp_path / "stderr.log", tmp_path / "calls.log"
    env = {**os.environ, "VAULTSEARCH_MCP_LOG": str(calls)}
    args = server_args(root, index_dir, "--no-watch", "--allow-writes")
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    answers: dict[str, str] = {}

    async def session() -> None:
        with errlog.open("w") as err:
            transport = stdio_client(params, errlog=err)
            async with Client(transport, mode="legacy", read_timeout_seconds=HANG_GUARD) as c:
                for name, tool, arguments in [
                    ("git hook", "write_note", {"path": "gitlink/hooks/post-checkout",
                                                "content": "x"}),
                    ("move into link", "move_note", {"path": "garden/Tomatoes.md",
                                                     "new_path": "gitlink/hooks/T"}),
                    ("report into link", "create_rag_report", {
                        "variables": {"title": "t", "answer": "a"},
                        "output_dir": "gitlink/hooks"}),
                    ("long name", "write_note", {"path": "n" * 300, "content": "x"}),
                    ("long id", "upsert_documents", {"documents": [{"id": "é" * 70,
                                                                    "text": "x"}]}),
                    ("NUL", "write_note", {"path": "a\0b.md", "content": "x"}),
                ]:  # fmt: skip
                    result = await c.call_tool(tool, arguments)
                    assert result.is_error, name
                    answers[name] = result.content[0].text

    anyio.run(session)
    for name, text in answers.items():
        assert "\n" not in text and "Error executing tool" not in text, (name, text)
    assert all(
        LINK_REFUSAL in answers[n] for n in ("git hook", "move into link", "report into link")
    )
    assert "bytes long" in answers["long name"] and "too long" in answers["long id"]
    assert "NUL character" in answers["NUL"]
    assert files_under(root / ".git") == [] and (root / "garden/Tomatoes.md").exists()
    assert not stale.exists() and fresh.exists()
    assert '"swept_temps"' in calls.read_text()
    assert "Traceback" not in errlog.read_text() + calls.read_text()
