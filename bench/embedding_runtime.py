"""Both embedding backends in one run: indexing speed, retrieval quality, cold starts,
memory, installed size and the install resolution (issue #10's figures).

Run: `make bench-embedding` (or `.venv/bin/python bench/embedding_runtime.py [--parts queries,...]`).
Every timing is reported with the load average beside it, and indexing also as chunks
per CPU-second of the process, which a busy shared machine does not distort.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import CACHE, ROOT, SHARED, percentile, require, write_section

NAME = "vaultofknowledge"
BACKENDS = {"onnx": "default (ONNX Runtime INT8)", "huggingface": "huggingface (torch bf16)"}
QUERY = "how do I keep my notes organised"


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def config_file(work: Path, backend: str, cache: bool = True) -> Path:
    """``cache=False`` turns the per-user embedding cache off, so that "from scratch"
    means every chunk goes through the model."""
    path = work / f"{backend}{'' if cache else '-nocache'}.toml"
    off = "" if cache else 'cache_dir = "off"\n'
    path.write_text(f'[embedding]\nbackend = "{backend}"\n{off}', encoding="utf-8")
    return path


def child_index(vault_dir: str, index_dir: str, config: str) -> None:
    """In a fresh process: index from scratch, report wall and CPU seconds."""
    from vaultsearch import Vault

    t, cpu = time.perf_counter(), time.process_time()
    with Vault.open(vault_dir, index_dir=index_dir, config=config) as vault:
        summary = vault.index()
        threads = vault.embedder.threads
    wall, cpu_s = time.perf_counter() - t, time.process_time() - cpu
    out = {"wall": wall, "cpu": cpu_s, "chunks": summary.chunks_embedded, "threads": threads}
    print(json.dumps(out))


def child_quality(work: str, config: str) -> None:
    from vaultsearch.app.beir import prepare_vault, run_eval
    from vaultsearch.config import load_config

    data = SHARED / "scifact"
    cfg = load_config(config)
    vault, doc_of = prepare_vault(data / "corpus.jsonl", Path(work), cfg)
    vault.index()
    res = run_eval(
        data / "corpus.jsonl",
        data / "queries.jsonl",
        data / "qrels" / "train.tsv",
        modes=("semantic", "hybrid"),
        config=cfg,
        vault=vault,
        doc_of=doc_of,
    )
    print(
        json.dumps(
            {m: {k: r[k] for k in ("ndcg@10", "recall@100", "queries")} for m, r in res.items()}
        )
    )


def run_child(*argv: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, __file__, *argv], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"child {argv[0]} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def child_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cold_searches(vault: Path, index_dir: Path, n: int) -> tuple[list[float], list[float]]:
    """Wall seconds, and CPU seconds (what a busy machine does not inflate), per process."""
    argv = [sys.executable, "-m", "vaultsearch.cli", "search", QUERY, "--vault", str(vault)]
    times, cpus = [], []
    for _ in range(n):
        t, cpu = time.perf_counter(), child_cpu()
        subprocess.run(
            [*argv, "--index-dir", str(index_dir), "--json"], check=True, capture_output=True
        )
        times.append(time.perf_counter() - t)
        cpus.append(child_cpu() - cpu)
    return times, cpus


def import_cpu(n: int = 5) -> float:
    """CPU seconds of Python importing the MCP server's modules (the floor of a start)."""
    cpus = []
    for _ in range(n):
        cpu = child_cpu()
        code = "import vaultsearch.cli, vaultsearch.server.mcp.run"
        subprocess.run([sys.executable, "-c", code], check=True)
        cpus.append(child_cpu() - cpu)
    return statistics.median(cpus)


def mcp_initialize(source: Path, work: Path, n: int) -> tuple[list[float], list[float]]:
    """Start to `initialize` and to the first `tools/list` answer, ``n`` cold starts."""
    from mcp_latency import time_handshake

    vault = work / "cold-vault"
    shutil.rmtree(vault, ignore_errors=True)
    shutil.copytree(source, vault)
    inits, lists = [], []
    for i in range(n):
        index_dir = work / f"cold-index{i}"
        init, listed = time_handshake(vault, index_dir)
        inits.append(init)
        lists.append(listed)
        shutil.rmtree(index_dir, ignore_errors=True)
    return inits, lists


def compile_sources() -> None:
    """Byte-compile the package as an installed wheel is: with PYTHONDONTWRITEBYTECODE
    set (as on this machine) every cold process would otherwise compile ~60 modules."""
    import compileall

    compileall.compile_dir(str(ROOT / "src"), quiet=1)


