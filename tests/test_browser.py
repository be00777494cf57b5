"""The Index Console page in headless Chromium against a real ``vaultsearch serve``:
Update to 100%, Rebuild then Cancel, a search with highlighted, escaped snippets.

Skipped with the command that fixes it when Chromium, its driver or selenium is
missing (``make test`` installs them where it can).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from tests.browser import chromium, missing, served
from tests.conftest import write_files

pytestmark = pytest.mark.skipif(missing() is not None, reason=str(missing()))

NOTES = 100
LATER = 600
"""Notes added before the Rebuild, so that it has enough to embed to be still going when
Cancel is clicked, even on a quick machine (unchanged notes come from the cache)."""
WAIT = 300.0
"""Seconds before a step counts as failed (a first build on a loaded 2-core machine)."""
WORDS = [
    *("river", "mountain", "archive", "lantern", "harbor", "meadow", "circuit", "glacier"),
    *("orchard", "compass", "ledger", "beacon", "canyon", "prairie", "quartz", "saddle"),
    *("timber", "violet", "willow", "zephyr", "anchor", "bramble", "cobalt", "delta"),
]
HOSTILE = "<img src=x onerror=\"document.title='pwned'\">"


def generated_notes(start: int, count: int) -> dict[str, str | bytes]:
    rng = random.Random(start)
    files: dict[str, str | bytes] = {}
    for i in range(start, start + count):
        paragraphs = [" ".join(rng.choice(WORDS) for _ in range(70)) + "." for _ in range(3)]
        body = "\n\n## Part\n\n".join(paragraphs)
        files[f"topics/{i // 50:02d}/Note {i:03d}.md"] = f"# Note {i}\n\n{body}\n"
    return files


def generated_vault(root: Path) -> Path:
    files = generated_notes(0, NOTES)
    files["garden/Tomatoes.md"] = (
        "# Tomatoes\n\nTomatoes need full sun.\n\n## Pests\n\n"
        f"Hornworms eat tomato leaves; pick them off by hand. {HOSTILE}\n"
    )
    return write_files(root, files)


def text(driver: Any, element_id: str) -> str:
    return str(driver.find_element("id", element_id).text)


def wait_for(driver: Any, condition: Any, what: str) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT, poll_frequency=0.1).until(condition, message=what)


def bar_state(driver: Any) -> str:
    return str(driver.find_element("id", "bar").get_attribute("data-state") or "")


def test_update_rebuild_cancel_and_search_in_chromium(tmp_path: Path) -> None:
    root = generated_vault(tmp_path / "vault")
    with served(root, tmp_path / "index") as url, chromium() as driver:
        driver.get(url)
        wait_for(driver, lambda d: text(d, "state") == "No Index", "the state shows No Index")
        assert text(driver, "files-total") == str(NOTES + 1)
        title = driver.title

        driver.find_element("id", "update").click()
        wait_for(driver, lambda d: bar_state(d) == "done", "the update finishes")
        bar = driver.find_element("id", "bar")
        assert bar.get_attribute("style").replace(" ", "") == "width:100%;"
        assert (
            driver.find_element("css selector", ".progress").get_attribute("aria-valuenow") == "100"
        )
        assert f"files {NOTES + 1}/{NOTES + 1}" in text(driver, "progress-text")
        wait_for(driver, lambda d: text(d, "state") == "Up to Date", "the state shows Up to Date")
        assert text(driver, "files-indexed") == str(NOTES + 1)

        write_files(root, generated_notes(NOTES, LATER))
        driver.find_element("id", "rebuild").click()
        # the bar still shows the update until the rebuild's first progress arrives
        wait_for(driver, lambda d: text(d, "progress-text").startswith("rebuild "), "a rebuild")
        cancel = driver.find_element("id", "cancel")
        if cancel.is_enabled():
            cancel.click()
        wait_for(driver, lambda d: bar_state(d) in ("cancelled", "done"), "the rebuild ends")
        ended = bar_state(driver)
        print(f"the rebuild ended {ended}")
        # Cancelled, a rebuild keeps the index it started from, so the notes added since wait
        # for the next run; on a machine fast enough to finish first, it is simply done.
        expected = {"cancelled": "Needs Update", "done": "Up to Date"}[ended]
        wait_for(driver, lambda d: text(d, "state") == expected, f"{expected} after {ended}")
        event = {"cancelled": "index_cancelled", "done": "index_finished"}[ended]
        wait_for(
            driver,
            lambda d: any(
                event in li.text for li in d.find_elements("css selector", "#activity li")
            ),
            f"the activity log shows {event}",
        )
        assert not driver.find_element("id", "update").get_attribute("disabled")

        driver.find_element("id", "query").send_keys("hornworms eat tomato leaves")
        driver.find_element("css selector", "#search-form button").click()
        hits = wait_for(
            driver, lambda d: d.find_elements("css selector", "#hits li.hit"), "search hits"
        )
        first = hits[0]
        assert "garden/Tomatoes.md" in first.find_element("css selector", ".path").text
        marks = [m.text.lower() for m in first.find_elements("css selector", ".snippet mark")]
        assert "hornworms" in marks
        snippet = first.find_element("css selector", ".snippet")
        assert HOSTILE in snippet.text  # shown as text, not run as markup
        assert snippet.find_elements("css selector", "img") == []
        assert driver.title == title != "pwned"
        assert first.find_elements("css selector", "details.explain pre")


def test_beyond_loopback_the_page_works_with_the_token_in_its_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bound to every address (only 127.0.0.1 is used): the page loads without the token
    but its data needs it; opened once as URL#token=..., it sends it and polls."""
    monkeypatch.setenv("VAULTSEARCH_MCP_TOKEN", "page-s3cret")
    root = write_files(tmp_path / "vault", {"A.md": "# A\n\nalpha\n"})
    with served(root, tmp_path / "index", "--host", "0.0.0.0") as url, chromium() as driver:
        driver.get(url)
        wait_for(driver, lambda d: "#token=" in text(d, "message"), "how to give the token")
        assert text(driver, "state") == "…"  # nothing read without the token
        driver.get(url + "#token=page-s3cret")
        driver.refresh()  # a fragment change alone does not reload the page
        wait_for(driver, lambda d: text(d, "state") == "No Index", "the state with the token")
        assert text(driver, "files-total") == "1"
        assert text(driver, "connection") == "polling"
        assert "token" not in driver.current_url  # taken out of the address bar


