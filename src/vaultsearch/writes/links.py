"""Rewrite the links that point to a moved note, as a pure function of the text.

Only what a link names changes: its display label, heading or block reference, embed
mark and ``.md`` suffix stay as the author wrote them. Links in code (fenced blocks and
inline spans) are text, not links, and stay untouched. A link by alias still works
after the move, so the caller's ``resolve`` should not know aliases.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote, unquote

from vaultsearch.writes.edits import in_code

Resolve = Callable[[str, str], str | None]
"""(link target, source note path) -> the vault-relative path it leads to, or None."""

_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_MDLINK = re.compile(r"(!?)\[([^\]\n]*)\]\((<[^>\n]*>|[^)\s]+)(\s+\"[^\"\n]*\")?\)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_NOTE_EXT = (".md", ".markdown")


@dataclass(frozen=True, slots=True)
class Move:
    old: str
    """Vault-relative path before the move."""
    new: str
    bare_name_unique: bool
    """Whether the new file name alone leads to the new path (no other note shares it)."""


def _stem(path: str) -> str:
    lower = path.lower()
    for ext in _NOTE_EXT:
        if lower.endswith(ext):
            return path[: -len(ext)]
    return path


def _split_pipe(inner: str) -> tuple[str, str]:
    """(target with heading, '|label' including its escaped or plain pipe)."""
    m = re.search(r"\\?\|", inner)
    return (inner, "") if m is None else (inner[: m.start()], inner[m.start() :])


def _wikilink_target(target: str, move: Move) -> str:
    keep_ext = target.strip().lower().endswith(_NOTE_EXT)
    if "/" not in target and move.bare_name_unique:
        name = posixpath.basename(_stem(move.new))
    else:
        name = _stem(move.new)
    return name + (move.new[len(_stem(move.new)) :] if keep_ext else "")


def _wikilink(m: re.Match[str], source: str, move: Move, resolve: Resolve) -> str | None:
    bang, inner = m[1], m[2]
    target_part, label = _split_pipe(inner)
    target, sep, anchor = target_part.partition("#")
    if not target.strip() or resolve(target.strip(), source) != move.old:
        return None
    return f"{bang}[[{_wikilink_target(target, move)}{sep}{anchor}{label}]]"


@dataclass(frozen=True, slots=True)
class _Dest:
    """A Markdown link's destination, split so that only its path is replaced."""

    m: re.Match[str]
    path: str
    """As written (maybe %-encoded)."""
    target: str
    """Decoded: what a resolver takes."""
    anchor: str
    """``#heading`` or empty."""

    def relink(self, new: str) -> str:
        bang, label, dest, title = self.m[1], self.m[2], self.m[3], self.m[4] or ""
        angled = dest.startswith("<")
        if not angled and ("%" in self.path or " " in new):
            new = quote(new, safe="/")
        inner = new + self.anchor
        return f"{bang}[{label}]({f'<{inner}>' if angled else inner}{title})"


def _dest(m: re.Match[str]) -> _Dest | None:
    dest = m[3]
    raw = dest[1:-1] if dest.startswith("<") else dest
    if not raw or _SCHEME.match(raw) or raw.startswith("#"):
        return None
    path, sep, anchor = raw.partition("#")
    return _Dest(m, path, unquote(path), sep + anchor)


def _markdown_link(m: re.Match[str], source: str, move: Move, resolve: Resolve) -> str | None:
    d = _dest(m)
    if d is None or resolve(d.target, source) != move.old:
        return None
    folder = posixpath.dirname(source)
    relative = posixpath.normpath(posixpath.join(folder, d.target)) == posixpath.normpath(move.old)
    if relative and not d.target.startswith("/"):
        new = posixpath.relpath(move.new, folder or ".")
    else:
        new = ("/" if d.target.startswith("/") else "") + move.new
    if not d.target.lower().endswith(_NOTE_EXT):
        new = _stem(new)
    return d.relink(new)


Edit = Callable[[re.Match[str]], str | None]
"""A link's match -> its new text, or None to leave it."""


def _rewrite_line(line: str, edits_for: list[tuple[re.Pattern[str], Edit]]) -> tuple[str, int]:
    masked = _CODE_SPAN.sub(lambda c: "\0" * len(c[0]), line)
    edits: list[tuple[int, int, str]] = []
    for pattern, fn in edits_for:
        for m in pattern.finditer(masked):
            if any(s < m.end() and m.start() < e for s, e, _ in edits):
                continue
            original = pattern.match(line, m.start(), m.end())
            if original is None:
                continue
            new = fn(original)
            if new is not None:
                edits.append((m.start(), m.end(), new))
    for start, end, new in sorted(edits, reverse=True):
        line = line[:start] + new + line[end:]
    return line, len(edits)


def _transform(text: str, edits_for: list[tuple[re.Pattern[str], Edit]]) -> tuple[str, int]:
    out, changed = [], 0
    for line, code in in_code(text.splitlines(keepends=True)):
        if code or ("[[" not in line and "](" not in line):
            out.append(line)
            continue
        new, n = _rewrite_line(line, edits_for)
        out.append(new)
        changed += n
    return "".join(out), changed


def rewrite_links(text: str, source: str, move: Move, resolve: Resolve) -> tuple[str, int]:
    """``text`` of the note at ``source`` with every link to ``move.old`` pointing at
    ``move.new``, and how many links changed."""
    return _transform(
        text,
        [
            (_WIKILINK, lambda m: _wikilink(m, source, move, resolve)),
            (_MDLINK, lambda m: _markdown_link(m, source, move, resolve)),
        ],
    )


def rebase_links(text: str, move: Move, resolve: Resolve) -> tuple[str, int]:
    """The moved note's own relative Markdown links, recomputed from its new folder so
    that they lead where they led before (wikilinks name notes, not places: they stay)."""
    old_folder, new_folder = posixpath.dirname(move.old), posixpath.dirname(move.new)
    if old_folder == new_folder:
        return text, 0

    def rebase(m: re.Match[str]) -> str | None:
        d = _dest(m)
        if d is None or d.target.startswith("/"):
            return None
        place = posixpath.normpath(posixpath.join(old_folder, d.target))
        found = resolve(d.target, move.old)
        if found is None or place not in (found, _stem(found)) or place.startswith("../"):
            return None
        return d.relink(posixpath.relpath(place, new_folder or "."))

    return _transform(text, [(_MDLINK, rebase)])