def mcp_idle_rss(vault: Path, index_dir: Path) -> tuple[float, float]:
    """MB resident in an idle server after one hybrid search through the protocol."""
    from mcp_memory import after_search

    async def read(_: object) -> tuple[float, float]:
        return server_rss(str(vault))

    return after_search(vault, index_dir, read)


def server_rss(vault: str) -> tuple[float, float]:
    """(RSS, private MB): the rest is shared file pages (the libraries) that every
    server process maps once for all."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            if b"mcp" in cmdline and vault.encode() in cmdline:
                fields = {}
                for line in (proc / "smaps_rollup").read_text().splitlines()[1:]:
                    key, value = line.split(":", 1)
                    fields[key] = int(value.split()[0]) / 1024
                return fields["Rss"], fields["Private_Clean"] + fields["Private_Dirty"]
        except (OSError, KeyError, ValueError):
            continue
    raise RuntimeError("the MCP server process was not found")


def warm_p95(vault: Path, index_dir: Path, n: int) -> tuple[float, float, int]:
    from vaultsearch import Vault

    with Vault.open(vault, index_dir=index_dir) as v:
        notes = sorted(v.orchestrator.snapshot().notes.values(), key=lambda m: m.path)
        queries = [m.title for m in notes[:: max(1, len(notes) // n)] if m.title.strip()][:n]
        v.search(queries[0])
        times = []
        for q in queries:
            t = time.perf_counter()
            v.search(q, top_k=10)
            times.append((time.perf_counter() - t) * 1000)
        chunks = int(v.status()["chunks"])
    return percentile(times, 50), percentile(times, 95), chunks


def venv_size(work: Path, spec: str, torch: bool) -> tuple[float, Path]:
    """The default install with pip's configuration off (what any machine gets from the
    package index); the extra with it on, for this machine's CPU torch wheel."""
    venv = work / ("venv-full" if torch else "venv-default")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "pip"), "install", "--quiet"]
    if torch:
        subprocess.run([*pip, "torch==2.13.0"], check=True, capture_output=True)
    else:
        pip.append("--isolated")
    subprocess.run([*pip, spec], check=True, capture_output=True)
    return du_mb(venv), venv


def du_mb(*paths: Path) -> float:
    done = subprocess.run(
        ["du", "-scm", *map(str, paths)], check=True, capture_output=True, text=True
    )
    return float(done.stdout.splitlines()[-1].split()[0])


def package_sizes(venv: Path, top: int = 14) -> str:
    """MB per top-level entry of site-packages, largest first."""
    site = next((venv / "lib").glob("python3*/site-packages"))
    sizes: dict[str, float] = {}
    for entry in site.iterdir():
        if entry.name.endswith((".dist-info", ".pth")) or entry.name == "__pycache__":
            continue
        name = entry.name.removesuffix(".libs").removesuffix(".py").replace("faiss_cpu", "faiss")
        sizes[name] = sizes.get(name, 0) + du_mb(entry)
    largest = sorted(sizes.items(), key=lambda kv: -kv[1])[:top]
    listed = ", ".join(f"{name} {mb:.0f}" for name, mb in largest)
    return (
        f"Largest parts of the default venv (MB, site-packages): {listed}; the rest "
        f"{du_mb(venv) - sum(sizes[n] for n, _ in largest):.0f}."
    )


def dry_run() -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_install.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "no output"


PARTS = ("index", "batch", "queries", "quality", "sizes", "install", "resolution")
WORK = CACHE / "embedding-runtime"
"""Kept between runs: the vault copy, the default backend's index and each part's text,
so one part can be measured again (``--parts queries``) and the section still has all."""


def part_index(source: Path, vault: Path) -> str:
    files = sum(1 for _ in vault.rglob("*.md"))
    index: dict[str, dict[str, object]] = {}
    loads: dict[str, str] = {}
    for backend in BACKENDS:
        index_dir = WORK / f"index-{backend}"
        shutil.rmtree(index_dir, ignore_errors=True)
        before = load()
        index[backend] = run_child(
            "--child-index",
            str(vault),
            str(index_dir),
            str(config_file(WORK, backend, cache=False)),
        )
        loads[backend] = f"{before} → {load()}"
        print(backend, index[backend], loads[backend], flush=True)
    rows = []
    for backend, label in BACKENDS.items():
        r = index[backend]
        wall, cpu, chunks = float(r["wall"]), float(r["cpu"]), int(r["chunks"])  # type: ignore[arg-type]
        rows.append(
            f"| {label} | {r['threads']} | {chunks} | {wall:.0f} | {chunks / wall:.1f} "
            f"| {chunks / cpu:.1f} | {loads[backend]} |"
        )
    ov, hf = index["onnx"], index["huggingface"]
    ratio = (int(ov["chunks"]) / float(ov["cpu"])) / (int(hf["chunks"]) / float(hf["cpu"]))  # type: ignore[arg-type]
    return (
        f"**Indexing `{source.name}` from scratch** ({files} Markdown files; `vaultsearch index` "
        "in a fresh process per backend, the model on every core):\n\n"
        "| backend | threads | chunks embedded | seconds | chunks/s | chunks per CPU-second | load average (1, 5, 15 min) before → after |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |\n" + "\n".join(rows) + "\n\n"
        f"Per CPU-second the default embeds **{ratio:.2f}×** as many chunks as torch bf16."
    )


