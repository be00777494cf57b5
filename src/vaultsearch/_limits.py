"""What the budgeted child processes share: how they are started and how their
memory is capped (the parse box of indexing, the report renderer)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

MB = 1 << 20


def child_command(module: str, *args: str) -> tuple[list[str], dict[str, str]]:
    """(argv, environment) that run ``python -m module`` with this process's vaultsearch
    and import path, however it was found (an install, PYTHONPATH, a path set in code)."""
    package_root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([package_root, *sys.path])}
    return [sys.executable, "-m", module, *args], env


def limit_address_space(budget_mb: int) -> bool:
    """Cap this process at its present size plus ``budget_mb``: the budget is what the
    work may add to a child as it stands after its imports. False where there is no
    ``RLIMIT_AS`` or no /proc (Windows, macOS): the caller's deadline still holds."""
    try:
        import resource

        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[0])
    except (ImportError, OSError, ValueError):
        return False
    base = pages * os.sysconf("SC_PAGE_SIZE")
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = base + budget_mb * MB
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    except (OSError, ValueError):
        return False
    return True
