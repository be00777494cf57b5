"""The Index Console's screenshot for the docs: `vaultsearch serve` on docs/ (the demo
vault) into a fresh index, Update clicked in headless Chromium until the bar is full,
then a search with its explain trace open; saved as docs/images/index-manager.png.

It also records how long the page took to build the index through the REST API.

Run: `make bench-screenshot` (or `.venv/bin/python bench/screenshot.py`); needs
chromium, chromium-driver and selenium (see docs/Index Console.md).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from selenium.webdriver.support.ui import WebDriverWait
from tests.browser import chromium, missing, served

from _report import ROOT, write_section
from vaultsearch.store.embedcache import CACHE_ENV

DOCS = ROOT / "docs"
OUT = DOCS / "images" / "index-manager.png"
QUERY = "how does vaultsearch decide that a rebuild is needed"
WAIT = 600.0


def main() -> int:
    why = missing()
    if why:
        print(f"skipped: {why}")
        return 0
    with tempfile.TemporaryDirectory(prefix="vaultsearch-screenshot-") as tmp:
        work = Path(tmp)
        os.environ.setdefault("VAULTSEARCH_CONSOLES_DIR", str(work / "consoles"))
        os.environ[CACHE_ENV] = str(work / "embedding-cache")  # a true first build
        with served(DOCS, work / "index") as url, chromium(1400, 1050) as driver:
            wait = WebDriverWait(driver, WAIT, poll_frequency=0.1)
            driver.get(url)
            wait.until(lambda d: d.find_element("id", "state").text == "No Index")
            load = os.getloadavg()
            started = time.perf_counter()
            driver.find_element("id", "update").click()
            wait.until(lambda d: d.find_element("id", "bar").get_attribute("data-state") == "done")
            seconds = time.perf_counter() - started
            wait.until(lambda d: d.find_element("id", "state").text == "Up to Date")
            files = driver.find_element("id", "files-indexed").text
            driver.find_element("id", "query").send_keys(QUERY)
            driver.find_element("css selector", "#search-form button").click()
            hits = wait.until(lambda d: d.find_elements("css selector", "#hits li.hit"))
            hits[0].find_element("css selector", "details.explain summary").click()
            time.sleep(0.5)  # the bar's width transition and the explain box settle
            OUT.parent.mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(OUT))
    print(f"wrote {OUT.relative_to(ROOT)}")
    write_section(
        "screenshot",
        "Index Console: a first build from the page",
        f"""
`vaultsearch serve docs`, then **Update** clicked in headless Chromium on an empty index
of docs/ ({files} files): {seconds:.1f} s from the click to the full bar (the model
loaded within it; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the start).
The screenshot in [[Index Console]] is this run's page after the search
"{QUERY}".
""",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
