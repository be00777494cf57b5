"""Hostile cases against the write tools (issue 22: failures 2, 3 and the small ones of 10).

1. The rename race: a second local process swaps a vault folder for a symlink to an
   outside decoy folder and back, as fast as it can, while this process writes notes,
   documents and reports into that folder through the functions the MCP tools call
   (``NoteFiles.write`` for write_note, ``DocumentStore.upsert`` for upsert_documents,
   ``reports.report.write_report`` for create_rag_report; the tools add indexing, which
   is left out so the race gets thousands of writes). Counted: writes attempted, files
   outside the vault, temp files left, every "created" answer's file inside the vault,
   and the decoy folder's hash before and after.
2. A folder swapped for a link between the path check and the write (deterministic).
3. A move killed (SIGKILL) while it writes its temp file; the next server start with
   the write tools removes the temp once it is stale (aged here with utime).
4. A real MCP stdio session with ``--allow-writes``: links to .git inside the vault
   (write_note, move_note, create_rag_report), names over 255 bytes, a NUL in a path;
   each must be one sentence, with no traceback in the server's logs.

``python bench/attack_writes.py [--seconds 180]`` prints the rows as a Markdown table.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from vaultsearch.errors import VaultsearchError  # noqa: E402
from vaultsearch.reports.report import write_report  # noqa: E402
from vaultsearch.writes.confined import ConfinedVault, is_temp  # noqa: E402
from vaultsearch.writes.documents import Document, DocumentStore  # noqa: E402
from vaultsearch.writes.guard import note_path  # noqa: E402
from vaultsearch.writes.notes import NoteFiles  # noqa: E402

SECONDS = 180.0
LINK_WORDS = "is a symbolic link"

SWAPPER = textwrap.dedent(
    """
    import itertools, os, sys
    root, decoy, stop = sys.argv[1], sys.argv[2], sys.argv[3]
    shared = os.path.join(root, "shared")
    swaps = 0
    for n in itertools.count():
        if n % 64 == 0 and os.path.exists(stop):
            break
        parked, link = os.path.join(root, f"parked-{n}"), os.path.join(root, f"link-{n}")
        try:
            os.rename(shared, parked)
            os.symlink(decoy, link)
            os.rename(link, shared)
            os.unlink(shared)
            os.rename(parked, shared)
            swaps += 1
        except OSError:
            for stray in (link,):
                try:
                    os.unlink(stray)
                except OSError:
                    pass
            if os.path.islink(shared):
                os.unlink(shared)
    print(swaps)
    """
)


def files_under(folder: Path) -> list[Path]:
    return [Path(d, f) for d, _, fs in os.walk(folder) for f in fs]


def tree_hash(folder: Path) -> str:
    """Names, kinds and contents of everything under ``folder``, links not followed."""
    h = hashlib.sha256()
    for d, dirs, fs in sorted(os.walk(folder)):
        for name in sorted(dirs + fs):
            p = Path(d, name)
            h.update(str(p.relative_to(folder)).encode() + b"\0")
            if p.is_file() and not p.is_symlink():
                h.update(p.read_bytes())
    return h.hexdigest()[:16]


def row(surface: str, case: str, expected: str, observed: str, ok: bool) -> dict[str, Any]:
    return {"surface": surface, "case": case, "expected": expected, "observed": observed, "ok": ok}


# --- 1. the rename race -------------------------------------------------------------------
def rename_race(tmp: Path, seconds: float) -> list[dict[str, Any]]:
    root, decoy = tmp / "race/vault", tmp / "race/decoy"
    (root / "shared").mkdir(parents=True)
    (root / "Note.md").write_text("# Note\n")
    decoy.mkdir()
    for i in range(5):
        (decoy / f"decoy-{i}.md").write_text(f"# Decoy {i}\n\nNot the vault's.\n")
    before = tree_hash(decoy)
    index_dir = root / ".vaultsearch"
    notes = NoteFiles(root, index_dir, lambda: [])
    docs = DocumentStore(root, "shared", index_dir)
    stop = tmp / "race/stop"
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(root), str(decoy), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    attempts, refused, unexpected = 0, 0, []
    created: dict[str, list[str]] = {"write_note": [], "upsert_documents": [], "create_rag_report": []}  # fmt: skip
    deadline = time.monotonic() + seconds
    try:
        for i in itertools.count():
            if time.monotonic() > deadline:
                break
            attempts += 1
            try:
                if i % 3 == 0:
                    rel, made = notes.write(f"shared/n{i}", f"note {i}\n", False)
                    if made:
                        created["write_note"].append(rel)
                elif i % 3 == 1:
                    ((stored, made),) = docs.upsert([Document(f"d{i}", f"doc {i}", {})])
                    if made:
                        created["upsert_documents"].append(stored.path)
                else:
                    rel = write_report(root, "shared", f"r{i}.md", f"report {i}\n", index_dir)
                    created["create_rag_report"].append(rel)
            except VaultsearchError:
                refused += 1
            except Exception as exc:  # what a tool would answer as an opaque error
                where = traceback.extract_tb(exc.__traceback__)[-1]
                unexpected.append(f"{type(exc).__name__}: {exc} at {where.filename}:{where.lineno}")
    finally:
        stop.touch()
        out, _ = swapper.communicate(timeout=120)
    if (root / "shared").is_symlink():
        (root / "shared").unlink()
    swaps = int(out.strip() or 0)
    outside = [p for p in files_under(decoy) if not p.name.startswith("decoy-")]
    temps = [p for p in files_under(root) + files_under(decoy) if is_temp(p.name)]
    inside_names = {p.name for p in files_under(root)}
    answered = [rel for rels in created.values() for rel in rels]
    missing = [rel for rel in answered if Path(rel).name not in inside_names]
    after = tree_hash(decoy)
    summary = (
        f"{attempts:,} writes in {seconds:.0f} s ({swaps:,} swaps): {refused:,} refused, "
        f"{len(answered):,} created inside, {len(outside)} outside, {len(temps)} temps left, "
        f"{len(unexpected)} opaque errors"
    )
    print(summary, file=sys.stderr)
    print(f"decoy hash before {before} after {after}", file=sys.stderr)
    print("created by tool: " + ", ".join(f"{k} {len(v):,}" for k, v in created.items()), file=sys.stderr)  # fmt: skip
    for line in unexpected[:5]:
        print("  opaque:", line, file=sys.stderr)
    return [
        row(
            "write_note, upsert_documents, create_rag_report",
            f"rename race {seconds:.0f} s: a 2nd process swaps the folder for a link to a decoy",
            "0 files outside, 0 temps, every created file inside",
            summary,
            not outside and not temps and not missing and not unexpected and swaps > 0,
        ),
        row(
            "rename race",
            "decoy folder's hash before/after",
            "unchanged",
            f"{before} / {after}",
            before == after,
        ),
    ]


# --- 2. the deterministic swap -------------------------------------------------------------
def swap_after_check(tmp: Path) -> dict[str, Any]:
    root, decoy = tmp / "toctou/vault", tmp / "toctou/decoy"
    (root / "work").mkdir(parents=True)
    decoy.mkdir()
    rel, _ = note_path(root, "work/Plan", root / ".vaultsearch")
    (root / "work").rename(root / "work-parked")
    (root / "work").symlink_to(decoy)
    try:
        ConfinedVault(root, root / ".vaultsearch").write(rel, b"plan\n")
        observed = "written"
    except VaultsearchError as exc:
        observed = "refused: " + str(exc).split(":", 1)[1].strip()[:60]
    landed = files_under(decoy)
    return row(
        "write_note (confined writer)",
        "folder swapped for a link to outside after the path check",
        "refused, decoy empty",
        f"{observed}; decoy has {len(landed)} files",
        observed.startswith("refused") and not landed,
    )


# --- 3. a killed move ------------------------------------------------------------------------
KILLED_MOVE = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from vaultsearch.writes.notes import NoteFiles
    root = Path(sys.argv[1])
    NoteFiles(root, root / ".vaultsearch", lambda: ["Big.md"]).move("Big.md", "moved/Big.md")
    """
)


