"""Plain-text notes: no markup is interpreted, so the whole file is one searchable section."""

from __future__ import annotations

from pathlib import PurePosixPath

from vaultsearch.models import ParsedNote, Section


class PlainTextParser:
    """A ``#`` in a text file is just a character: no tags, links or headings are read."""

    name = "text"

    def parse(self, path: str, text: str) -> ParsedNote:
        start = 1 if text.startswith("\ufeff") else 0
        sections: tuple[Section, ...] = ()
        if text[start:].strip():
            end_line = text.count("\n", 0, len(text) - 1) + 1
            sections = (Section((), 1, end_line, start, len(text)),)
        return ParsedNote(
            path=path, text=text, title=PurePosixPath(path).stem, sections=sections, kind="text"
        )
