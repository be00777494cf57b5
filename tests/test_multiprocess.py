"""Two ``vaultsearch watch`` processes and a searching reader share one index.

One watcher holds the writer lock and indexes; the other waits as a reader and takes
over when the writer dies. The reader process checks every generation it opens: the
chunk ids of the catalog, FAISS and Tantivy and the notes of the graph must agree,
or it saw a half-written index. Note contents are embedded once up front in this
process, so the subprocesses never load the model.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import embeddings, live_catalog, write_files
from vaultsearch import Vault
from vaultsearch.store.layout import IndexLayout
from vaultsearch.store.manifest import read_state

NOTES = 16
VERSIONS = 4

READER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from vaultsearch import Vault
    from vaultsearch.search.snapshot import Snapshot

    def whole(snap):
        chunks = set(snap.note_of_chunk)
        vectors = set(snap.reader("vectors").ids().tolist())
        keywords = snap.reader("keywords").all_chunk_ids()
        paths = {n.path for n in snap.notes.values()}
        if not (chunks == vectors == set(keywords) and len(keywords) == len(chunks)):
            return f"chunks {len(chunks)} vectors {len(vectors)} keywords {len(keywords)}"
        graph = snap.reader("graph").graph
        if set(graph.nodes) != paths:
            return f"graph {graph.number_of_nodes()} notes {len(paths)}"
        return None

    vault = Vault.open(sys.argv[1], index_dir=sys.argv[2])
    stop = Path(sys.argv[3])
    seen, held, opened, searches, bad = set(), [], 0, 0, []
    while not stop.exists():
        # open as often as possible, so that opens overlap the writer's commits
        snap = Snapshot.open(vault.layout, vault.config)
        opened += 1
        seen.add(snap.key)
        held.append(snap)
        # and keep a few open while newer generations land: they must not drift
        for s in held:
            if (problem := whole(s)) is not None:
                bad.append(problem)
        if len(held) > 4:
            held.pop(0).close()
        for hit in vault.search(f"token{searches % 16}", mode="keyword"):
            assert hit.path, hit
        searches += 1
    print(json.dumps({"generations": len(seen), "opened": opened, "searches": searches, "bad": bad}))
    sys.exit(1 if bad else 0)
    """
)


def text(i: int, version: int) -> str:
    body = f"# Note {i}\n\nNote {i}, version {version}: token{i} v{version}x{i}.\n"
    return body + "\nMore words. " * (120 * (version % 2))  # odd versions have two chunks


def digest(i: int, version: int) -> str:
    return hashlib.sha256(text(i, version).encode()).hexdigest()


HANG_GUARD = 600.0
"""Not a bound on speed: only how long to wait before calling a run hung."""


def wait_until(check: Callable[[], bool], timeout: float = HANG_GUARD) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def put(root: Path, rel: str, body: str) -> None:
    """Writes a note whole in one rename, as editors save: written in place, it is
    empty for a moment, and a starved test may let a watcher index it then, embedding
    text that no version holds (rightly: it was the file's content)."""
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = root.parent / "staging.tmp"
    staging.write_text(body, encoding="utf-8")
    os.replace(staging, target)


def file_states(index_dir: Path) -> dict[str, str]:
    catalog = live_catalog(index_dir)
    try:
        return {p: v[1] for p, v in catalog.file_states().items()}
    finally:
        catalog.close()


class Setup:
    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.root = tmp_path / "vault"
        self.index_dir = tmp_path / "index"
        self.config = tmp_path / "config.toml"
        self.config.write_text("[watch]\ndebounce_ms = 100\n", encoding="utf-8")
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs: dict[int, Path] = {}

    def pre_embed(self) -> int:
        """Every version of every note goes through the index once, in a staging folder."""
        staged = {
            f"stage/v{v}/note {i:02d}.md": text(i, v) for i in range(NOTES) for v in range(VERSIONS)
        }
        write_files(self.root, {f"notes/note {i:02d}.md": text(i, 0) for i in range(NOTES)})
        write_files(self.root, staged)
        with Vault.open(self.root, index_dir=self.index_dir) as vault:
            vault.index()
            for rel in staged:
                (self.root / rel).unlink()
            vault.index()
        return embeddings(self.index_dir)

    def start_watch(self) -> subprocess.Popen[bytes]:
        log = self.tmp / f"watch{len(self.procs)}.log"
        cmd = [sys.executable, "-m", "vaultsearch.cli", "watch", str(self.root)]
        cmd += ["--index-dir", str(self.index_dir), "--config", str(self.config)]
        with log.open("wb") as fh:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=fh)
        self.procs.append(proc)
        self.logs[proc.pid] = log
        return proc

    def log(self, proc: subprocess.Popen[bytes]) -> str:
        return self.logs[proc.pid].read_text(encoding="utf-8")

    def owner(self) -> int | None:
        try:
            return int((self.index_dir / "writer.lock").read_text() or 0) or None
        except (OSError, ValueError):
            return None

    def stop(self, proc: subprocess.Popen[bytes]) -> int:
        proc.send_signal(signal.SIGTERM)
        return proc.wait(HANG_GUARD)

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(HANG_GUARD)