def part_batch(vault: Path) -> str:
    """embedding.batch_size: chunks per CPU-second of the default backend on 256 passages."""
    from vaultsearch.config import EmbeddingConfig
    from vaultsearch.embedding import Embedder

    sys.path.insert(0, str(ROOT / "scripts"))
    from convert_model import calibration_texts

    texts = calibration_texts([vault], 256)
    before, rates = load(), []
    for size in (4, 8, 16, 32, 64):
        embedder = Embedder(EmbeddingConfig(batch_size=size))
        embedder.embed_texts(texts[:32])
        t = time.process_time()
        embedder.embed_texts(texts)
        rates.append(f"{size}: {len(texts) / (time.process_time() - t):.1f}")
    return (
        f"**Batch size** (`embedding.batch_size`; chunks per CPU-second of the default backend, "
        f"{len(texts)} passages of up to 1,000 characters, sorted by length; load average "
        f"{before} → {load()}): {'; '.join(rates)}. Sizes 8 to 32 are within the noise of each "
        "other from run to run; the default is 16."
    )


def part_queries(source: Path, vault: Path, cold_runs: int) -> str:
    ov_index = WORK / "index-onnx"
    if not (ov_index / "index.manifest.json").is_file():
        run_child("--child-index", str(vault), str(ov_index), str(config_file(WORK, "onnx")))
    files = sum(1 for _ in vault.rglob("*.md"))
    compile_sources()
    before = load()
    cold, cold_cpu = cold_searches(vault, ov_index, cold_runs)
    imports = import_cpu()
    init, listed = mcp_initialize(source, WORK, 5)
    rss, private = mcp_idle_rss(vault, ov_index)
    p50, p95, chunks = warm_p95(vault, ov_index, 200)
    return (
        f"**Cold and warm queries, default backend** (load average {before} → {load()}):\n\n"
        "| measure | result | goal |\n| --- | ---: | ---: |\n"
        f"| cold CLI hybrid search (`vaultsearch search`, fresh process, median of {len(cold)}) "
        f"| {statistics.median(cold):.2f} s (min {min(cold):.2f}, max {max(cold):.2f}); "
        f"CPU {statistics.median(cold_cpu):.2f} s | ≤ 1.0 s |\n"
        f"| MCP start to `initialize` answer, {files}-note vault with no index (median of {len(init)}) "
        f"| {statistics.median(init):.2f} s (min {min(init):.2f}, max {max(init):.2f}) | ≤ 0.5 s |\n"
        f"| MCP start to the first `tools/list` answer, same starts (the SDK loaded; importing "
        f"the server's modules alone: {imports:.2f} CPU-s) | {statistics.median(listed):.2f} s | |\n"
        f"| RSS of an idle MCP server after one hybrid search | {rss:.0f} MB, of which "
        f"private {private:.0f} MB (the rest: shared library pages) | ≤ 250 MB |\n"
        f"| warm hybrid search in-process, {chunks} chunks, 200 note titles | p50 {p50:.1f} ms, p95 {p95:.1f} ms | |\n\n"
        "`initialize` is answered by the stdio pipe from constants while the MCP SDK loads "
        "(`server/handshake.py`); the SDK's own answer to the same request is compared and "
        "dropped. The cold CLI search loads the model on a second thread while the index opens."
    )


def part_quality() -> str:
    before = load()
    quality = {
        b: run_child("--child-quality", str(WORK / f"scifact-{b}"), str(config_file(WORK, b)))
        for b in BACKENDS
    }
    qrows = [
        f"| {label} | {mode} | {quality[b][mode]['ndcg@10']:.4f} | {quality[b][mode]['recall@100']:.4f} |"  # type: ignore[index]
        for b, label in BACKENDS.items()
        for mode in ("semantic", "hybrid")
    ]
    n = quality["onnx"]["hybrid"]["queries"]  # type: ignore[index]
    return (
        f"**Retrieval quality**, BEIR SciFact training split ({n} judged queries, default "
        f"configuration otherwise; load average {before} → {load()}):\n\n"
        "| backend | mode | nDCG@10 | Recall@100 |\n| --- | --- | ---: | ---: |\n"
        + "\n".join(qrows)
        + "\n\ntorch's bf16 autocast gives vectors at cosine 0.99996 to its float32 ones, so "
        "the huggingface rows stand for the fp32 model."
    )


