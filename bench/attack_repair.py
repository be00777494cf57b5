"""Issue 22, failures 6 and 7: a damaged index is repaired by ``check --repair`` alone,
and a search never passes a damaged index off as a whole one. One command:

    .venv/bin/python bench/attack_repair.py

A vault of 40 notes is indexed once with the real model; every case damages a copy of
that index (new bytes renamed over the file, never rewritten in place), then asks, as a
user would: does ``vaultsearch check`` see it, what does a hybrid search answer before
the repair (an error, a flagged degraded answer, the same answer, or a silently changed
one), does ``check --repair`` alone restore a consistent index with the same answers,
and how many chunks did it embed again. The CLI runs in this process (the same
``main`` a shell runs) and, for the search surfaces, in real subprocesses and a real
stdio MCP session. The per-user cache is warm unless a case says it is off.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.corpus import WORDS  # noqa: E402

from reliability_store import damage, replace_bytes  # noqa: E402
from vaultsearch import Vault  # noqa: E402
from vaultsearch.cli.main import main as cli_main  # noqa: E402
from vaultsearch.errors import VaultsearchError  # noqa: E402
from vaultsearch.store.derived.graph import GraphPart  # noqa: E402
from vaultsearch.store.derived.keywords import KeywordPart  # noqa: E402
from vaultsearch.store.derived.sentences import SentencePart  # noqa: E402
from vaultsearch.store.derived.vectors import VectorPart  # noqa: E402
from vaultsearch.store.embedcache import CACHE_ENV  # noqa: E402
from vaultsearch.store.layout import IndexLayout  # noqa: E402
from vaultsearch.store.lock import WriterLock  # noqa: E402

QUERIES = ["glacier", "river canyon", "Note 007", "meadow", "falcon"]
Row = dict[str, object]


def note(i: int) -> str:
    return (
        f"# Note {i:03d}\n\nAbout the {WORDS[i % 10]} and the {WORDS[(i * 3) % 10]}. "
        f"See [[Note {(i + 1) % 40:03d}]].\n\n## More\n\nThe {WORDS[(i * 7) % 10]} again.\n"
    )


def write_vault(root: Path) -> None:
    for i in range(40):
        path = root / f"f{i % 4}" / f"Note {i:03d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note(i), encoding="utf-8")


def flip(path: Path, n: int, seed: int, skip: int = 100) -> None:
    rng = random.Random(seed)
    data = bytearray(path.read_bytes())
    for _ in range(n):
        data[rng.randrange(min(skip, len(data) - 1), len(data))] ^= 0xFF
    replace_bytes(path, bytes(data))


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli_main(list(args))
        except BaseException:
            traceback.print_exc(file=err)
            code = 99
    return code, out.getvalue(), err.getvalue()


def answers(root: Path, index_dir: Path, mode: str = "hybrid") -> dict[str, list[str]]:
    with Vault.open(root, index_dir=index_dir) as vault:
        return {q: [h.path for h in vault.search(q, mode=mode)] for q in QUERIES}


def search_outcome(root: Path, index_dir: Path, want: dict[str, list[str]]) -> str:
    """What a hybrid search answers on the damaged index, before any repair."""
    try:
        with Vault.open(root, index_dir=index_dir) as vault:
            flagged, got = None, {}
            for q in QUERIES:
                hits = vault.search(q)
                flagged = flagged or hits.degraded
                got[q] = [h.path for h in hits]
    except VaultsearchError as exc:
        return f"error ({str(exc).split('(')[0].strip()[:50]})"
    except Exception as exc:
        return f"CRASH {type(exc).__name__}"
    if flagged:
        return "flagged degraded"
    return "same answers" if got == want else "SILENT change"


class Bench:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.root = tmp / "vault"
        write_vault(self.root)
        self.pristine = tmp / "pristine"
        with Vault.open(self.root, index_dir=self.pristine) as vault:
            vault.index()
        self.want = answers(self.root, self.pristine)
        self.want_keyword = answers(self.root, self.pristine, "keyword")
        self.work = tmp / "index"

    def fresh(self) -> IndexLayout:
        shutil.rmtree(self.work, ignore_errors=True)
        shutil.copytree(self.pristine, self.work)
        return IndexLayout(self.work)

    def case(self, name: str, hurt: Callable[[IndexLayout], object], cache: bool = True) -> Row:
        layout = self.fresh()
        saved = os.environ.get(CACHE_ENV)
        if not cache:
            os.environ[CACHE_ENV] = "off"
        try:
            hurt(layout)
            args = [str(self.root), "--index-dir", str(self.work)]
            code, _out, err = cli("check", *args)
            detected = code == 1
            said = search_outcome(self.root, self.work, self.want)
            r_code, r_out, r_err = cli("check", "--repair", "--json", *args)
            embedded, salvaged = -1, ""
            if r_code in (0, 1) and r_out.strip():
                repaired = json.loads(r_out).get("repaired") or {}
                embedded = int(repaired.get("chunks_embedded", -1))
                salvaged = next(
                    (x for x in repaired.get("derived", []) if x.startswith("embeddings:")), ""
                )
            c_code, _, _ = cli("check", *args)
            same = c_code == 0 and answers(self.root, self.work) == self.want
        finally:
            if saved is None:
                os.environ.pop(CACHE_ENV, None)
            else:
                os.environ[CACHE_ENV] = saved
        repaired_ok = r_code == 0 and c_code == 0 and same
        crash = "Traceback" in err + r_err
        observed = (
            f"check {'found it' if detected else 'SAW NOTHING'}; search before repair: {said}; "
            f"repair {'restored it, same answers' if repaired_ok else f'FAILED (exit {r_code})'}"
            f"; {embedded} re-embedded" + (f" ({salvaged.split(': ', 1)[1]})" if salvaged else "")
        )
        ok = (
            detected
            and repaired_ok
            and not crash
            and "SILENT" not in said
            and "CRASH" not in said
            and (embedded == 0 or not cache)
        )
        expected = (
            "found; search errs, is flagged or unchanged; check --repair alone restores it"
            + (", 0 re-embedded" if cache else ", only lost vectors re-embedded")
        )
        return {
            "surface": "store",
            "case": name,
            "expected": expected,
            "observed": observed,
            "ok": ok,
        }


def _segment(layout: IndexLayout, suffix: str) -> Path:
    return next(KeywordPart.location(layout.live).glob(f"*{suffix}"))


def failure6(b: Bench) -> list[Row]:
    rows = []
    for seed in range(5):
        rows.append(
            b.case(
                f"catalog.sqlite: 200 inverted bytes (seed {seed})",
                lambda lay, s=seed: flip(lay.live.catalog, 200, s),
            )
        )
    for seed in range(2):
        rows.append(
            b.case(
                f"catalog.sqlite: 200 inverted bytes (seed {seed}), per-user cache off",
                lambda lay, s=seed: flip(lay.live.catalog, 200, s),
                cache=False,
            )
        )
    rows.append(b.case("catalog.sqlite deleted", lambda lay: lay.live.catalog.unlink()))
    rows.append(b.case("CURRENT deleted", lambda lay: lay.pointer.unlink()))
    rows.append(b.case("CURRENT: 3 inverted bytes", lambda lay: flip(lay.pointer, 3, 0, 0)))
    rows.append(
        b.case(
            "CURRENT names a missing generation",
            lambda lay: replace_bytes(lay.pointer, b"g999999\n"),
        )
    )
    rows.append(index_on_damaged_catalog(b))
    return rows


def index_on_damaged_catalog(b: Bench) -> Row:
    layout = b.fresh()
    flip(layout.live.catalog, 200, 3)
    code, out, err = cli("index", str(b.root), "--index-dir", str(b.work), "--json")
    embedded = json.loads(out).get("chunks_embedded") if code == 0 else None
    c_code, _, _ = cli("check", str(b.root), "--index-dir", str(b.work))
    ok = code == 0 and c_code == 0 and embedded == 0 and "Traceback" not in err
    return {
        "surface": "vaultsearch index",
        "case": "index on a catalog with 200 inverted bytes",
        "expected": "no crash: rebuilds the catalog (the documented design), 0 re-embedded",
        "observed": f"exit {code}, {embedded} re-embedded, check after: exit {c_code}",
        "ok": ok,
    }


def _rows(layout: IndexLayout, index: str) -> Path:
    """The largest rows file of an index's segments (past its .npy header)."""
    folder = layout.live.root / "segments"
    return max(folder.glob(f"{index}-*.rows.npy"), key=lambda p: p.stat().st_size)


