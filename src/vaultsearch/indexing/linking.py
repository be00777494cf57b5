"""Where the catalog's links point, kept right after every run.

Adding, removing or moving one note can change where links elsewhere point, but only
links under that note's name keys (``links.py``): an update resolves those
and the changed notes' own links, once per run, not the whole vault per batch. The
result is the one a resolution of every link would give; the test that compares them
after a series of edits, renames and deletes is ``tests/test_link_updates.py``.
"""

from __future__ import annotations

import uuid
from typing import TypeAlias

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
    if catalog.link_keys or catalog.names_token() is None:
        catalog.set_meta("names", uuid.uuid4().hex)  # a token a rolled-back run never reuses
    if everything or len(sources) * 2 > catalog.count("notes"):
        links = catalog.links()
    else:
        catalog.fill_link_keys()
        links = catalog.links_to_resolve(sources, keys)
    catalog.link_sources, catalog.link_keys = set(), set()
    catalog.graph_sources |= sources
    if links:
        updates = _changed(catalog, links)
        catalog.set_link_targets(updates)
        catalog.graph_sources.update(source_id for _, source_id, _, _ in updates)
    return len(links)


def _changed(
    catalog: Catalog, links: list[LinkRow]
) -> list[tuple[str | None, int, str, str | None]]:
    of_note = catalog.note_names_of({link.source_id for link in links})
    resolvers = _resolvers(catalog)
    updates = []
    for link in links:
        found: str | None = None
        if (note := of_note.get(link.source_id)) is not None:
            path, source = note
            resolver, ids = resolvers[source]
            rel = path[len(source) + 1 :] if source else path
            found = resolver.resolve_link(link.target, link.label, rel)
            found = ids.get(found, found) if found else None
        if found != link.target_path:
            updates.append((found, link.source_id, link.target, link.label))
    return updates


Resolvers: TypeAlias = dict[str, tuple[LinkResolver, dict[str, str]]]
_KEPT: dict[tuple[str, str | None], Resolvers] = {}


def _resolvers(catalog: Catalog) -> Resolvers:
    """Each source's resolver (and note paths by relative path), kept while the
    catalog's names token stays the same: a long-lived writer (``watch``) resolves an
    edit's few links without reading every note's name, or indexing them, again. Any
    run that adds, removes, moves or re-aliases a note sets a new token."""
    key = (str(catalog.path), catalog.names_token())
    if (kept := _KEPT.get(key)) is not None:
        return kept
    by_source: dict[str, list[tuple[str, str, list[str]]]] = {}
    for _, path, source, aliases in catalog.note_names():
        rel = path[len(source) + 1 :] if source else path
        by_source.setdefault(source, []).append((rel, path, aliases))
    built = {
        source: (LinkResolver((r, a) for r, _, a in rows), {r: p for r, p, _ in rows})
        for source, rows in by_source.items()
    }
    _KEPT.clear()
    _KEPT[key] = built
    return built