def killed_move(tmp: Path, root: Path) -> tuple[dict[str, Any], list[Path]]:
    """SIGKILL a move while its temp file is being written: no partial note, one temp."""
    (root / "Big.md").write_bytes(b"# Big\n" + b"\xff" * (128 << 20))  # not UTF-8: no link pass
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, "-c", KILLED_MOVE, str(root)], env=env)
    temps: list[Path] = []
    deadline = time.monotonic() + 120
    while not temps and proc.poll() is None and time.monotonic() < deadline:
        if (root / "moved").is_dir():
            temps = [p for p in (root / "moved").iterdir() if is_temp(p.name)]
        time.sleep(0.001)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = (root / "moved/Big.md").exists()
    (root / "Big.md").unlink()
    for t in temps:
        if t.exists():
            t.write_bytes(b"partial")  # keep the bench's disk use small; still the killed temp
            os.utime(t, (time.time() - 600, time.time() - 600))
    left = [t for t in temps if t.exists()]
    return (
        row(
            "move_note",
            "SIGKILL while the moved copy's temp file is written",
            "no partial note; 1 temp left (swept at next start)",
            f"partial note: {partial}; temps left: {len(left)}",
            not partial and len(left) == 1,
        ),
        left,
    )


# --- 4. one MCP session ---------------------------------------------------------------------
MCP_CASES: list[tuple[str, str, dict[str, Any], str]] = [
    ("write_note", "gitlink/hooks/post-checkout (gitlink -> .git)",
     {"path": "gitlink/hooks/post-checkout", "content": "#!/bin/sh\ntouch pwned\n"}, LINK_WORDS),
    ("move_note", "move a note into gitlink/hooks",
     {"path": "Note.md", "new_path": "gitlink/hooks/Note.md"}, LINK_WORDS),
    ("create_rag_report", "output_dir=gitlink/hooks",
     {"variables": {"title": "t", "answer": "a"}, "output_dir": "gitlink/hooks"}, LINK_WORDS),
    ("write_note", "obsidian link: olink/plugins/x (olink -> .obsidian)",
     {"path": "olink/plugins/x", "content": "x"}, LINK_WORDS),
    ("write_note", "file name of 300 bytes",
     {"path": "n" * 300, "content": "x"}, "303 bytes long"),
    ("write_note", "folder name of 260 bytes (UTF-8)",
     {"path": "é" * 130 + "/x.md", "content": "x"}, "260 bytes long"),
    ("upsert_documents", "id that encodes to 423 bytes",
     {"documents": [{"id": "é" * 70, "text": "x"}]}, "too long for a file name"),
    ("create_rag_report", "file_name of 300 bytes",
     {"variables": {"title": "t", "answer": "a"}, "file_name": "f" * 300}, "bytes long"),
    ("write_note", "NUL in the path",
     {"path": "a\0b.md", "content": "x"}, "NUL character"),
    ("edit_note", "NUL in the path",
     {"path": "No\0te.md", "operation": "append", "content": "x"}, "NUL character"),
]  # fmt: skip


