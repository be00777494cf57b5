"""The prose inside a chunk of code: its docstrings and comments.

A plain-words question about what a function does is answered, in words, by the
function's docstring; embedded with the code around it, that sentence is a small part
of a vector that mostly encodes identifiers and syntax, so a docs page saying the same
in prose scored higher than the function it describes (``bench/mixed_code.py``).
Its docstring and comment sentences embedded alone put a code chunk on the footing of a
prose note, whose best sentence stands beside its chunk vector.

Read from the chunk's text alone, as every sentence unit is (the index derives them
again from stored text), so it knows no language: a docstring is a triple-quoted string
that opens a line, a comment a line that opens with ``#`` and a space, ``//`` or ``/*``
(continued by ``*`` lines). Trailing comments, string literals and code are left out.
"""

from __future__ import annotations

import re

_DOCSTRING = re.compile(r'^[rRuU]?("""|\'\'\')')
_LINE_COMMENT = re.compile(r"^(?:#(?:\s|$)|//[/!]?)")
_BLOCK_OPEN = re.compile(r"^/\*+!?")
_BLOCK_LINE = re.compile(r"^\*+(?!/)\s?")


def code_prose(text: str) -> str:
    """The docstrings and comments of ``text`` without their markers, one paragraph per
    comment block or docstring paragraph, paragraphs separated by blank lines."""
    out: list[str] = []
    closer = ""  # the delimiter that ends the docstring or block comment we are in
    for line in text.splitlines():
        s = line.strip()
        if closer:
            end = s.find(closer)
            body = s if end < 0 else s[:end]
            if closer == "*/":
                body = _BLOCK_LINE.sub("", body)
            out.append(body.strip())
            if end >= 0:
                out.append("")
                closer = ""
            continue
        if m := _DOCSTRING.match(s):
            rest = s[m.end() :]
            end = rest.find(m.group(1))
            out.append(rest if end < 0 else rest[:end])
            if end < 0:
                closer = m.group(1)
            else:
                out.append("")
        elif m := _BLOCK_OPEN.match(s):
            rest = s[m.end() :]
            end = rest.find("*/")
            out.append(rest if end < 0 else rest[:end])
            if end < 0:
                closer = "*/"
            else:
                out.append("")
        elif m := _LINE_COMMENT.match(s):
            out.append(s[m.end() :].lstrip("#/ "))
        else:
            out.append("")
    return re.sub(r"\n{3,}", "\n\n", "\n".join(p.strip() for p in out)).strip()
