"""A file that failed through no fault of its own is read again by the next run.

The store battery's long run exhausted the parse box's ``select`` and recorded all 300
notes of its vault as parser errors; a fresh ``index`` did not read them again, since a
failure was retried only when the file changed, and ``check`` found the empty index
consistent. A failure now says whose fault it was (``fault.py``).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import WriteVault, live_catalog
from vaultsearch.app.vault import Vault
from vaultsearch.config import IndexConfig
from vaultsearch.fault import FILE, MAX_TRIES, OURS, FailureRow, of_reason, retry_note
from vaultsearch.indexing import parsebox
from vaultsearch.indexing.parsebox import ParseBox
from vaultsearch.parsers import ParserRegistry
from vaultsearch.store import rowsums

NOTES = {
    "a.md": "# Alpha\n\nAlder trees by the alpine lake.\n",
    "b.md": "# Beta\n\nBirches on the bank of the river.\n",
}


@pytest.fixture
def descriptors_run_out_once(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The parse box's wait for the reply to ``a.md`` fails once with EMFILE, as it
    does when the process holds every descriptor it may."""
    state = {"armed": 0, "fired": 0}
    real_send, real_readable = parsebox._send, parsebox.readable

    def send(stream: Any, message: Any) -> None:
        real_send(stream, message)
        if message[1] == "a.md" and not state["fired"]:
            state["armed"] = 1

    def readable(fd: int, timeout: float) -> bool:
        if state["armed"]:
            state["armed"], state["fired"] = 0, state["fired"] + 1
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
        return real_readable(fd, timeout)

    monkeypatch.setattr(parsebox, "_send", send)
    monkeypatch.setattr(parsebox, "readable", readable)
    return state


def _catalog(index_dir: Path) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """(note path -> title, failed path -> (reason, ...)) of the live catalog."""
    catalog = live_catalog(index_dir)
    try:
        notes = {n.path: n.title for n in catalog.notes()}
        return notes, {p: tuple(map(str, row)) for p, row in catalog.failures().items()}
    finally:
        catalog.close()


def test_a_parse_failed_by_the_machine_is_read_again_with_the_file_unchanged(
    write_vault: WriteVault, embedder: object, descriptors_run_out_once: dict[str, int]
) -> None:
    root = write_vault(NOTES)
    with Vault.open(root) as vault:
        vault.index()
        assert descriptors_run_out_once["fired"] == 1
        notes, failed = _catalog(vault.index_dir)
        assert set(failed) == {"a.md"} and "Too many open files" in failed["a.md"][0]
        # the child's late reply for a.md must not be read as b.md's
        assert notes == {"b.md": "Beta"}

        again = vault.index()  # nothing changed on disk
        notes, failed = _catalog(vault.index_dir)
        assert notes == {"a.md": "Alpha", "b.md": "Beta"}
        assert failed == {} and again.failed == {}
        assert vault.verify().ok


def test_status_and_check_say_what_the_next_run_reads_again(
    write_vault: WriteVault, embedder: object, descriptors_run_out_once: dict[str, int]
) -> None:
    root = write_vault({**NOTES, "junk.md": b"\x00\x01\x02" * 400})
    with Vault.open(root) as vault:
        summary = vault.index()
        assert summary.to_retry == {"a.md": 1} and set(summary.failed) == {"a.md", "junk.md"}
        assert vault.status()["to_retry"] == {"a.md": 1}
        counts = vault.file_counts()
        assert counts.to_dict()["to_retry"] == 1 and counts.pending == 0
        assert [(x["path"], x["fault"], x.get("tries")) for x in counts.failed_items()] == [
            ("a.md", OURS, 1),
            ("junk.md", FILE, None),
        ]
        report = vault.verify()
        assert not report.ok
        assert report.problems == [
            "files: 1 file failed, not by its own fault (tried once): read again by the next run"
        ]
        check = vault.check()
        assert check.status == "update" and any("not by its own fault" in r for r in check.reasons)

        vault.index()
        assert vault.status()["to_retry"] == {}
        assert vault.verify().ok and vault.check().status == "current"


