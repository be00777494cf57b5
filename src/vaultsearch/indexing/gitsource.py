"""Git sources through the ``git`` command: clone once, then fetch and reset each run.

The clone is ours (under the index folder by default), so a hard reset to what the
remote's branch holds is safe, and git rewrites only the files that changed: the
next scan sees unchanged mtimes everywhere else and re-reads only what a commit touched.

The url and branch come from a file anyone with write access to the vault can edit,
so they are checked again here (``check_values``) and every git call puts ``--``
before its positionals. Transports other than https, ssh and file are off
(``protocol.allow=never``), and a stalled connection ends long before ``TIMEOUT``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from vaultsearch.errors import VaultsearchError
from vaultsearch.gitvalues import URL_FORMS, branch_problem, url_problem

TIMEOUT = 600
CONNECT_TIMEOUT = 30
"""Seconds for ssh to connect; https gives up after ``LOW_SPEED_TIME`` s below 1 KB/s."""
LOW_SPEED_TIME = 60
SAFE_CONFIG = (
    "protocol.allow=never",
    "protocol.https.allow=always",
    "protocol.ssh.allow=always",
    "protocol.file.allow=always",
    "http.lowSpeedLimit=1000",
    f"http.lowSpeedTime={LOW_SPEED_TIME}",
)


class GitSourceError(VaultsearchError):
    pass


def _env() -> dict[str, str]:
    """Never wait for a password prompt: an index run has nobody to answer it. A
    GIT_SSH_COMMAND or GIT_SSH of the user's own is kept as it is."""
    env = {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "",
        "GIT_PROTOCOL_FROM_USER": "0",
        "LC_ALL": "C",
    }
    if not env.get("GIT_SSH_COMMAND") and not env.get("GIT_SSH"):
        env["GIT_SSH_COMMAND"] = f"ssh -o ConnectTimeout={CONNECT_TIMEOUT} -o BatchMode=yes"
    return env


def git(args: list[str], cwd: Path | None = None) -> str:
    if shutil.which("git") is None:
        raise GitSourceError(
            "The git command is not installed, so git sources cannot be cloned.",
            fix="install git (e.g. 'apt install git'), or use a folder source",
        )
    try:
        done = subprocess.run(
            ["git", *(a for c in SAFE_CONFIG for a in ("-c", c)), *args],
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


def check_values(url: str, branch: str) -> None:
    """Refuse a url or branch that git could take for something else; the branch is
    also put to git's own ``check-ref-format``."""
    problem = url_problem(url)
    if problem is not None:
        raise GitSourceError(
            f"The git url {url!r} is refused: {problem}.", fix=f"use one of {URL_FORMS}"
        )
    problem = branch_problem(branch) if branch else None
    if problem is None and branch:
        try:
            git(["check-ref-format", "--branch", branch])
        except GitSourceError:
            problem = "git check-ref-format refuses it"
    if problem is not None:
        raise GitSourceError(
            f"The branch {branch!r} is refused: {problem}.",
            fix="give the branch's plain name, e.g. 'main'",
        )


def sync_clone(url: str, branch: str, dest: Path) -> str:
    """Bring ``dest`` to the tip of ``branch`` (the remote's default when empty) and
    return its commit. A folder there that is not our clone is replaced."""
    check_values(url, branch)
    if not (dest / ".git").is_dir():
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        args = ["clone", "--quiet", "--no-tags"]
        if branch:
            args += ["--branch", branch, "--single-branch"]
        git([*args, "--", url, str(dest)])
    else:
        git(["remote", "set-url", "--", "origin", url], cwd=dest)
        git(["fetch", "--quiet", "--no-tags", "--", "origin", branch or "HEAD"], cwd=dest)
        git(["reset", "--quiet", "--hard", "FETCH_HEAD", "--"], cwd=dest)
    return head_commit(dest) or ""


def head_commit(dest: Path) -> str | None:
    try:
        return git(["rev-parse", "--verify", "HEAD^{commit}"], cwd=dest).strip()
    except GitSourceError:
        return None


def tracked_files(dest: Path) -> list[str]:
    """The files git tracks (so .gitignore holds), as POSIX paths from the clone's root."""
    out = git(["-c", "core.quotepath=off", "ls-files", "-z", "--cached"], cwd=dest)
    return sorted(p for p in out.split("\0") if p)
