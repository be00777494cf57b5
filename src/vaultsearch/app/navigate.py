"""Finding one's way in a vault without searching: link questions, a note's outline, the
folders, and several notes or line ranges in one read.

Each function returns an ``Answer`` (structured data and a text saying the same), which
the MCP tools and the CLI both print: an agent and a shell user get one implementation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from vaultsearch.app.answer import Answer, answer, page
from vaultsearch.app.browse import (
    MAX_CHARS,
    MAX_LINES,
    Browser,
    LineSlice,
    section_end,
    slice_lines,
)
from vaultsearch.app.linkmap import (
    LINK_QUERIES,
    backlinks,
    broken_links,
    link_path,
    most_linked,
    orphans,
    outlinks,
)
from vaultsearch.app.linkmap import title as note_title
from vaultsearch.app.sourceread import passage_lines, places, read_as_indexed, read_source
from vaultsearch.errors import QueryError, VaultsearchError

MAX_HEADINGS = 500
NO_INDEX = "No index exists yet; links are known once it is built."
_SPEC = re.compile(r"^(?P<path>.+?)(?::(?P<line>\d+)(?::(?P<count>\d+))?)?$")


# --- links ------------------------------------------------------------------------------
def links(
    browser: Browser,
    kind: str,
    path: str | None = None,
    target: str | None = None,
    limit: int = 50,
) -> Answer:
    """One question about links: a note's backlinks or outlinks, broken links (of a note
    or all), orphans, the most linked notes, or the shortest link path to ``target``."""
    if kind not in LINK_QUERIES:
        raise QueryError(f"Unknown links kind {kind!r}; use one of: {', '.join(LINK_QUERIES)}.")
    if kind in ("backlinks", "outlinks", "path") and not path:
        raise QueryError(f"links kind {kind!r} needs path: the note to start from.")
    if kind == "path" and not target:
        raise QueryError("links kind 'path' needs target: the note to reach.")
    rel = browser.find(path)[0] if path else None
    goal = browser.find(target)[0] if target and kind == "path" else None
    snap = browser.snapshot()
    base: dict[str, Any] = {"kind": kind, "path": rel}
    if snap is None:
        return answer({**base, "items": [], "total": 0, "message": NO_INDEX}, [NO_INDEX])
    g = snap.reader("graph").graph
    items: list[dict[str, Any]]
    if kind == "path":
        assert rel is not None and goal is not None
        route = link_path(g, rel, goal)
        if route is None:
            msg = f"No chain of links connects {rel} and {goal}, in either direction."
            return answer({**base, "target": goal, "items": [], "hops": -1, "message": msg}, [msg])
        items = [{"path": p, "title": note_title(g, p)} for p in route]
        head = f"{len(route) - 1} link hops from {rel} to {goal} (links followed either way):"
        rows = [f"{i}. {x['path']}  {x['title']}" for i, x in enumerate(items)]
        data = {**base, "target": goal, "items": items, "hops": len(route) - 1}
        return answer(data, [head, *rows])
    if kind == "broken":
        found = broken_links(g, rel)
        items = [{"path": b.path, "target": b.target, "count": b.count} for b in found]
        label = "note -> target pairs"
        row = "{path} -> [[{target}]]" + "{count_note}"
    elif kind == "most_linked":
        items = [{"path": p, "title": note_title(g, p), "backlinks": n} for p, n in most_linked(g)]
        label, row = "linked notes", "{path}  {title}  ({backlinks} notes link here)"
    else:
        paths = {"backlinks": backlinks, "outlinks": outlinks}.get(kind)
        listed = paths(g, rel) if paths is not None and rel is not None else orphans(g)
        items = [{"path": p, "title": note_title(g, p)} for p in listed]
        label, row = ("orphan notes" if kind == "orphans" else kind), "{path}  {title}"
    shown, head = page(label, items, limit)
    rows = [
        row.format(**x, count_note=f" ({x['count']}x)" if x.get("count", 1) > 1 else "")
        for x in shown
    ]
    data = {**base, "items": shown, "total": len(items)}
    if kind == "broken":  # every written occurrence, as status counts them (store/counts.py)
        data["broken_links"] = sum(int(x["count"]) for x in items)
        head = f"{data['broken_links']} broken links in {len(items)} note -> target pairs"
        if len(shown) < len(items):
            head += f"; showing {len(shown)} (raise limit for more)"
    head += f" for {rel}" if rel else ""
    return answer(data, [f"{head}:" if rows else head, *rows])


# --- a note's outline, the folders ------------------------------------------------------------
def outline(browser: Browser, path: str, limit: int = MAX_HEADINGS) -> Answer:
    """The note's headings with the line span of each section, as read_note's heading
    argument or start_line/end_line take them."""
    if read_as_indexed(browser.vault, path):
        rel, total, items = places(browser.vault, path)
        title = rel
    else:
        rel, note, lines, _ = browser.parse(path)
        hs, title, total = note.headings, note.title, len(lines)
        items = [
            {
                "level": h.level,
                "text": h.text,
                "line": h.line,
                "end_line": section_end(hs, i, total),
            }
            for i, h in enumerate(hs)
        ]
    shown, head = page("headings", items, limit)
    rows = [
        f"{'  ' * (int(x['level']) - 1)}{'#' * int(x['level'])} {x['text']}  "
        f"({x['line']}-{x['end_line']})"
        for x in shown
    ]
    data = {"path": rel, "title": title, "total_lines": total, "items": shown}
    return answer({**data, "total": len(items)}, [f"{rel}: {head}", *rows])


def folders(browser: Browser, under: str | None = None, limit: int = 200) -> Answer:
    """Folders with their note counts: ``notes`` directly inside, ``all`` with subfolders."""
    paths = [n.path for n in browser.notes()[0]]
    prefix = (under or "").strip().strip("/")
    direct: dict[str, int] = {}
    total: dict[str, int] = {}
    for p in paths:
        parts = p.split("/")[:-1]
        if parts:
            direct["/".join(parts)] = direct.get("/".join(parts), 0) + 1
        for i in range(1, len(parts) + 1):
            total["/".join(parts[:i])] = total.get("/".join(parts[:i]), 0) + 1
    names = sorted(f for f in total if not prefix or f == prefix or f.startswith(prefix + "/"))
    if prefix and not names:
        raise QueryError(f"There is no folder {under!r} with notes in the vault.")
    items = [{"folder": f, "notes": direct.get(f, 0), "all": total[f]} for f in names]
    shown, head = page("folders", items, limit)
    rows = [f"{x['folder']}/  {x['notes']} notes ({x['all']} with subfolders)" for x in shown]
    top = sum(1 for p in paths if "/" not in p)
    data = {"under": prefix or None, "items": shown, "total": len(items), "top_level_notes": top}
    return answer(data, [f"{head}; {top} notes at the top level", *rows])


# --- several notes or ranges at once -------------------------------------------------------
def parse_spec(spec: str) -> tuple[str, int | None, int | None]:
    """``PATH``, ``PATH:LINE`` or ``PATH:LINE:COUNT`` -> (path, first line, line count)."""
    m = _SPEC.match(spec.strip())
    if m is None or not m["path"]:
        raise QueryError(f"{spec!r} is not PATH, PATH:LINE or PATH:LINE:COUNT.")
    line = int(m["line"]) if m["line"] else None
    count = int(m["count"]) if m["count"] else None
    if line == 0 or count == 0:
        raise QueryError(f"{spec!r}: lines are counted from 1 and COUNT must be at least 1.")
    return m["path"], line, count


def _item(rel: str, part: LineSlice, message: str | None = None) -> tuple[dict[str, Any], str]:
    item = {
        "path": rel,
        "start_line": part.start_line,
        "end_line": part.end_line,
        "total_lines": part.total_lines,
        "text": part.text,
        "next_start_line": part.next_start_line,
        "message": message,
    }
    more = f" (cut; next start_line {part.next_start_line})" if part.next_start_line else ""
    head = f"== {rel} lines {part.start_line}-{part.end_line} of {part.total_lines}{more}"
    return {k: v for k, v in item.items() if v is not None}, f"{head}\n{part.text}"


def get_places(
    browser: Browser, chunk_ids: Sequence[int], paths: Sequence[str], page_: int | None,
    context: int = 0,
) -> Answer:  # fmt: skip
    """Chunks by id, or a PDF's page, read as read_source reads them (``get --chunk``,
    ``get PATH --page``)."""
    items, texts = [], []
    reads = [read_source(browser.vault, chunk_id=c, context=context) for c in chunk_ids]
    reads += [read_source(browser.vault, path=p, page=page_, context=context) for p in paths]
    for r in reads:
        item, text = _item(r.path, r.slice)
        items.append(item)
        texts.append(text)
    return answer({"items": items, "skipped": None, "message": None}, texts)


def _lines(browser: Browser, path: str) -> tuple[str, list[str], str | None]:
    """A vault note as its file is now; a source's file or a PDF as indexed."""
    if read_as_indexed(browser.vault, path):
        rel, lines = passage_lines(browser.vault, browser, path)
        return rel, lines, None
    rel, _, lines, partial = browser.parse(path)
    return rel, lines, partial


