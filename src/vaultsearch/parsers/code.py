"""Source code by its syntax tree: one section per class, function or method.

A search for what some code does should land on the one function that does it, named
the way a programmer would look it up (``Catalog.upsert_note``), not on a window of
lines cut across two functions. The sections partition the file: a class's own lines
(header, docstring, fields) form its section, each method its own, and what lies
between top-level definitions (imports, constants) a module section. A definition's
decorators, ``export`` keyword and the comments right above it belong to it.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any

from tree_sitter import Parser

from vaultsearch.models import ParsedNote, Section
from vaultsearch.parsers.code_languages import (
    BY_EXTENSION,
    LanguageSpec,
    definition_name,
    extension,
    module_path,
)
from vaultsearch.parsers.codeplain import PlainCodeParser

_WRAPPERS = frozenset(
    {"decorated_definition", "export_statement", "lexical_declaration", "variable_declaration"}
    | {"type_declaration", "expression_statement"}
)
_NOT_COUNTED = frozenset({"decorator", "comment", "line_comment", "block_comment"})


@dataclass(slots=True)
class _Def:
    start: int
    end: int
    parts: tuple[str, ...]
    node_type: str
    members: list[_Def] = field(default_factory=list)


class CodeParser:
    """Languages without a grammar here go to the plain code parser instead."""

    name = "code"
    named_by_path = True
    """Section names start with the file's module path: a moved file is parsed again."""

    def __init__(self) -> None:
        self._parsers: dict[str, Parser] = {}
        self._plain = PlainCodeParser()

    def parse(self, path: str, text: str) -> ParsedNote:
        spec = BY_EXTENSION.get(extension(path))
        if spec is None:
            return self._plain.parse(path, text)
        try:
            parser = self._parser(spec)
        except ImportError:
            note = self._plain.parse(path, text)
            warning = f"grammar package {spec.module} is not installed; read by blank lines"
            return replace(note, warnings=(*note.warnings, warning))
        data = text.encode("utf-8", "surrogatepass")
        root = parser.parse(data).root_node
        prefix = _java_package(root) if spec.name == "java" else module_path(path, spec.name)
        title = f"{prefix}.{PurePosixPath(path).stem}" if spec.name == "java" else prefix
        defs = _collect(spec, root, ())
        spans: list[tuple[int, int, tuple[str, ...], str]] = []
        _partition(0, len(data), (), "module", defs, spans)
        offsets = _CharOffsets(text, data)
        sections = []
        for lo_b, hi_b, parts, node_type in spans:
            lo, hi = offsets.char(lo_b), offsets.char(hi_b)
            lo, hi = _trim(text, lo, hi)
            if not any(ch.isalnum() for ch in text[lo:hi]):
                continue  # a closing brace left between members is not worth a chunk
            qualified = ".".join(p for p in (prefix, *parts) if p)
            sections.append(
                Section(
                    parts, offsets.line(lo), offsets.line(hi - 1), lo, hi,
                    qualified_name=qualified, node_type=node_type,
                )
            )  # fmt: skip
        return ParsedNote(
            path=path,
            text=text,
            title=title or PurePosixPath(path).stem,
            sections=tuple(sections),
            kind="code",
            language=spec.name,
        )

    def _parser(self, spec: LanguageSpec) -> Parser:
        key = f"{spec.module}.{spec.function}"
        if key not in self._parsers:
            self._parsers[key] = Parser(spec.load())
        return self._parsers[key]


def _java_package(root: Any) -> str:
    for child in root.named_children:
        if child.type == "package_declaration":
            for part in child.named_children:
                if part.type in ("scoped_identifier", "identifier") and part.text is not None:
                    return str(part.text.decode("utf-8", "replace"))
    return ""


def _collect(spec: LanguageSpec, node: Any, scope: tuple[str, ...]) -> list[_Def]:
    """Definitions directly in ``node`` (through transparent nodes), members inside."""
    out: list[_Def] = []
    for child in node.named_children:
        kind = child.type
        if kind in spec.containers or kind in spec.leaves:
            name = definition_name(spec, child)
            if name is not None:
                parts = scope + name
                members = _collect(spec, child, parts) if kind in spec.containers else []
                out.append(_Def(*_extent(child), parts, kind, members))
                continue
        if kind in spec.transparent:
            out += _collect(spec, child, scope)
    return out


def _extent(node: Any) -> tuple[int, int]:
    """The definition with its wrappers (``export``, decorators, a one-name ``const``)
    and the comments right above it, which are its documentation in most languages."""
    while node.parent is not None and node.parent.type in _WRAPPERS and _alone(node.parent):
        node = node.parent
    start, end = node.start_byte, node.end_byte
    top_row = node.start_point.row
    prev = node.prev_named_sibling
    while prev is not None and "comment" in prev.type and prev.end_point.row >= top_row - 1:
        before = prev.prev_named_sibling
        if before is not None and before.end_point.row == prev.start_point.row:
            break  # a comment trailing the previous statement is not this one's
        start, top_row = prev.start_byte, prev.start_point.row
        prev = before
    return start, end


def _alone(wrapper: Any) -> bool:
    return sum(1 for c in wrapper.named_children if c.type not in _NOT_COUNTED) == 1


def _partition(
    lo: int,
    hi: int,
    parts: tuple[str, ...],
    node_type: str,
    members: list[_Def],
    out: list[tuple[int, int, tuple[str, ...], str]],
) -> None:
    """Byte spans covering ``lo..hi``: members in their own spans, the rest in this one."""
    pos = lo
    for m in sorted(members, key=lambda d: d.start):
        start = max(m.start, pos)
        if m.end <= start:
            continue
        if start > pos:
            out.append((pos, start, parts, node_type))
        _partition(start, m.end, m.parts, m.node_type, m.members, out)
        pos = m.end
    if hi > pos:
        out.append((pos, hi, parts, node_type))


def _trim(text: str, lo: int, hi: int) -> tuple[int, int]:
    while lo < hi and text[lo].isspace():
        lo += 1
    while hi > lo and text[hi - 1].isspace():
        hi -= 1
    return lo, hi


class _CharOffsets:
    """Tree-sitter counts UTF-8 bytes; sections count characters and 1-based lines."""

    def __init__(self, text: str, data: bytes) -> None:
        self.data = data
        self.ascii = len(data) == len(text)
        self.line_bytes = [0]
        self.line_chars = [0]
        self._last = (-1, 0, 0)
        pos = text.find("\n")
        while pos >= 0:
            self.line_chars.append(pos + 1)
            pos = text.find("\n", pos + 1)
        if not self.ascii:
            pos = data.find(b"\n")
            while pos >= 0:
                self.line_bytes.append(pos + 1)
                pos = data.find(b"\n", pos + 1)

    def char(self, b: int) -> int:
        """Asked in increasing order, so a long line (minified code) is decoded once."""
        if self.ascii:
            return b
        row = bisect_right(self.line_bytes, b) - 1
        from_b, from_c = self.line_bytes[row], self.line_chars[row]
        if self._last[0] == row and self._last[1] <= b:
            from_b, from_c = self._last[1], self._last[2]
        c = from_c + len(self.data[from_b:b].decode("utf-8", "surrogatepass"))
        self._last = (row, b, c)
        return c

    def line(self, c: int) -> int:
        return bisect_right(self.line_chars, max(c, 0))