@pytest.fixture
def setup(tmp_path: Path, embedder: object) -> Iterator[Setup]:
    s = Setup(tmp_path)
    try:
        yield s
    finally:
        s.close()


def test_two_writers_and_a_reader(setup: Setup) -> None:
    seed = int(os.environ.get("VAULTSEARCH_MP_SEED") or time.time_ns() % 2**32)
    print(f"seed {seed} (rerun with VAULTSEARCH_MP_SEED={seed})")
    rng = random.Random(seed)
    cached = setup.pre_embed()
    first, second = setup.start_watch(), setup.start_watch()
    stop_file = setup.tmp / "stop-reader"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(setup.root), str(setup.index_dir), str(stop_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    setup.procs.append(reader)
    assert wait_until(lambda: setup.owner() in (first.pid, second.pid)), "no writer"

    paths = {i: f"notes/note {i:02d}.md" for i in range(NOTES)}
    versions = dict.fromkeys(range(NOTES), 0)
    present = set(range(NOTES))
    for _ in range(40):
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(NOTES)
            op = rng.choice(["edit", "edit", "move", "delete"])
            if i not in present:
                paths[i], versions[i] = f"back/note {i:02d}.md", rng.randrange(VERSIONS)
                put(setup.root, paths[i], text(i, versions[i]))
                present.add(i)
            elif op == "edit":
                versions[i] = (versions[i] + rng.randrange(1, VERSIONS)) % VERSIONS
                put(setup.root, paths[i], text(i, versions[i]))
            elif op == "move":
                new = f"moved{rng.randrange(3)}/note {i:02d}.md"
                (setup.root / new).parent.mkdir(exist_ok=True)
                (setup.root / paths[i]).rename(setup.root / new)
                paths[i] = new
            else:
                (setup.root / paths[i]).unlink()
                present.discard(i)
        time.sleep(rng.uniform(0, 0.25))

    want = {paths[i]: digest(i, versions[i]) for i in present}

    def caught_up() -> bool:
        state = read_state(IndexLayout(setup.index_dir).live.root) or {}
        catalog = live_catalog(setup.index_dir)
        try:
            generation = catalog.generation
        finally:
            catalog.close()
        return file_states(setup.index_dir) == want and state.get("generation") == generation

    assert wait_until(caught_up), "the index never caught up with the files"
    stop_file.touch()
    out, err = reader.communicate(timeout=HANG_GUARD)
    assert reader.returncode == 0, out.decode() + err.decode()
    stats = json.loads(out.decode().splitlines()[-1])
    print(f"reader: {stats}")
    # how many commits a reader happens to open depends on the scheduler, not the design
    assert stats["generations"] >= 1 and stats["searches"] > 0

    with Vault.open(setup.root, index_dir=setup.index_dir) as vault:
        report = vault.manager().verify()
    assert report.ok, report.problems
    assert report.counts["notes"] == len(want) == len(file_states(setup.index_dir))
    assert embeddings(setup.index_dir) == cached, "something was embedded twice"

    logs = setup.log(first) + setup.log(second)
    assert logs.count("writer: this process indexes") == 1, logs  # no one else ever wrote
    writer, survivor = (first, second) if setup.owner() == first.pid else (second, first)
    assert setup.stop(writer) == 0
    # the survivor may take over in the moment before it is stopped too: the documented order
    assert setup.stop(survivor) == 0
    assert setup.log(writer).count("writer: this process indexes") == 1
    assert setup.log(survivor).count("writer: this process indexes") <= 1
    logs = setup.log(first) + setup.log(second)
    assert "Traceback" not in logs and "failed" not in logs.replace("0 failed", ""), logs


def test_a_reader_takes_over_when_the_writer_dies(setup: Setup) -> None:
    setup.pre_embed()
    first, second = setup.start_watch(), setup.start_watch()
    assert wait_until(lambda: setup.owner() in (first.pid, second.pid)), "no writer"
    writer, survivor = (first, second) if setup.owner() == first.pid else (second, first)
    assert wait_until(lambda: "indexed:" in setup.log(writer)), setup.log(writer)
    assert wait_until(lambda: "reader:" in setup.log(survivor)), setup.log(survivor)

    writer.kill()
    writer.wait(HANG_GUARD)
    put(setup.root, "notes/note 03.md", text(3, 1))

    def indexed() -> bool:
        return file_states(setup.index_dir).get("notes/note 03.md") == digest(3, 1)

    assert wait_until(indexed), setup.log(survivor)
    assert setup.owner() == survivor.pid
    with Vault.open(setup.root, index_dir=setup.index_dir) as vault:
        hits = vault.search("v1x3", mode="keyword")
        assert [h.path for h in hits][:1] == ["notes/note 03.md"]
        assert vault.manager().verify().ok
    assert setup.stop(survivor) == 0
    assert "writer: this process indexes" in setup.log(survivor)