def part_sizes() -> str:
    with tempfile.TemporaryDirectory(prefix="vs-bench-venvs-") as tmp:
        default_mb, default_venv = venv_size(Path(tmp), str(ROOT), torch=False)
        breakdown = package_sizes(default_venv)
        full_mb, _ = venv_size(Path(tmp), f"{ROOT}[huggingface]", torch=True)
    return (
        "**Installed size** of a fresh virtualenv (`du -sm`, pip and setuptools "
        f"included): default `pip install --isolated .` **{default_mb:.0f} MB** (goal ≤ 400 MB); "
        f"with the `huggingface` extra (CPU torch first) **{full_mb:.0f} MB**.\n\n"
        f"{breakdown}"
    )


def part_install() -> str:
    return (
        "**Install resolution** (`tests/test_install.py`: the default install against the "
        f"package index, pip configuration off): {dry_run()}."
    )


def part_resolution() -> str:
    """What an ordinary machine resolves for the extra: pip configuration off, the
    default package index, nothing installed (a dry run; pip downloads the wheels it
    needs metadata from)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    with tempfile.TemporaryDirectory(prefix="vs-bench-resolve-") as tmp:
        report = Path(tmp) / "report.json"
        env |= {"PIP_CONFIG_FILE": os.devnull, "HOME": tmp, "PIP_NO_INPUT": "1"}
        argv = [sys.executable, "-m", "pip", "install", "--isolated", "--dry-run"]
        argv += ["--ignore-installed", "--quiet", "--report", str(report), f"{ROOT}[huggingface]"]
        done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp)
        if done.returncode != 0:
            return f"**Resolution of `.[huggingface]`** failed: {done.stderr.strip()[-300:]}"
        installs = json.loads(report.read_text())["install"]
    return describe_resolution(installs)


def describe_resolution(installs: list[dict[str, Any]]) -> str:
    versions = {str(i["metadata"]["name"]).lower(): str(i["metadata"]["version"]) for i in installs}
    cuda = sorted(n for n in versions if n.startswith(("nvidia-", "triton", "cuda-")))
    return (
        "**Resolution of `pip install '.[huggingface]'`** against the default package index "
        f"(pip configuration off, `--dry-run --report`): {len(versions)} packages, torch "
        f"{versions.get('torch', 'none')}, and {len(cuda)} CUDA packages ({', '.join(cuda)}). "
        "A plain install of the extra therefore pulls the CUDA build; install the CPU build "
        "first (`pip install torch --index-url https://download.pytorch.org/whl/cpu`, "
        "docs/Getting Started.md), after which pip keeps it."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--parts", default=",".join(PARTS), help=f"some of {', '.join(PARTS)}")
    parser.add_argument("--cold", type=int, default=10)
    args = parser.parse_args()
    parts = [p for p in args.parts.split(",") if p]
    source = require(SHARED / "vaults" / NAME)
    WORK.mkdir(parents=True, exist_ok=True)
    vault = WORK / "vault"
    if "index" in parts or not vault.is_dir():
        shutil.rmtree(vault, ignore_errors=True)
        shutil.copytree(source, vault)
    store = WORK / "parts.json"
    texts: dict[str, str] = json.loads(store.read_text()) if store.is_file() else {}
    for part in parts:
        if part == "index":
            texts[part] = part_index(source, vault)
        elif part == "batch":
            texts[part] = part_batch(vault)
        elif part == "queries":
            texts[part] = part_queries(source, vault, args.cold)
        elif part == "quality" and (SHARED / "scifact").is_dir():
            texts[part] = part_quality()
        elif part == "sizes":
            texts[part] = part_sizes()
        elif part == "install":
            texts[part] = part_install()
        elif part == "resolution":
            texts[part] = part_resolution()
        store.write_text(json.dumps(texts, indent=1))
        write_section(
            "embedding", "Embedding runtime", "\n\n".join(texts[p] for p in PARTS if p in texts)
        )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child-index":
        child_index(*sys.argv[2:5])
    elif len(sys.argv) > 1 and sys.argv[1] == "--child-quality":
        child_quality(*sys.argv[2:4])
    else:
        main()
