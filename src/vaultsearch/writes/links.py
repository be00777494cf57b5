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

Resolve = Callable[[str, str], str | None]
"""(link target, source note path) -> the vault-relative path it leads to, or None."""

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
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


def _markdown_link(m: re.Match[str], source: str, move: Move, resolve: Resolve) -> str | None:
    bang, label, dest, title = m[1], m[2], m[3], m[4] or ""
    angled = dest.startswith("<")
    raw = dest[1:-1] if angled else dest
    if not raw or _SCHEME.match(raw) or raw.startswith("#"):
        return None
    path, sep, anchor = raw.partition("#")
    target = unquote(path)
    if resolve(target, source) != move.old:
        return None
    folder = posixpath.dirname(source)
    relative = posixpath.normpath(posixpath.join(folder, target)) == posixpath.normpath(move.old)
    if relative and not target.startswith("/"):
        new = posixpath.relpath(move.new, folder or ".")
    else:
        new = ("/" if target.startswith("/") else "") + move.new
    if not target.lower().endswith(_NOTE_EXT):
        new = _stem(new)
    if not angled and ("%" in path or " " in new):
        new = quote(new, safe="/")
    new_dest = f"<{new}{sep}{anchor}>" if angled else f"{new}{sep}{anchor}"
    return f"{bang}[{label}]({new_dest}{title})"


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
    out, changed, fence = [], 0, ""
    for line in text.splitlines(keepends=True):
        m = _FENCE.match(line)
        if m:
            if not fence:
                fence = m[1][0] * 3
            elif m[1].startswith(fence):
                fence = ""
            out.append(line)
            continue
        if fence or ("[[" not in line and "](" not in line):
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
        bang, label, dest, title = m[1], m[2], m[3], m[4] or ""
        angled = dest.startswith("<")
        raw = dest[1:-1] if angled else dest
        if not raw or _SCHEME.match(raw) or raw.startswith(("#", "/")):
            return None
        path, sep, anchor = raw.partition("#")
        target = unquote(path)
        place = posixpath.normpath(posixpath.join(old_folder, target))
        found = resolve(target, move.old)
        if found is None or place not in (found, _stem(found)) or place.startswith("../"):
            return None
        new = posixpath.relpath(place, new_folder or ".")
        if not angled and ("%" in path or " " in new):
            new = quote(new, safe="/")
        new_dest = f"<{new}{sep}{anchor}>" if angled else f"{new}{sep}{anchor}"
        return f"{bang}[{label}]({new_dest}{title})"

    return _transform(text, [(_MDLINK, rebase)])
