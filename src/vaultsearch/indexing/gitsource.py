"""Git sources through the ``git`` command: clone once, then fetch and reset each run.

The clone is ours (under the index folder by default), so a hard reset to what the
remote's branch holds is safe, and git rewrites only the files that changed: the
next scan sees unchanged mtimes everywhere else and re-reads only what a commit touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from vaultsearch.errors import VaultsearchError

TIMEOUT = 600


class GitSourceError(VaultsearchError):
    pass


def _env() -> dict[str, str]:
    """Never wait for a password prompt: an index run has nobody to answer it."""
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "LC_ALL": "C"}


def git(args: list[str], cwd: Path | None = None) -> str:
    if shutil.which("git") is None:
        raise GitSourceError(
            "The git command is not installed, so git sources cannot be cloned.",
            fix="install git (e.g. 'apt install git'), or use a folder source",
        )
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=_env(),
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise GitSourceError(f"git {args[0]} took over {TIMEOUT} s and was stopped.") from None
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        fatal = [ln for ln in lines if ln.startswith(("fatal:", "error:"))]
        reason = (fatal or lines or [f"exit status {done.returncode}"])[-1]
        raise GitSourceError(
            f"git {args[0]} failed: {reason.removeprefix('fatal: ').rstrip('.')}.",
            fix="check the source's url and branch with 'vaultsearch sources list'",
        )
    return done.stdout.decode("utf-8", "surrogateescape")


def sync_clone(url: str, branch: str, dest: Path) -> str:
    """Bring ``dest`` to the tip of ``branch`` (the remote's default when empty) and
    return its commit. A folder there that is not our clone is replaced."""
    if not (dest / ".git").is_dir():
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        args = ["clone", "--quiet", "--no-tags"]
        if branch:
            args += ["--branch", branch, "--single-branch"]
        git([*args, "--", url, str(dest)])
    else:
        git(["remote", "set-url", "origin", url], cwd=dest)
        git(["fetch", "--quiet", "--no-tags", "origin", branch or "HEAD"], cwd=dest)
        git(["reset", "--quiet", "--hard", "FETCH_HEAD"], cwd=dest)
    return head_commit(dest) or ""


def head_commit(dest: Path) -> str | None:
    try:
        return git(["rev-parse", "HEAD"], cwd=dest).strip()
    except GitSourceError:
        return None


def tracked_files(dest: Path) -> list[str]:
    """The files git tracks (so .gitignore holds), as POSIX paths from the clone's root."""
    out = git(["-c", "core.quotepath=off", "ls-files", "-z", "--cached"], cwd=dest)
    return sorted(p for p in out.split("\0") if p)
