"""Edits of a note's text, as pure functions: the tool reads the file, applies one, and
writes the result atomically, so an edit either lands whole or not at all."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from vaultsearch.errors import QueryError

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n.*?^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S | re.M)


@dataclass(frozen=True, slots=True)
class HeadingLine:
    index: int
    """0-based line number."""
    level: int
    text: str


def in_code(lines: Iterable[str]) -> Iterator[tuple[str, bool]]:
    """Each line with whether it belongs to a fenced code block (its fences included):
    what looks like a heading or a link there is text."""
    fence = ""
    for line in lines:
        m = _FENCE.match(line)
        if m:
            if not fence:
                fence = m[1][0] * 3
            elif m[1].startswith(fence):
                fence = ""
            yield line, True
            continue
        yield line, bool(fence)


def headings(lines: list[str]) -> list[HeadingLine]:
    """ATX headings outside fenced code blocks."""
    out = []
    for i, (line, code) in enumerate(in_code(lines)):
        h = None if code else _HEADING.match(line)
        if h:
            out.append(HeadingLine(i, len(h[1]), h[2].strip()))
    return out


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") or not text else text + "\n"


def append(text: str, content: str) -> str:
    body = _with_newline(text)
    sep = "\n" if body and not body.endswith("\n\n") else ""
    return body + sep + _with_newline(content)


def prepend(text: str, content: str) -> str:
    """After the frontmatter, so the note keeps its properties."""
    m = _FRONTMATTER.match(text)
    head, rest = (text[: m.end()], text[m.end() :]) if m else ("", text)
    return (
        head + _with_newline(content) + ("\n" if rest and not rest.startswith("\n") else "") + rest
    )


def replace_section(text: str, heading: str, content: str) -> str:
    """The body under ``heading`` ("Pests", or "Tomatoes > Pests" for a nested one), up
    to the next heading of the same or a higher level, becomes ``content``."""
    lines = text.splitlines(keepends=True)
    found = headings([ln.rstrip("\r\n") for ln in lines])
    wanted = [p.strip().casefold() for p in heading.lstrip("#").split(">")]
    matches = []
    for n, h in enumerate(found):
        path, level = [h.text.casefold()], h.level
        for above in reversed(found[:n]):
            if above.level < level:
                path.insert(0, above.text.casefold())
                level = above.level
        if path[-len(wanted) :] == wanted:
            matches.append(n)
    if not matches:
        known = ", ".join(repr(h.text) for h in found[:20]) or "none"
        raise QueryError(f"The note has no heading {heading!r}; its headings: {known}.")
    if len(matches) > 1:
        raise QueryError(
            f"{len(matches)} headings match {heading!r}; "
            f"name the one meant as 'Parent > {heading}'."
        )
    n = matches[0]
    start = found[n].index + 1
    end = next((h.index for h in found[n + 1 :] if h.level <= found[n].level), len(lines))
    body = _with_newline(content)
    if end < len(lines) and body and not body.endswith("\n\n"):
        body += "\n"
    return "".join(lines[:start]) + body + "".join(lines[end:])


def find_replace(text: str, find: str, replace: str, expected: int | None = None) -> str:
    """Literal replacement; with ``expected``, nothing changes unless the text occurs
    exactly that many times (an agent's guard against editing the wrong place)."""
    if not find:
        raise QueryError("find is empty; pass the exact text to replace.")
    count = text.count(find)
    if count == 0:
        raise QueryError(f"The text {find[:60]!r} does not occur in the note; nothing changed.")
    if expected is not None and count != expected:
        raise QueryError(
            f"The text {find[:60]!r} occurs {count} times, not {expected}; nothing changed."
        )
    return text.replace(find, replace)
