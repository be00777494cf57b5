"""A parse must not fail because the process holds many files open: ``select`` refused
descriptors of 1024 and above, and the store battery's long in-process run recorded
every note of its vault as a parser error."""

from __future__ import annotations

import os
import resource

import pytest

from vaultsearch.config import IndexConfig
from vaultsearch.indexing.parsebox import ParseBox
from vaultsearch.parsers import ParserRegistry


def test_a_file_parses_with_more_than_1024_descriptors_open() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"the hard limit on open files is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    held = []
    try:
        while len(held) < 1100 and (not held or held[-1] < 1100):
            held.append(os.open(os.devnull, os.O_RDONLY))
        text = "# Title\n\nSome words about rivers.\n"
        parser = ParserRegistry().parser_for("note.md")
        assert parser is not None
        with ParseBox(IndexConfig()) as box:
            note = box.parse(parser, "note.md", text, text.encode())
            assert box.started == 1  # parsed in the child, whose pipes are past 1024
        assert "rivers" in note.text
        assert note.title == "Title"
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
