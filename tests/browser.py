"""Headless Chromium (the distribution's ``chromium`` and ``chromium-driver``) driving the
Index Console page of a real ``vaultsearch serve``; shared by the browser test and the
screenshot bench."""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.conftest import HANG_GUARD

INSTALL = (
    "install Chromium and its driver (Debian/Ubuntu: apt-get install chromium chromium-driver) "
    "and selenium (pip install selenium)"
)


def missing() -> str | None:
    """Why the browser cannot run here, or None when it can."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return f"selenium is not installed: {INSTALL}"
    if chromium_binary() is None or shutil.which("chromedriver") is None:
        return f"chromium or chromedriver is not on PATH: {INSTALL}"
    return None


def chromium_binary() -> str | None:
    return next(
        (p for n in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(n))),
        None,
    )


@contextlib.contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium_binary() or ""
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={width},{height}",
        "--no-first-run",
        "--disable-extensions",
    ):
        options.add_argument(arg)  # fmt: skip
    driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))
    try:
        yield driver
    finally:
        driver.quit()


@contextlib.contextmanager
def served(root: Path, index_dir: Path, *extra: str) -> Iterator[str]:
    """``vaultsearch serve`` in its own process; yields the URL it printed."""
    argv = [sys.executable, "-m", "vaultsearch.cli", "serve", str(root)]
    argv += ["--index-dir", str(index_dir), "--no-open", *extra]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.startswith("Index Console for "):
            proc.kill()
            raise AssertionError(f"serve did not start: {line} {proc.communicate()[1]}")
        yield line.rsplit(" ", 1)[1]
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=HANG_GUARD)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
