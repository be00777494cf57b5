"""Markdown / Obsidian note parser.

Block structure comes from tree-sitter-markdown so that headings, code blocks and tables
are recognised the way a CommonMark renderer sees them. Obsidian syntax the grammars do
not know (wikilinks, tags) is matched with regexes on inline text only, after the inline
grammar has located code spans, autolinks, HTML and link destinations and they have been
blanked out, so that nothing inside them can turn into a link or a tag.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote

import tree_sitter_markdown as tsm
import yaml
from frontmatter.default_handlers import YAMLHandler
from tree_sitter import Language, Node, Parser

from vaultsearch.models import Heading, Link, ParsedNote, Section

_FRONTMATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?", re.S | re.M)
_TOKEN = re.compile(
    r"(?P<url>\b[a-zA-Z][\w+.-]*://\S*|\bwww\.\S+)"
    r"|(?P<wiki>(?P<bang>!?)\[\[(?P<inner>[^\[\]\n]+?)\]\])"
    r"|(?<![^\s(\[{,;:'\">*_~])#(?P<tag>[\w-][\w/-]*)"
)
_SCHEME = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)")
_ATX_CLOSING = re.compile(rb"(?:^|[ \t]+)#+[ \t]*$")
_NEEDS_INLINE_PARSE = re.compile(rb"[`<\\$]|\]\(")
_NOT_NEWLINE = re.compile(rb"[^\n]")
_TAG_SPLIT = re.compile(r"[,\s]+")
_DATE_KEYS = ("updated", "modified", "date", "created")
_DATE_FORMATS = ("%Y/%m/%d", "%Y/%m/%d %H:%M", "%Y/%m/%d %H:%M:%S", "%d.%m.%Y")
_SKIP_BLOCKS = frozenset(
    {"fenced_code_block", "indented_code_block", "html_block", "minus_metadata"}
    | {"plus_metadata", "link_reference_definition"}
)
_MASKED = frozenset(
    {"code_span", "uri_autolink", "email_autolink", "html_tag", "latex_block", "backslash_escape"}
)
_DROPPED_IN_TITLE = frozenset(
    {"emphasis_delimiter", "code_span_delimiter", "latex_span_delimiter", "html_tag"}
)
_SYNTAX_ESCAPES = frozenset({b"#", b"[", b"]", b"!"})
_MAX_DEPTH = 64
MAX_FRONTMATTER_CHARS = 65_536
"""A bigger block is not metadata someone typed; it is skipped with a warning."""
MAX_FRONTMATTER_VALUES = 10_000
"""YAML aliases let 300 bytes stand for a billion values (an alias bomb): count first."""


@dataclass(slots=True)
class _Found:
    headings: list[tuple[int, str, int]] = field(default_factory=list)
    """(level, text, 0-based row) of top-level headings in document order."""
    links: list[Link] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)


class MarkdownParser:
    """Parses one note at a time; tree-sitter parsers are reused, so not thread-safe."""

    name = "markdown"

    def __init__(self) -> None:
        self._block = Parser(Language(tsm.language()))
        self._inline = Parser(Language(tsm.inline_language()))

    def parse(self, path: str, text: str) -> ParsedNote:
        warnings: list[str] = []
        meta, body_start = _read_frontmatter(text, warnings)
        try:
            found = self._scan(text, body_start)
        except MemoryError:  # over the parse budget: the file is skipped, not half-read
            raise
        except Exception as exc:  # one odd note must never stop indexing of the vault
            warnings.append(f"markdown structure not parsed: {type(exc).__name__}: {exc}")
            found = _Found()
        headings = _heading_tree(found.headings)
        return ParsedNote(
            path=path,
            text=text,
            title=_title(meta, headings, path),
            aliases=_dedupe(_strings(meta.get("aliases", meta.get("alias")))),
            tags=_dedupe([*_frontmatter_tags(meta), *found.tags]),
            frontmatter=_json_safe(meta),
            links=tuple(found.links),
            headings=headings,
            sections=_sections(text, body_start, headings),
            date=_note_date(meta),
            warnings=tuple(warnings),
        )

    def _scan(self, text: str, body_start: int) -> _Found:
        """Parse the body with the frontmatter replaced by newlines so tree rows are file lines."""
        padded = "\n" * text.count("\n", 0, body_start) + text[body_start:]
        source = padded.encode("utf-8", "replace")
        found = _Found()
        self._visit(self._block.parse(source).root_node, source, found, top_level=True)
        found.links.sort(key=lambda link: link.line)
        return found

    def _visit(self, node: Node, source: bytes, found: _Found, top_level: bool) -> None:
        """Headings count only outside quotes and lists, where Obsidian's outline sees them."""
        kind = node.type
        if kind in _SKIP_BLOCKS:
            return
        if kind in ("atx_heading", "setext_heading"):
            self._heading(node, source, found, top_level)
        elif kind in ("inline", "pipe_table_cell"):
            self._scan_inline(source[node.start_byte : node.end_byte], node.start_point.row, found)
        else:
            nested = top_level and kind in ("document", "section")
            for child in node.named_children:
                self._visit(child, source, found, nested)

    def _heading(self, node: Node, source: bytes, found: _Found, top_level: bool) -> None:
        if node.type == "atx_heading":
            level = int(node.named_children[0].type[5])  # atx_hN_marker
            inline = _child(node, "inline")
        else:
            level = 1 if _child(node, "setext_h1_underline") else 2
            paragraph = _child(node, "paragraph")
            inline = _child(paragraph, "inline") if paragraph else None
        text = ""
        if inline is not None:
            data = source[inline.start_byte : inline.end_byte]
            if node.type == "atx_heading":
                data = _ATX_CLOSING.sub(b"", data)
            text = self._scan_inline(data, inline.start_point.row, found, want_title=True)
        if top_level:
            found.headings.append((level, text, node.start_point.row))

    def _scan_inline(self, data: bytes, row: int, found: _Found, want_title: bool = False) -> str:
        """Collect links and tags from one inline run; for headings also return plain text."""
        if not want_title and b"[" not in data and b"#" not in data:
            return ""
        spans = _InlineSpans(data)
        if want_title or _NEEDS_INLINE_PARSE.search(data):  # the grammar costs ~1 µs per byte
            spans.walk(self._inline.parse(data).root_node)
        for start, link in spans.links:
            found.links.append(replace(link, line=row + data.count(b"\n", 0, start) + 1))
        masked = spans.masked()
        multiline = "\n" in masked
        for match in _TOKEN.finditer(masked):
            if match["wiki"]:
                line = row + 1 + (masked.count("\n", 0, match.start()) if multiline else 0)
                wikilink = _wikilink(match["inner"], bool(match["bang"]), line)
                if wikilink is not None:
                    found.links.append(wikilink)
            elif match["tag"] and _valid_tag(tag := match["tag"].rstrip("/")):
                found.tags.append(tag)
        if not want_title:
            return ""
        return " ".join(_TOKEN.sub(_wiki_display, spans.title_text()).split())