def test_the_page_says_which_failed_files_the_next_run_reads_again(
    tmp_path: Path, embedder: object
) -> None:
    """A failure of the file's own and one of ours (``fault.py``) side by side: the page
    counts and marks only ours as read again by the next run."""
    from tests.conftest import live_catalog
    from vaultsearch.app.vault import Vault
    from vaultsearch.fault import OURS, FailureRow

    notes: dict[str, str | bytes] = {
        "a.md": "# Alpha\n\nAlder trees by the alpine lake.\n",
        "b.md": "# Beta\n\nBirches on the river bank.\n",
        "junk.md": b"\x00\x01\x02" * 400,
    }
    root = write_files(tmp_path / "vault", notes)
    index_dir = tmp_path / "index"
    with Vault.open(root, index_dir=index_dir) as vault:
        vault.index()
    catalog = live_catalog(index_dir, readonly=False)
    try:  # a.md as a run that ran out of descriptors recorded it
        st = (root / "a.md").stat()
        with catalog.transaction():
            note = catalog.note_by_path("a.md")
            assert note is not None
            catalog.delete_note(note.id)
            reason = (
                "the parser process could not be reached (OSError: [Errno 24] Too many open files)."
            )
            catalog.set_failure("a.md", FailureRow(reason, st.st_mtime_ns, st.st_size, OURS))
    finally:
        catalog.close()
    with served(root, index_dir) as url, chromium() as driver:
        driver.get(url)
        wait_for(driver, lambda d: text(d, "files-failed").startswith("2"), "two failed files")
        assert text(driver, "files-failed") == (
            "2 (1 not the files' fault: read again by the next index run)"
        )
        items = {
            li.text.split(" — ")[0]: li.text
            for li in driver.find_element("id", "failed").find_elements("tag name", "li")
        }
        assert set(items) == {"a.md", "junk.md"}
        assert items["a.md"].endswith(
            "(not the file's fault: tried once, read again by the next index run)"
        )
        assert "read again" not in items["junk.md"]
