"""Code in languages without a grammar here: blocks found by blank lines and indentation.

Most languages start a new top-level definition on an unindented line after a blank
line, and keep blank lines inside a body indented; so these blocks follow functions
and classes closely enough without knowing the language. Small neighbouring blocks
are packed together, so a run of one-line declarations is one chunk, not twenty.
"""

from __future__ import annotations

from vaultsearch.models import ParsedNote, Section
from vaultsearch.parsers.code_languages import extension, module_path

PACK_CHARS = 1000
"""Neighbouring blocks are joined while together they stay under this many characters."""


class PlainCodeParser:
    name = "code-plain"
    named_by_path = True
    """Section names start with the file's module path: a moved file is parsed again."""

    def parse(self, path: str, text: str) -> ParsedNote:
        language = extension(path) or "text"
        sections = tuple(
            Section((), first, last, lo, hi, node_type="block")
            for lo, hi, first, last in _packed(_blocks(text))
        )
        return ParsedNote(
            path=path,
            text=text,
            title=module_path(path, language),
            sections=sections,
            kind="code",
            language=language,
        )


Block = tuple[int, int, int, int]
"""(start char, end char, first line, last line), trimmed of blank lines."""


def _blocks(text: str) -> list[Block]:
    out: list[Block] = []
    start = -1
    first = last = 0
    end = 0
    after_blank = True
    pos = 1 if text.startswith("\ufeff") else 0
    line_no = 0
    while pos <= len(text):
        nl = text.find("\n", pos)
        line_end = len(text) if nl < 0 else nl
        line = text[pos:line_end]
        line_no += 1
        if not line.strip():
            after_blank = True
        else:
            if start >= 0 and after_blank and not line[0].isspace():
                out.append((start, end, first, last))
                start = -1
            if start < 0:
                start, first = pos, line_no
            end, last = len(line.rstrip()) + pos, line_no
            after_blank = False
        if nl < 0:
            break
        pos = nl + 1
    if start >= 0:
        out.append((start, end, first, last))
    return out


def _packed(blocks: list[Block]) -> list[Block]:
    out: list[Block] = []
    for block in blocks:
        if out and block[1] - out[-1][0] <= PACK_CHARS:
            out[-1] = (out[-1][0], block[1], out[-1][2], block[3])
        else:
            out.append(block)
    return out