def multi_get(
    browser: Browser, specs: Sequence[str], max_chars: int = MAX_CHARS, context: int = 0
) -> Answer:
    """Each spec's lines, numbered as read_note numbers them, until ``max_chars`` in all;
    a spec that fails says why without failing the others."""
    items: list[dict[str, Any]] = []
    texts: list[str] = []
    left = max_chars
    skipped: list[str] = []
    for spec in specs:
        if left <= 0:
            skipped.append(spec)
            continue
        try:
            path, line, count = parse_spec(spec)
            rel, lines, partial = _lines(browser, path)
            end = line + count - 1 if line and count else None
            part = slice_lines(lines, line, end, context, max_chars=left)
        except VaultsearchError as exc:
            items.append({"spec": spec, "error": str(exc)})
            texts.append(f"== {spec}: {exc}")
            continue
        shown = part.end_line - part.start_line + 1
        cut_short = part.next_start_line is not None and shown < MAX_LINES
        left = 0 if cut_short else left - len(part.text)  # a cut short of 200 lines: no budget
        item, text = _item(rel, part, partial)
        items.append(item)
        texts.append(text)
    message = None
    if skipped:
        message = f"Stopped at max_chars={max_chars}: {len(skipped)} not read; ask for them again."
    data = {"items": items, "skipped": skipped or None, "message": message}
    return answer(data, [*texts, message])
