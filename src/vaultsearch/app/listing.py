"""Browsing answers: a note's neighbourhood, a page of notes, the tags.

What the MCP tools ``related``, ``list_notes`` and ``list_tags`` and the commands
``vaultsearch related``, ``list`` and ``tags`` answer, built once (see ``answer``).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from vaultsearch.app.answer import Answer, answer, listed, page
from vaultsearch.app.browse import Browser, Linked, Sort, page_notes, tag_counts

NO_INDEX = "No index exists yet; it is being built. Try again shortly."


def related(browser: Browser, path: str, depth: int = 1, limit: int = 10) -> Answer:
    """Links, notes up to ``depth`` hops away and similar notes; ``limit`` caps each list."""
    r = browser.related(path, depth, limit)
    if r is None:
        rel = browser.find(path)[0]
        return answer({"path": rel, "title": rel, "message": NO_INDEX}, [rel, NO_INDEX])
    cut: list[str] = []

    def refs(label: str, items: tuple[Linked, ...], extra: str = "") -> list[dict[str, Any]]:
        if len(items) > limit:
            cut.append(f"{label} {limit} of {len(items)}")
        out = [{"path": x.path, "title": x.title} for x in items[:limit]]
        for row, x in zip(out, items, strict=False):
            if extra:
                row[extra] = getattr(x, extra)
        return out

    unresolved = list(r.unresolved[:limit])
    if len(r.unresolved) > limit:
        cut.append(f"unresolved links {limit} of {len(r.unresolved)}")
    data: dict[str, Any] = {
        "path": r.path,
        "title": r.title,
        "outlinks": refs("outlinks", r.outlinks),
        "backlinks": refs("backlinks", r.backlinks),
        "embeds": refs("embeds", r.embeds),
        "unresolved_links": unresolved,
        "nearby": refs("nearby", r.nearby, "distance"),
        "similar": refs("similar", r.similar, "score"),
    }
    message = f"Cut at limit={limit}: {', '.join(cut)}; raise limit for more." if cut else None
    data["message"] = message

    def paths(key: str, fmt: str = "{path}") -> list[str]:
        return [fmt.format(**x) for x in data[key]]

    return answer(
        data,
        [
            f"{r.path} — {r.title}",
            message,
            listed("links to", paths("outlinks")),
            listed("linked from", paths("backlinks")),
            listed("embeds", paths("embeds")),
            listed("unresolved links", unresolved),
            listed("nearby", paths("nearby", "{path} ({distance} hops)")),
            listed("similar", paths("similar", "{path} ({score:.3f})")),
        ],
    )


def list_notes(
    browser: Browser,
    folder: str | None = None,
    tag: str | None = None,
    sort: Sort = "path",
    limit: int = 50,
    cursor: str | None = None,
) -> Answer:
    notes, indexed = browser.notes()
    p = page_notes(notes, folder, tag, sort, limit, cursor)
    message = None if indexed else "No index yet: files listed without tags or titles."
    data = {
        "notes": [asdict(n) for n in p.notes],
        "total": p.total,
        "next_cursor": p.next_cursor,
        "index_building": not indexed,
        "message": message,
    }
    rows = [
        f"{n.path}  {n.title}  {n.date}" + (f"  #{' #'.join(n.tags)}" if n.tags else "")
        for n in p.notes
    ]
    more = f"next page: cursor={p.next_cursor}" if p.next_cursor else None
    return answer(data, [f"{len(p.notes)} of {p.total} notes", message, *rows, more])


def list_tags(browser: Browser, prefix: str | None = None, limit: int = 200) -> Answer:
    notes, indexed = browser.notes()
    rows = tag_counts(notes)
    if prefix:
        want = prefix.lower().lstrip("#").rstrip("/")
        rows = [t for t in rows if t.tag == want or t.tag.startswith(want + "/")]
    shown, head = page("tags", rows, limit)
    message = None if indexed else "No index exists yet; tags are known after it."
    data = {"tags": [asdict(t) for t in shown], "total": len(rows), "message": message}
    lines = [
        f"{t.tag} {t.notes}" + (f" ({t.direct} direct)" if t.direct != t.notes else "")
        for t in shown
    ]
    return answer(data, [f"{head} (notes with the tag or a tag below it)", message, *lines])
