"""Shared fixtures: small vaults written per test, one real model per session."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from vaultsearch import Vault
from vaultsearch.config import EmbeddingConfig, section_types
from vaultsearch.embedding import Embedder
from vaultsearch.store.catalog import Catalog
from vaultsearch.store.embedcache import CACHE_ENV, EmbeddingCache, default_cache_dir
from vaultsearch.store.layout import IndexLayout

# Never the real user's embedding cache, not even in module- or session-scoped fixtures
# (which run before the per-test setting below); subprocesses inherit it. Removed when
# the process that made it ends: each pytest process (xdist's workers too) makes its own,
# and a full run left one behind in the temp folder per process.
_TEST_CACHE = tempfile.mkdtemp(prefix="vaultsearch-test-cache-")
os.environ[CACHE_ENV] = _TEST_CACHE
atexit.register(shutil.rmtree, _TEST_CACHE, ignore_errors=True)

HANG_GUARD = 300.0
"""A wait that only guards against a hang: far above what a loaded machine needs."""

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

WriteVault = Callable[[dict[str, str | bytes]], Path]


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real bundled model, loaded once for the whole session (about 6 s)."""
    e = Embedder.shared(EmbeddingConfig())
    e.embed_query("warm up")
    return e


def write_files(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content).lstrip("\n"), encoding="utf-8")
    return root


@pytest.fixture
def write_vault(tmp_path: Path) -> WriteVault:
    root = tmp_path / "vault"
    root.mkdir()
    return lambda files: write_files(root, files)


@pytest.fixture(autouse=True)
def _no_config_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("VAULTSEARCH_CONFIG", raising=False)
    sections = [f"VAULTSEARCH_{name.upper()}_" for name in section_types()]
    for name in list(os.environ):  # a developer's own settings must not reach a test
        if name.upper().startswith(tuple(sections)):
            monkeypatch.delenv(name)
    # never the real user's cache; subprocesses inherit it
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "embedding-cache"))


def bump_mtime(path: Path, seconds: int = 5) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + seconds * 1_000_000_000))


def embeddings(index_dir: Path | None = None) -> int:
    """Vectors in this test's per-user embedding cache, where every computed embedding
    goes: what "nothing was re-embedded" is checked against."""
    cache = EmbeddingCache(default_cache_dir(), 1 << 40)
    try:
        return cache.count()
    finally:
        cache.close()


def live_catalog(index_dir: Path, readonly: bool = True) -> Catalog:
    return Catalog(IndexLayout(index_dir).live.catalog, readonly=readonly)


def run_check(root: Path, index_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``vaultsearch check`` in its own process, as a user or CI runs it."""
    argv = [
        sys.executable,
        "-m",
        "vaultsearch.cli",
        "check",
        str(root),
        "--index-dir",
        str(index_dir),
    ]
    return subprocess.run([*argv, *extra], capture_output=True, text=True, timeout=HANG_GUARD)


def indexed_vault(tmp_path: Path, files: dict[str, str | bytes]) -> tuple[Path, Path]:
    """``files`` written as a vault under ``tmp_path`` and indexed: (vault, index folder)."""
    root = write_files(tmp_path / "vault", files)
    index_dir = tmp_path / "index"
    with Vault.open(root, index_dir=index_dir) as vault:
        vault.index()
    return root, index_dir


def kill_index_once_cloned(root: Path, index_dir: Path, *extra: str) -> None:
    """``vaultsearch index`` in its own process, SIGKILLed as soon as its new generation
    folder exists; the test is skipped when the run finished before the kill landed (a
    very fast machine)."""
    layout = IndexLayout(index_dir)
    argv = [sys.executable, "-m", "vaultsearch.cli", "index", str(root), "--index-dir"]
    proc = subprocess.Popen(
        [*argv, str(index_dir), "--quiet", *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    while len(layout.all_generations()) < 2 and proc.poll() is None:
        time.sleep(0.005)  # polling for the folder, not a bound on anything
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if proc.returncode == 0:
        pytest.skip("the run finished before the kill landed (a very fast machine)")


def files_a_run_leaves(index_dir: Path) -> set[str]:
    """Generations, catalogs and temp files on disk: what a failed run could leave behind."""
    layout = IndexLayout(index_dir)
    return (
        {g.name for g in layout.all_generations()}
        | {c.name for c in layout.catalog_files()}
        | {str(p.relative_to(index_dir)) for p in index_dir.rglob(".*.tmp")}
    )