class _InlineSpans:
    """One inline run: what to hide from the regexes, its Markdown links, its display text."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.masks: list[tuple[int, int]] = []
        self.title_edits: list[tuple[int, int, bytes]] = []
        self.links: list[tuple[int, Link]] = []

    def walk(self, node: Node) -> None:
        for child in node.children:
            if child.type in _MASKED:
                self._mask(child)
            elif child.type in _DROPPED_IN_TITLE:
                self._edit(child, b"")
            elif child.type in ("inline_link", "image"):
                self._link(child)
            else:
                self.walk(child)

    def _mask(self, node: Node) -> None:
        if node.type == "backslash_escape":
            kept = self.data[node.start_byte + 1 : node.end_byte]
            self._edit(node, kept)
            if kept in _SYNTAX_ESCAPES:  # but \| survives: it separates a label in tables
                self.masks.append((node.start_byte, node.end_byte))
            return
        self.masks.append((node.start_byte, node.end_byte))
        for part in (node, *node.children):
            if part.type in _DROPPED_IN_TITLE:
                self._edit(part, b"")

    def _edit(self, node: Node, replacement: bytes) -> None:
        self.title_edits.append((node.start_byte, node.end_byte, replacement))

    def _link(self, node: Node) -> None:
        label_node = _child(node, "link_text") or _child(node, "image_description")
        dest_node = _child(node, "link_destination")
        if dest_node is None:  # Obsidian's ![[embed]] reads as an image without destination
            self.walk(node)
            return
        label = self.data[label_node.start_byte : label_node.end_byte] if label_node else b""
        self._edit(node, label)
        self.masks.append((node.start_byte, node.end_byte))
        dest = self.data[dest_node.start_byte : dest_node.end_byte].decode("utf-8", "replace")
        link = _markdown_link(dest, label.decode("utf-8", "replace"), node.type == "image")
        if link is not None:
            self.links.append((node.start_byte, link))

    def masked(self) -> str:
        """Blank masked bytes but keep newlines, so that positions still map to lines."""
        buf = bytearray(self.data)
        for start, end in self.masks:
            buf[start:end] = _NOT_NEWLINE.sub(b" ", self.data[start:end])
        return buf.decode("utf-8", "replace")

    def title_text(self) -> str:
        out, pos = [], 0
        for start, end, replacement in sorted(self.title_edits):
            if start >= pos:
                out += [self.data[pos:start], replacement]
                pos = end
        out.append(self.data[pos:])
        return b"".join(out).decode("utf-8", "replace")


def _child(node: Node, kind: str) -> Node | None:
    return next((c for c in node.named_children if c.type == kind), None)


def _split_link_parts(raw: str) -> tuple[str, str | None, str | None]:
    note, _, sub = raw.partition("#")
    if sub.startswith("^"):
        return note.strip(), None, sub[1:].strip() or None
    return note.strip(), sub.strip() or None, None


def _wikilink(inner: str, embed: bool, line: int) -> Link | None:
    """Links to a heading of the same note (``[[#H]]``) carry no target and are dropped."""
    raw, bar, label = inner.partition("|")
    target, heading, block = _split_link_parts(raw.rstrip("\\"))
    if not target:
        return None
    label_or_none = label.strip() or None if bar else None
    return Link(target, embed, heading, block, label_or_none, "wikilink", line)


def _markdown_link(dest: str, label: str, embed: bool) -> Link | None:
    dest = dest.strip()
    if dest.startswith("<") and dest.endswith(">"):
        dest = dest[1:-1]
    if not dest or _SCHEME.match(dest):
        return None
    path, _, fragment = dest.partition("#")
    target = unquote(path)
    if not target.lower().endswith((".md", ".markdown")):
        return None
    _, heading, block = _split_link_parts("#" + unquote(fragment))
    return Link(target, embed, heading, block, label.strip() or None, "markdown")


def _wiki_display(match: re.Match[str]) -> str:
    if not match["wiki"]:
        return match[0]
    raw, bar, label = match["inner"].partition("|")
    return label.strip() if bar and label.strip() else raw.rstrip("\\").strip()


def _valid_tag(tag: str) -> bool:
    """Obsidian: a tag needs one non-numeric character, so issue numbers like #123 are not."""
    return any(not ch.isdigit() and ch != "/" for ch in tag)


def _read_frontmatter(text: str, warnings: list[str]) -> tuple[dict[str, Any], int]:
    """Return the YAML mapping and where the body starts; a bad block is skipped, not fatal."""
    match = _FRONTMATTER.match(text)
    if match is None:
        return {}, 1 if text.startswith("\ufeff") else 0
    if len(match[1]) > MAX_FRONTMATTER_CHARS:
        warnings.append(
            f"frontmatter skipped: {len(match[1]):,} characters, over {MAX_FRONTMATTER_CHARS:,}"
        )
        return {}, match.end()
    try:
        data = YAMLHandler().load(match[1])
    except yaml.MarkedYAMLError as exc:
        where = f" (line {exc.problem_mark.line + 2})" if exc.problem_mark else ""
        warnings.append(f"invalid YAML frontmatter: {exc.problem or exc.context}{where}")
        return {}, match.end()
    except MemoryError:
        raise
    except Exception as exc:  # constructors raise plain ValueError, e.g. for 2023-13-45
        reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        warnings.append(f"invalid YAML frontmatter: {reason}")
        return {}, match.end()
    if data is not None and not isinstance(data, dict):
        warnings.append(f"invalid YAML frontmatter: expected a mapping, got {type(data).__name__}")
        data = None
    if not _within(data, MAX_FRONTMATTER_VALUES):
        warnings.append(
            f"frontmatter skipped: it expands to over {MAX_FRONTMATTER_VALUES:,} values "
            "(YAML aliases?)"
        )
        data = None
    return data or {}, match.end()


def _within(value: Any, budget: int) -> bool:
    """Does ``value``, with every alias expanded, hold at most ``budget`` values?"""
    stack = [value]
    while stack:
        budget -= 1
        if budget < 0:
            return False
        item = stack.pop()
        if isinstance(item, dict):
            stack += item.keys()
            stack += item.values()
        elif isinstance(item, list | tuple | set):
            stack += item
    return True


def _heading_tree(raw: list[tuple[int, str, int]]) -> tuple[Heading, ...]:
    out: list[Heading] = []
    stack: list[int] = []
    for level, text, row in raw:
        while stack and out[stack[-1]].level >= level:
            stack.pop()
        out.append(Heading(level, text, row + 1, stack[-1] if stack else None))
        stack.append(len(out) - 1)
    return tuple(out)


def _heading_path(headings: tuple[Heading, ...], index: int | None) -> tuple[str, ...]:
    path: list[str] = []
    while index is not None:
        path.append(headings[index].text)
        index = headings[index].parent
    return tuple(reversed(path))


def _sections(text: str, body_start: int, headings: tuple[Heading, ...]) -> tuple[Section, ...]:
    line_starts = [0, *(m.end() for m in re.finditer("\n", text))]
    starts = [max(line_starts[min(h.line, len(line_starts)) - 1], body_start) for h in headings]
    bounds = [*starts, len(text)]

    def section(path: tuple[str, ...], start: int, end: int) -> Section:
        last = bisect_right(line_starts, max(end - 1, start))
        return Section(path, bisect_right(line_starts, start), last, start, end)

    out = [section((), body_start, bounds[0])] if text[body_start : bounds[0]].strip() else []
    for index, start in enumerate(starts):
        out.append(section(_heading_path(headings, index), start, bounds[index + 1]))
    return tuple(out)


def _title(meta: dict[str, Any], headings: tuple[Heading, ...], path: str) -> str:
    for title in _strings(meta.get("title")):
        return title
    for heading in headings:
        if heading.level == 1 and heading.text:
            return heading.text
    return PurePosixPath(path).stem


def _strings(value: Any) -> list[str]:
    items = value if isinstance(value, list | tuple) else [value]
    return [str(v).strip() for v in items if isinstance(v, str | int | float) and str(v).strip()]


def _frontmatter_tags(meta: dict[str, Any]) -> list[str]:
    raw = meta.get("tags", meta.get("tag"))
    tags = (t.lstrip("#") for s in _strings(raw) for t in _TAG_SPLIT.split(s))
    return [t for t in tags if t and _valid_tag(t)]


def _dedupe(items: Iterable[str]) -> tuple[str, ...]:
    seen: dict[str, str] = {}
    for item in items:
        seen.setdefault(item.casefold(), item)
    return tuple(seen.values())


def _note_date(meta: dict[str, Any]) -> datetime | None:
    for key in _DATE_KEYS:
        if (parsed := _to_datetime(meta.get(key))) is not None:
            return parsed
    return None


def _to_datetime(value: Any) -> datetime | None:
    """Accept what people actually write in frontmatter; always return aware UTC."""
    result: datetime | None = None
    if isinstance(value, datetime):
        result = value
    elif isinstance(value, date):
        result = datetime(value.year, value.month, value.day)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        result = _from_epoch(float(value))
    elif isinstance(value, str):
        result = _from_string(value.strip())
    if result is None:
        return None
    return result.replace(tzinfo=UTC) if result.tzinfo is None else result.astimezone(UTC)


def _from_epoch(seconds: float) -> datetime | None:
    if not math.isfinite(seconds):
        return None
    if abs(seconds) > 1e11:  # milliseconds, as Dendron writes them
        seconds /= 1000
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _from_string(value: str) -> datetime | None:
    if value.isdigit():
        return _from_epoch(float(value))
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        pass
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(value, fmt)
        except ValueError:
            continue
    return None


def _json_safe(value: Any, depth: int = 0) -> Any:
    """Frontmatter is stored as JSON, so YAML dates, sets and odd scalars become strings."""
    if depth > _MAX_DEPTH:  # YAML anchors can build self-referencing lists
        return None
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_json_safe(v, depth + 1) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)
