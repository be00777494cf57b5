"""SIGKILL an indexing writer at random moments, again and again: nothing is ever lost.

Every note cycles between two versions whose embeddings were computed once up
front, so no writer here loads the model, and each writer is started (imports
done) one cycle ahead: a cycle costs under half a second. Each kill lands at a
random moment after the writer took the lock, i.e. while it reads, writes or commits.
After each kill the catalog must be intact and the derived indexes repairable from
it without embedding; after a last, uninterrupted run every note is indexed at its
latest version and ``vaultsearch check`` finds nothing to report.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import HANG_GUARD, embeddings, live_catalog, run_check, write_files
from vaultsearch import Vault
from vaultsearch.store.layout import IndexLayout

NOTES = 24
# bench/reliability_store.py kills more; each run of the suite aims at moments of its own seed,
# and a starved test that sees writers end before it can kill them still reaches the count
KILLS = 12
MAX_CYCLES = 80
SEED_ENV = "VAULTSEARCH_KILL_SEED"
FRUITS = ["apple", "pear", "plum", "fig", "kiwi", "lime", "date", "peach"]


def text(i: int, version: str) -> str:
    """Two versions per note; the title comes from the H1, so a renamed file embeds alike."""
    body = f"# Note {i}\n\nNote {i} is about the {FRUITS[i % 8]}, version {version}: token{i}{version}.\n"
    body += f"It links to [[note {(i + 1) % NOTES:02d}]].\n"
    if version == "b" and i % 3 == 0:  # some notes grow a second and third chunk
        for part in range(2):
            body += f"\n## Part {part}\n\n" + f"Longer section {part} of note {i}. " * 40 + "\n"
    return body


@dataclass
class Note:
    path: str | None
    version: str


GO = "import sys; from vaultsearch.cli.main import main; sys.stdin.buffer.read(1); sys.exit(main(sys.argv[1:]))"


def writer(root: Path, index_dir: Path) -> subprocess.Popen[bytes]:
    """``vaultsearch index`` in a subprocess that has done its imports and waits for
    ``go``: started one cycle ahead, so the loop does not wait for Python to start."""
    return subprocess.Popen(
        [sys.executable, "-c", GO, "index", str(root), "--index-dir", str(index_dir), "--quiet"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def go(proc: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
    assert proc.stdin is not None
    proc.stdin.write(b"\n")
    proc.stdin.close()
    return proc


def lock_owner(index_dir: Path) -> str:
    try:
        return (index_dir / "writer.lock").read_text()
    except OSError:
        return ""


def wait_for_lock(
    proc: subprocess.Popen[bytes], index_dir: Path, timeout: float = HANG_GUARD
) -> bool:
    """True once ``proc`` holds the writer lock, False if it finished first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if lock_owner(index_dir) == str(proc.pid):
            return proc.poll() is None
        if proc.poll() is not None:
            return False
        time.sleep(0.002)
    raise AssertionError("the writer never took the lock")


class VaultState:
    """What the files are meant to be, and the random edits that change them."""

    def __init__(self, root: Path, rng: random.Random) -> None:
        self.root, self.rng = root, rng
        self.notes = {i: Note(f"f{i % 4}/note {i:02d}.md", "a") for i in range(NOTES)}
        self.renamed_folders = 0

    def write(self, i: int) -> None:
        n = self.notes[i]
        assert n.path is not None
        path = self.root / n.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text(i, n.version), encoding="utf-8")

    def mutate(self) -> None:
        for _ in range(self.rng.randint(1, 4)):
            i = self.rng.randrange(NOTES)
            n = self.notes[i]
            op = self.rng.choice(["edit", "edit", "move", "delete", "folder"])
            if n.path is None:  # restore a deleted note, at a fresh place
                n.path, n.version = f"back/note {i:02d}.md", self.rng.choice("ab")
                self.write(i)
            elif op == "edit":
                n.version = "b" if n.version == "a" else "a"
                self.write(i)
            elif op == "move":
                old = self.root / n.path
                n.path = f"moved{self.rng.randrange(3)}/note {i:02d}.md"
                (self.root / n.path).parent.mkdir(parents=True, exist_ok=True)
                old.rename(self.root / n.path)
            elif op == "delete":
                (self.root / n.path).unlink()
                n.path = None
            else:
                self.rename_folder(n.path.rsplit("/", 1)[0])

    def rename_folder(self, folder: str) -> None:
        self.renamed_folders += 1
        new = f"renamed{self.renamed_folders}"
        (self.root / folder).rename(self.root / new)
        for n in self.notes.values():
            if n.path is not None and n.path.startswith(folder + "/"):
                n.path = new + n.path[len(folder) :]


def pre_embed(root: Path, index_dir: Path) -> int:
    """Index version a in place and version b in a staging folder, then drop the staging
    folder: both versions are in the embedding cache. Returns the cache's size."""
    write_files(root, {f"stage/note {i:02d}.md": text(i, "b") for i in range(NOTES)})
    with Vault.open(root, index_dir=index_dir) as vault:
        vault.index()
        for p in (root / "stage").iterdir():
            p.unlink()
        (root / "stage").rmdir()
        vault.index()
    return embeddings(index_dir)


def catalog_intact(index_dir: Path) -> None:
    db = sqlite3.connect(f"{IndexLayout(index_dir).live.catalog.as_uri()}?mode=ro", uri=True)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        db.close()