def failure7(b: Bench) -> list[Row]:
    rows = [
        b.case(
            "vectors.json (segment list) deleted",
            lambda lay: VectorPart.location(lay.live).unlink(),
        ),
        b.case(
            "vectors.json: 50 inverted bytes",
            lambda lay: flip(VectorPart.location(lay.live), 50, 0, 0),
        ),
        b.case(
            "a vector segment: 50 inverted bytes", lambda lay: flip(_rows(lay, "vectors"), 50, 0)
        ),
        b.case("sentences.json deleted", lambda lay: SentencePart.location(lay.live).unlink()),
        b.case(
            "a sentence segment: 50 inverted bytes",
            lambda lay: flip(_rows(lay, "sentences"), 50, 0),
        ),
        b.case("graph.json deleted", lambda lay: GraphPart.location(lay.live).unlink()),
        b.case(
            "Tantivy .idx: 20 inverted bytes",
            lambda lay: flip(_segment(lay, ".idx"), 20, 0, 0),
        ),
        b.case(
            "Tantivy .term: 20 inverted bytes",
            lambda lay: flip(_segment(lay, ".term"), 20, 0, 0),
        ),
    ]
    rows += surfaces(b)
    return rows


def surfaces(b: Bench) -> list[Row]:
    """vectors.json deleted, as each surface reports it."""
    layout = b.fresh()
    VectorPart.location(layout.live).unlink()
    rows: list[Row] = []
    with Vault.open(b.root, index_dir=b.work) as vault:
        hits = vault.search("glacier")
        try:
            vault.search("glacier", mode="semantic")
            semantic = "answered (silent)"
        except VaultsearchError as exc:
            semantic = "error naming the repair" if "check --repair" in str(exc) else str(exc)
    rows.append(
        {
            "surface": "Python API",
            "case": "vectors.json deleted: hybrid, then semantic search",
            "expected": "hybrid: keyword hits with .degraded set; semantic: an error",
            "observed": f"hybrid degraded={bool(hits.degraded)}; semantic: {semantic}",
            "ok": bool(hits.degraded) and semantic == "error naming the repair",
        }
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    base = [sys.executable, "-m", "vaultsearch.cli", "search", "glacier", "--json"]
    where = ["--vault", str(b.root), "--index-dir", str(b.work)]
    hybrid = subprocess.run([*base, *where], capture_output=True, text=True, env=env, timeout=600)
    semantic_p = subprocess.run(
        [*base, "--mode", "semantic", *where], capture_output=True, text=True, env=env, timeout=600
    )
    flagged_json = bool(hybrid.stdout.strip()) and all(
        h.get("degraded") for h in json.loads(hybrid.stdout)
    )
    rows.append(
        {
            "surface": "CLI (subprocess)",
            "case": "vectors.json deleted: search --json, hybrid then semantic",
            "expected": "hybrid exit 0 with a warning line and 'degraded' in --json; semantic exit 2",
            "observed": f"hybrid exit {hybrid.returncode}, stderr "
            f"{'warns' if hybrid.stderr.startswith('warning: Degraded') else 'SILENT'}, json "
            f"{'flagged' if flagged_json else 'unflagged'}; semantic exit {semantic_p.returncode}",
            "ok": hybrid.returncode == 0
            and hybrid.stderr.startswith("warning: Degraded")
            and flagged_json
            and semantic_p.returncode == 2,
        }
    )
    rows.append(mcp_row(b, env))
    return rows


def mcp_row(b: Bench, env: dict[str, str]) -> Row:
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    args = ["-m", "vaultsearch.cli", "mcp", str(b.root), "--index-dir", str(b.work), "--no-watch"]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    seen: dict[str, object] = {}

    async def session() -> None:
        async with Client(stdio_client(params), mode="legacy", read_timeout_seconds=300) as c:
            hybrid = await c.call_tool("search", {"query": "glacier"})
            data = hybrid.structured_content or {}
            seen["field"] = bool(data.get("degraded"))
            seen["text"] = bool(data.get("degraded")) and data["degraded"] in hybrid.content[0].text
            semantic = await c.call_tool("search", {"query": "glacier", "mode": "semantic"})
            seen["semantic_error"] = semantic.is_error

    lock = WriterLock(IndexLayout(b.work).lock)  # the server reads, it does not repair first
    lock.acquire()
    try:
        anyio.run(session)
    finally:
        lock.release()
    ok = seen.get("field") and seen.get("text") and seen.get("semantic_error")
    return {
        "surface": "stdio MCP",
        "case": "vectors.json deleted: search tool, hybrid then semantic",
        "expected": "hybrid: 'degraded' in structured content and its sentence in the text; "
        "semantic: a tool error",
        "observed": ", ".join(f"{k}={v}" for k, v in seen.items()),
        "ok": bool(ok),
    }


def store_kinds(b: Bench) -> list[Row]:
    """Every file of a generation, with each damage kind of bench/reliability_store.py."""
    rng = random.Random(5)
    layout = IndexLayout(b.pristine)
    targets = [
        layout.pointer,
        *sorted(
            p
            for p in layout.live.root.rglob("*")
            if p.is_file() and not p.name.endswith(".lock") and not p.name.endswith("-shm")
        ),
    ]
    rows = []
    for target in targets:
        rel = target.relative_to(b.pristine)
        for how in ("delete", "truncate", "randomise", "bitflip"):
            row = b.case(
                f"{rel.relative_to(rel.parts[0]) if len(rel.parts) > 2 else rel} {how}",
                lambda lay, rel=rel, how=how: damage(lay.root / rel, how, rng),
            )
            rows.append(row)
    return rows


def run(tmp: Path) -> list[Row]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ[CACHE_ENV] = str(tmp / "embedding-cache")
    b = Bench(tmp)
    return failure6(b) + failure7(b) + store_kinds(b)


def table(rows: list[Row]) -> str:
    out = ["| surface | case | expected | observed | ok |", "|---|---|---|---|---|"]
    for r in rows:
        cells = [str(r[k]).replace("|", "\\|") for k in ("surface", "case", "expected", "observed")]
        out.append("| " + " | ".join(cells) + f" | {'yes' if r['ok'] else 'NO'} |")
    return "\n".join(out)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="attack-repair-") as folder:
        result = run(Path(folder))
    print(table(result))
    print(f"\n{sum(bool(r['ok']) for r in result)} of {len(result)} ok")
