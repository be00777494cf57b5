"""Where the catalog's links point, kept right after every run.

Adding, removing or moving one note can change where links elsewhere point, but only
links under that note's name keys (``links.py``): an update resolves those
and the changed notes' own links, once per run, not the whole vault per batch. The
result is the one a resolution of every link would give; the test that compares them
after a series of edits, renames and deletes is ``tests/test_link_updates.py``.
"""

from __future__ import annotations

import functools

from vaultsearch.links import LinkResolver
from vaultsearch.store.catalog import Catalog, LinkRow


def resolve_links(catalog: Catalog, everything: bool = False) -> int:
    """Resolve the links the catalog's changes since the last call may have moved (or
    every link); returns how many links were looked at. A link resolves within its own
    source: each source is a vault of its own, and a README's ``[[index]]`` must not
    land in another repository."""
    sources, keys = catalog.link_sources, catalog.link_keys - {""}
    if not everything and not sources and not keys:
        return 0
    names = catalog.note_names()
    if everything or len(sources) * 2 > len(names):
        links = catalog.links()
    else:
        catalog.fill_link_keys()
        links = catalog.links_to_resolve(sources, keys)
    catalog.link_sources, catalog.link_keys = set(), set()
    catalog.graph_sources |= sources
    if links:
        updates = _changed(names, links)
        catalog.set_link_targets(updates)
        catalog.graph_sources.update(source_id for _, source_id, _, _ in updates)
    return len(links)


def _changed(
    names: list[tuple[int, str, str, list[str]]], links: list[LinkRow]
) -> list[tuple[str | None, int, str, str | None]]:
    by_source: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {}
    of_note: dict[int, tuple[str, str]] = {}
    for note_id, path, source, aliases in names:
        rel = path[len(source) + 1 :] if source else path
        by_source.setdefault(source, []).append((rel, path, tuple(aliases)))
        of_note[note_id] = (source, rel)
    updates = []
    for link in links:
        found: str | None = None
        if (note := of_note.get(link.source_id)) is not None:
            source, rel = note
            resolver, ids = _resolver(tuple(by_source[source]))
            found = resolver.resolve_link(link.target, link.label, rel)
            found = ids.get(found, found) if found else None
        if found != link.target_path:
            updates.append((found, link.source_id, link.target, link.label))
    return updates


@functools.lru_cache(maxsize=2)
def _resolver(
    rows: tuple[tuple[str, str, tuple[str, ...]], ...],
) -> tuple[LinkResolver, dict[str, str]]:
    """One source's resolver, kept while its notes' names stay the same: a long-lived
    writer (``watch``) resolves an edit's few links without indexing every name again.
    The key is the names themselves, so a rename, an alias or a new note builds anew."""
    return LinkResolver((r, aliases) for r, _, aliases in rows), {r: p for r, p, _ in rows}