def mcp_session(tmp: Path) -> list[dict[str, Any]]:
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    root = tmp / "mcp/vault"
    (root / ".git/hooks").mkdir(parents=True)
    (root / ".obsidian/plugins").mkdir(parents=True)
    (root / "gitlink").symlink_to(".git")
    (root / "olink").symlink_to(".obsidian")
    (root / "Note.md").write_text("# Note\n\nA note.\n")
    killed, temps = killed_move(tmp, root)
    calls, errlog = tmp / "mcp/calls.log", tmp / "mcp/stderr.log"
    env = {**os.environ, "VAULTSEARCH_MCP_LOG": str(calls), "PYTHONPATH": str(ROOT / "src")}
    args = ["-m", "vaultsearch.cli", "mcp", str(root), "--index-dir", str(tmp / "mcp/index"),
            "--no-watch", "--allow-writes"]  # fmt: skip
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    answers: list[tuple[bool, str]] = []

    async def session() -> None:
        with errlog.open("w") as err:
            transport = stdio_client(params, errlog=err)
            async with Client(transport, mode="legacy", read_timeout_seconds=120) as c:
                for tool, _, arguments, _ in MCP_CASES:
                    result = await c.call_tool(tool, arguments)
                    answers.append((result.is_error, result.content[0].text))

    anyio.run(session)
    logs = errlog.read_text() + (calls.read_text() if calls.exists() else "")
    clean = "Traceback" not in logs
    untouched = not files_under(root / ".git") and not files_under(root / ".obsidian")
    out = []
    for (tool, case, _, words), (is_error, text) in zip(MCP_CASES, answers, strict=True):
        one = "\n" not in text and "Error executing tool" not in text
        out.append(
            row(
                f"{tool} (stdio MCP)",
                case,
                f"refused in one sentence ({words!r})",
                text[:110] + ("..." if len(text) > 110 else ""),
                is_error and one and words in text and untouched and clean,
            )
        )
    out.append(killed)
    gone = not any(t.exists() for t in temps)
    out.append(
        row(
            "stdio MCP start-up",
            "a stale temp of a killed move in the vault",
            "removed when the server starts with writes",
            f"{len(temps)} stale temps before, {sum(t.exists() for t in temps)} after",
            bool(temps) and gone and '"swept_temps"' in logs,
        )
    )
    out.append(
        row(
            "stdio MCP logs",
            "tracebacks in the server's stderr and call log",
            "none",
            "none" if clean else "a traceback",
            clean,
        )
    )
    return out


def run(tmp: Path, seconds: float = SECONDS) -> list[dict[str, Any]]:
    return [swap_after_check(tmp), *mcp_session(tmp), *rename_race(tmp, seconds)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=SECONDS, help="rename race length")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="attack-writes-") as tmp:
        rows = run(Path(tmp), args.seconds)
    print("| surface | case | expected | observed | ok |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        cells = [str(r[k]).replace("|", "\\|") for k in ("surface", "case", "expected", "observed")]
        print("| " + " | ".join(cells) + f" | {'yes' if r['ok'] else 'NO'} |")
    print(f"\n{sum(r['ok'] for r in rows)} of {len(rows)} ok")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