def test_index_prints_the_retry_in_the_words_status_uses(
    write_vault: WriteVault,
    embedder: object,
    descriptors_run_out_once: dict[str, int],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``vaultsearch index`` had its own phrasing of a retried failure, without the
    tries that ``status``, MCP and the page give (``fault.retry_note``)."""
    from vaultsearch.cli.main import main

    root = write_vault({**NOTES, "junk.md": b"\x00\x01\x02" * 400})
    assert main(["index", str(root), "--quiet"]) == 0
    lines = {
        line.split(":")[0].strip(): line
        for line in capsys.readouterr().out.splitlines()
        if line.strip().startswith("failed ")
    }
    assert set(lines) == {"failed a.md", "failed junk.md"}
    assert lines["failed a.md"].endswith(retry_note(1))
    assert retry_note(1) == " (not the file's fault: tried once, read again by the next index run)"
    assert "not the file's fault" not in lines["failed junk.md"]


def test_a_failure_of_the_files_own_is_not_read_again(
    write_vault: WriteVault, embedder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_vault(
        {
            **NOTES,
            "junk.md": b"\x00\x01\x02" * 400,  # binary
            "huge.md": "# Huge\n\n" + "word " * 1000,  # over max_file_size
            "bad.pdf": b"%PDF-1.4\nthis is no PDF at all\n",  # refused by its parser
        }
    )
    (root / ".vaultsearch").mkdir()
    (root / ".vaultsearch" / "config.toml").write_text("[vault]\nmax_file_size = 2000\n")
    with Vault.open(root) as vault:
        first = vault.index()
        assert set(first.failed) == {"junk.md", "huge.md", "bad.pdf"} and not first.to_retry
        read: list[str] = []
        from vaultsearch.indexing import changes

        real = changes.read_file

        def spy(path: Path, limit: int) -> Any:
            read.append(path.name)
            return real(path, limit)

        monkeypatch.setattr(changes, "read_file", spy)
        again = vault.index()
        assert read == [] and again.failed == {}
        _, failed = _catalog(vault.index_dir)
        assert {p: row[3:] for p, row in failed.items()} == {
            p: (FILE, "1") for p in ("junk.md", "huge.md", "bad.pdf")
        }
        assert vault.verify().ok


def _make_old(index_dir: Path) -> None:
    """The live catalog as a writer before ``fault`` and ``tries`` left it: without the
    columns, each failure summed over its four."""
    catalog = live_catalog(index_dir, readonly=False)
    db = catalog.db
    try:
        db.execute("ALTER TABLE failures DROP COLUMN fault")
        db.execute("ALTER TABLE failures DROP COLUMN tries")
        rows = db.execute("SELECT path, reason, mtime_ns, size FROM failures").fetchall()
        for row in rows:
            db.execute(
                "UPDATE failures SET row_sum=? WHERE path=?", (rowsums.row_sum(*row), row[0])
            )
        db.commit()
    finally:
        catalog.close()


def test_an_older_catalogs_failures_keep_their_behaviour_unless_the_reason_is_ours(
    write_vault: WriteVault, embedder: object
) -> None:
    root = write_vault({**NOTES, "junk.md": b"\x00\x01\x02" * 400})
    with Vault.open(root) as vault:
        vault.index()
        catalog = live_catalog(vault.index_dir, readonly=False)
        try:  # a.md as the select bug recorded it, with the file as it is
            st = (root / "a.md").stat()
            reason = "parser error: ValueError: filedescriptor out of range in select()"
            with catalog.transaction():
                note = catalog.note_by_path("a.md")
                assert note is not None
                catalog.delete_note(note.id)
                catalog.set_failure("a.md", FailureRow(reason, st.st_mtime_ns, st.st_size))
        finally:
            catalog.close()
        index_dir = vault.index_dir
    _make_old(index_dir)

    with Vault.open(root) as vault:
        reader = live_catalog(vault.index_dir)  # read-only: no columns added
        try:
            assert {p: r.fault for p, r in reader.failures().items()} == {
                "a.md": OURS,
                "junk.md": FILE,
            }
            assert reader.content_problems() == []  # sums over the four columns still hold
        finally:
            reader.close()
        summary = vault.index()
        assert summary.added == 1 and summary.failed == {}  # a.md read again, junk.md not
        notes, failed = _catalog(vault.index_dir)
        assert set(notes) == {"a.md", "b.md"} and set(failed) == {"junk.md"}
        assert vault.verify().ok  # the migrated rows summed again over six columns


def test_an_older_catalogs_damaged_failure_row_stays_damaged(
    write_vault: WriteVault, embedder: object
) -> None:
    """Adding the columns sums a row again only where its old sum held."""
    root = write_vault({**NOTES, "junk.md": b"\x00\x01\x02" * 400})
    with Vault.open(root) as vault:
        vault.index()
        index_dir = vault.index_dir
    _make_old(index_dir)
    catalog = live_catalog(index_dir, readonly=False)
    try:
        catalog.db.execute("UPDATE failures SET reason='binary file (NUL bytez)'")
        catalog.db.commit()
    finally:
        catalog.close()
    catalog = live_catalog(index_dir, readonly=False)  # a writer: adds the columns
    try:
        assert catalog.content_problems() == [
            "catalog: 1 failures rows differ from the checksum written with them"
        ]
    finally:
        catalog.close()


def test_a_failure_counts_the_runs_that_tried_the_file_as_it_is(tmp_path: Path) -> None:
    from vaultsearch.store.catalog import Catalog

    catalog = Catalog(tmp_path / "catalog.db")
    try:
        for reason, mtime in (("x", 1), ("y", 1), ("y", 1), ("z", 2)):
            with catalog.transaction():
                catalog.set_failure("f.md", FailureRow(reason, mtime, 10, OURS))
            row = catalog.failures()["f.md"]
            assert row.reason == reason
        assert row == FailureRow("z", 2, 10, OURS, 1)
        with catalog.transaction():
            catalog.set_failure("f.md", FailureRow("z", 2, 10, FILE))
        assert catalog.failures()["f.md"] == FailureRow("z", 2, 10, FILE, 2)
        assert catalog.content_problems() == []
    finally:
        catalog.close()


def test_the_parse_box_drops_a_child_it_could_not_wait_on(
    descriptors_run_out_once: dict[str, int],
) -> None:
    """Its reply to the file whose wait failed would be read as the next file's."""
    registry = ParserRegistry()
    parser = registry.parser_for("a.md")
    assert parser is not None
    with ParseBox(IndexConfig()) as box:
        with pytest.raises(Exception) as failed:
            box.parse(parser, "a.md", NOTES["a.md"], b"")
        assert getattr(failed.value, "fault", None) == OURS
        note = box.parse(parser, "b.md", NOTES["b.md"], b"")
    assert note.title == "Beta"


def test_the_parse_box_drops_a_child_whose_start_it_could_not_wait_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its "ready", unread, would be read as the next file's reply."""
    real = parsebox.readable
    calls = []

    def readable(fd: int, timeout: float) -> bool:
        calls.append(fd)
        if len(calls) == 1:
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
        return real(fd, timeout)

    monkeypatch.setattr(parsebox, "readable", readable)
    parser = ParserRegistry().parser_for("a.md")
    assert parser is not None
    with ParseBox(IndexConfig()) as box:
        with pytest.raises(Exception) as failed:
            box.parse(parser, "a.md", NOTES["a.md"], b"")
        assert getattr(failed.value, "fault", None) == OURS
        assert box.parse(parser, "b.md", NOTES["b.md"], b"").title == "Beta"
        assert box.parse(parser, "a.md", NOTES["a.md"], b"").title == "Alpha"


def test_a_file_that_keeps_failing_for_us_is_tried_once_a_run_and_counted(
    write_vault: WriteVault, embedder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_send, real_readable = parsebox._send, parsebox.readable
    armed: list[int] = []
    sent: list[str] = []

    def send(stream: Any, message: Any) -> None:
        real_send(stream, message)
        sent.append(message[1])
        if message[1] == "a.md":
            armed.append(1)

    def readable(fd: int, timeout: float) -> bool:
        if armed:
            armed.pop()
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_readable(fd, timeout)

    monkeypatch.setattr(parsebox, "_send", send)
    monkeypatch.setattr(parsebox, "readable", readable)
    root = write_vault(NOTES)
    with Vault.open(root) as vault:
        tried = [vault.index().to_retry for _ in range(MAX_TRIES - 1)]
        assert tried == [{"a.md": n} for n in range(1, MAX_TRIES)]  # the runs' own count
        assert vault.status()["to_retry"] == {"a.md": MAX_TRIES - 1}
        assert f"tried up to {MAX_TRIES - 1} times" in vault.check().reasons[0]
        assert not vault.verify().ok
        # the last try: a failure that outlives it is the file's until the file changes
        last = vault.index()
        assert last.to_retry == {} and "a.md" in last.failed
        assert vault.status()["to_retry"] == {} and "a.md" in vault.status()["failed"]
        assert vault.check().status == "current" and vault.verify().ok
        sent.clear()
        vault.index()
        assert "a.md" not in sent and "a.md" in vault.status()["failed"]  # not read again
        (root / "a.md").write_text(NOTES["a.md"] + "More.\n")  # a change starts again
        vault.index()
        assert vault.status()["to_retry"] == {"a.md": 1}


@pytest.mark.parametrize(
    ("code", "fault"),
    [(-9, FILE), (-11, OURS), (-15, OURS), (1, OURS)],
)
def test_a_parse_child_that_dies_is_ours_unless_the_kernel_refused_it_memory(
    code: int, fault: str
) -> None:
    assert parsebox._death(code, IndexConfig()).fault == fault


@pytest.mark.parametrize(
    ("reason", "fault"),
    [
        ("parser error: ValueError: filedescriptor out of range in select()", OURS),
        ("the parser process died (SIGSEGV) on this file; skipped.", OURS),
        ("cannot read: Too many open files", OURS),
        ("cannot read: Permission denied", FILE),
        ("binary file (NUL bytes)", FILE),
        ("parsing took longer than index.parse_timeout (30 s) allows; skipped.", FILE),
        ("unreadable PDF (EOF marker not found).", FILE),
    ],
)
def test_an_older_rows_fault_is_read_from_its_reason(reason: str, fault: str) -> None:
    assert of_reason(reason) == fault


@pytest.mark.parametrize(
    ("code", "boxed"), [(errno.EMFILE, True), (errno.EAGAIN, True), (errno.EACCES, False)]
)
def test_a_parse_child_that_could_not_be_started_for_a_moment_is_started_again(
    monkeypatch: pytest.MonkeyPatch, code: int, boxed: bool
) -> None:
    """A server's manager keeps its parse box for its whole life: one start refused for
    want of descriptors or processes must not parse every later file without the
    budgets. A start refused for good (a sandbox: no permission) still parses in
    this process, as before."""
    real = parsebox.subprocess.Popen
    calls = []

    def popen(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        if len(calls) == 1:
            raise OSError(code, os.strerror(code))
        return real(*args, **kwargs)

    monkeypatch.setattr(parsebox.subprocess, "Popen", popen)
    parser = ParserRegistry().parser_for("a.md")
    assert parser is not None
    with ParseBox(IndexConfig()) as box:
        if boxed:
            with pytest.raises(Exception) as failed:
                box.parse(parser, "a.md", NOTES["a.md"], b"")
            assert getattr(failed.value, "fault", None) == OURS
        else:
            assert box.parse(parser, "a.md", NOTES["a.md"], b"").title == "Alpha"
        assert box.parse(parser, "b.md", NOTES["b.md"], b"").title == "Beta"
        assert box.started == (1 if boxed else 0)
