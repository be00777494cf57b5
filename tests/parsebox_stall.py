"""The parse box's child with the Markdown parser made to stall on the notes a test names.

The child is another process, out of reach of a test's monkeypatch, so
``tests/test_parse_timeout.py`` points the box's ``child_command`` at this module, which
patches the parser and then serves as the real child does. ``STALL_ENV`` names a JSON
file of note path -> how: ``"sleep"`` waits without using CPU, as a parse does that a
busy machine gives no core; ``"spin"`` burns CPU, as a parse over its budget does. The
file is read on every parse, so a test ends a stall by rewriting it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time
from pathlib import Path

from vaultsearch.indexing import parsebox
from vaultsearch.models import ParsedNote
from vaultsearch.parsers.markdown import MarkdownParser

STALL_ENV = "PARSEBOX_TEST_STALL"

_parse = MarkdownParser.parse


def _stalled(self: MarkdownParser, path: str, text: str) -> ParsedNote:
    how = json.loads(Path(os.environ[STALL_ENV]).read_text()).get(path)
    if how == "sleep":
        time.sleep(3600)
    elif how == "spin":
        _spin()
    return _parse(self, path, text)


def _spin() -> None:
    """Hash in two threads until killed: ``hashlib`` lets go of the GIL on large buffers,
    so the child can use two cores, and a loaded machine must starve it below a quarter
    of each before its CPU falls under half the wall time."""
    block = b"x" * (1 << 20)

    def burn() -> None:
        while True:
            hashlib.sha256(block).digest()

    threading.Thread(target=burn, daemon=True).start()
    burn()


if __name__ == "__main__":
    MarkdownParser.parse = _stalled  # type: ignore[method-assign]
    parsebox._main(int(sys.argv[1]))