def test_sigkill_loop(tmp_path: Path, embedder: object) -> None:
    seed = int(os.environ.get(SEED_ENV) or time.time_ns() % 2**32)
    print(f"kill loop seed {seed} (rerun with {SEED_ENV}={seed})")
    rng = random.Random(seed)
    root, index_dir = tmp_path / "vault", tmp_path / "index"
    state = VaultState(root, rng)
    for i in range(NOTES):
        state.write(i)
    cached = pre_embed(root, index_dir)

    # how long a writer works once it has the lock: the span the kills aim at
    state.mutate()
    proc = go(writer(root, index_dir))
    assert wait_for_lock(proc, index_dir)
    t0 = time.monotonic()
    assert proc.wait(HANG_GUARD) == 0, proc.stderr.read() if proc.stderr else ""
    work = max(time.monotonic() - t0, 0.05)

    print(f"a writer works {work:.3f} s once it holds the lock")
    kills = cycles = early = behind = littered = 0
    repaired_derived = 0
    vault = Vault.open(root, index_dir=index_dir)
    t_start = time.monotonic()
    spare = writer(root, index_dir)
    while kills < KILLS and cycles < MAX_CYCLES:
        cycles += 1
        state.mutate()
        proc, spare = go(spare), writer(root, index_dir)
        if wait_for_lock(proc, index_dir):
            time.sleep(rng.uniform(0, work * 1.2))
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                kills += 1
                work *= 1.02
            else:  # the load eased: aim the kills at what a writer takes now
                work = max(0.05, work * 0.8)
        else:
            early += 1
        rc = proc.wait(HANG_GUARD)
        assert rc in (0, -signal.SIGKILL), proc.stderr.read() if proc.stderr else rc

        catalog_intact(index_dir)
        littered += any(index_dir.glob(".*.tmp"))  # a kill inside an atomic write
        report = vault.manager().verify()
        broken = [p for p in report.problems if "duplicate" in p or "unreadable" in p]
        assert broken == [], f"cycle {cycles}: {broken}"
        behind += any(not p.startswith("files:") for p in report.problems)
        if cycles % 2 == 0:  # odd cycles leave the recovery to the next writer instead
            fixed = vault.manager().repair()
            assert fixed.chunks_embedded == 0
            repaired_derived += bool(fixed.repaired)
            report = vault.manager().verify()
            derived = [p for p in report.problems if not p.startswith("files:")]
            assert derived == [], f"cycle {cycles}, after repair: {derived}"
    loop_seconds = time.monotonic() - t_start
    spare.kill()
    spare.wait(HANG_GUARD)
    print(
        f"{cycles} cycles, {kills} kills, {early} done before the lock, "
        f"{behind} left derived indexes behind the catalog, {repaired_derived} repaired in here, "
        f"{littered} left a temp file, "
        f"{state.renamed_folders} folder renames, {loop_seconds:.1f} s"
    )
    assert kills >= KILLS

    final = go(writer(root, index_dir))
    assert final.wait(HANG_GUARD) == 0
    assert list(index_dir.glob(".*.tmp")) == [], "the writer sweeps what killed ones left"
    check = run_check(root, index_dir)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.startswith("consistent")

    present = {n.path: (i, n.version) for i, n in state.notes.items() if n.path is not None}
    catalog = live_catalog(index_dir)
    try:
        rows = catalog.file_states()
    finally:
        catalog.close()
    assert sorted(rows) == sorted(present)  # one row per file, none left over
    for path, (i, version) in present.items():
        digest = hashlib.sha256(text(i, version).encode()).hexdigest()
        assert rows[path][1] == digest, f"{path} is not at its latest version"
        hits = vault.search(f"token{i}{version}", mode="keyword", top_k=1)
        assert [h.path for h in hits] == [path]
    assert embeddings(index_dir) == cached, "a writer re-embedded"
    vault.close()


def _parse_child(parent: int) -> int | None:
    try:
        kids = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    except OSError:
        return None
    for kid in kids:
        try:
            if b"vaultsearch.indexing.parsebox" in Path(f"/proc/{kid}/cmdline").read_bytes():
                return int(kid)
        except OSError:
            continue
    return None


def test_a_writer_killed_while_its_parser_runs_leaves_no_traceback(tmp_path: Path) -> None:
    """The parse child shares the writer's stderr, the user's terminal: a writer killed
    while the child starts (or parses) made the child's next write fail with a
    BrokenPipeError traceback there. Whenever the kill lands, the child ends quietly."""
    root = write_files(tmp_path / "vault", {f"n{i}.md": text(i, "a") for i in range(8)})
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    argv = [sys.executable, "-m", "vaultsearch.cli", "index", str(root)]
    for k in range(3):
        index_dir = tmp_path / f"index{k}"
        proc = subprocess.Popen(
            [*argv, "--index-dir", str(index_dir), "--quiet"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        deadline = time.monotonic() + HANG_GUARD
        child = None
        while child is None and proc.poll() is None and time.monotonic() < deadline:
            child = _parse_child(proc.pid)
            time.sleep(0.002)
        proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate(timeout=HANG_GUARD)  # until the child closed it too
        assert child is not None, "the writer ended before its parse child was seen"
        assert b"Traceback" not in err, err.decode(errors="replace")
