"""The import-layering contract (scripts/layers.py) holds on this tree and catches an
import that breaks it: planted in a copy of the sources, never in the real ones."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import HANG_GUARD

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "layers.py"


def run_layers(src: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(src)],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        check=False,
    )


@pytest.fixture
def src_copy(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "src" / "vaultsearch", tmp_path / "vaultsearch")
    return tmp_path


def plant(src: Path, module: str, line: str) -> None:
    path = src / "vaultsearch" / module
    path.write_text(path.read_text(encoding="utf-8") + "\n" + line + "\n", encoding="utf-8")


def test_the_tree_keeps_its_layers() -> None:
    done = run_layers(ROOT / "src")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "keeps its import order" in done.stdout


def test_an_upward_import_fails(src_copy: Path) -> None:
    plant(src_copy, "store/atomic.py", "from vaultsearch.app.vault import Vault  # noqa")
    done = run_layers(src_copy)
    assert done.returncode == 1
    assert "vaultsearch.store.atomic (store) imports vaultsearch.app.vault (application), up" in (
        done.stdout
    )
    assert "1 import(s) break" in done.stdout


def test_a_lazy_upward_import_inside_type_checking_fails(src_copy: Path) -> None:
    plant(
        src_copy,
        "config.py",
        "if TYPE_CHECKING:\n    from vaultsearch.server.mcp import run as app  # noqa",
    )
    done = run_layers(src_copy)
    assert done.returncode == 1
    assert (
        "vaultsearch.config (base) imports vaultsearch.server.mcp.run (clients), up" in done.stdout
    )


def test_a_relative_upward_import_fails(src_copy: Path) -> None:
    plant(src_copy, "parsers/text.py", "def f():\n    from ..search import query  # noqa")
    done = run_layers(src_copy)
    assert done.returncode == 1
    assert "vaultsearch.parsers.text (parsers) imports vaultsearch.search.query (search)" in (
        done.stdout
    )


def test_tier_mates_may_not_import_each_other(src_copy: Path) -> None:
    plant(src_copy, "search/query.py", "from vaultsearch.indexing import scan  # noqa")
    done = run_layers(src_copy)
    assert done.returncode == 1
    assert "imports vaultsearch.indexing.scan (indexing), sideways" in done.stdout


def test_a_module_without_a_layer_fails(src_copy: Path) -> None:
    (src_copy / "vaultsearch" / "newthing.py").write_text("X = 1\n", encoding="utf-8")
    done = run_layers(src_copy)
    assert done.returncode == 1
    assert "module vaultsearch.newthing has no layer" in done.stdout


def test_a_front_door_reaching_the_writer_fails(src_copy: Path) -> None:
    plant(src_copy, "server/tools/writes.py", "def f(vault):\n    return vault.manager().scan()")
    done = run_layers(src_copy)
    assert done.returncode == 1
    assert "vaultsearch.server.tools.writes (clients) calls .manager()" in done.stdout
