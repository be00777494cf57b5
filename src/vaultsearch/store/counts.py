"""What an index holds, counted once: notes, chunks, sentences, links and broken links.

Every surface (the index summary and the progress display, ``vaultsearch status``, MCP
``index_status``, REST ``/status`` and the page) shows these numbers; they all come from
here so that they agree. Notes, chunks and links are counted in the catalog; sentences
are the rows of the sentence index, as the writer recorded them in the generation's
state when it committed (the catalog holds chunks, not their sentences).

A **broken link** is one written link (``[[target]]`` or an embed, each occurrence
counted) whose target names no note; every other written link is resolved. The link
graph's ``unresolved`` counts and ``vaultsearch links broken`` use the same definition.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from vaultsearch.store.catalog import Catalog, open_catalog_for_reading
from vaultsearch.store.layout import IndexLayout
from vaultsearch.store.manifest import read_state


@dataclass(frozen=True, slots=True)
class IndexCounts:
    notes: int = 0
    chunks: int = 0
    sentences: int = 0
    links: int = 0
    """Every written link, resolved or not."""
    broken_links: int = 0
    notes_awaiting_sentences: int = 0
    """Notes a build has made searchable by chunk vectors and keywords whose sentence
    vectors (its second stage) are not all in yet; 0 once the build is complete."""

    @property
    def resolved_links(self) -> int:
        return self.links - self.broken_links

    def to_dict(self) -> dict[str, int]:
        return {**asdict(self), "resolved_links": self.resolved_links}

    def line(self) -> str:
        """The one wording every text surface prints."""
        line = (
            f"{self.notes} notes, {self.chunks} chunks, {self.sentences} sentences, "
            f"{self.links} links ({self.resolved_links} resolved, {self.broken_links} broken)"
        )
        if self.notes_awaiting_sentences:
            line += f"; {self.notes_awaiting_sentences} notes awaiting sentence vectors"
        return line


def index_counts(catalog: Catalog, state: dict[str, Any] | None) -> IndexCounts:
    """``catalog`` as a reader sees it and the ``state`` of the generation it belongs to."""
    state = state or {}
    sentences = state.get("sentences", 0)
    awaiting = state.get("sentences_pending_notes", 0)
    broken = state.get("unresolved_links")
    if not isinstance(broken, int) or state.get("generation") != catalog.generation:
        broken = catalog.graph_counts()[1]  # a join over every link: the writer's count
    return IndexCounts(
        notes=catalog.count("notes"),
        chunks=catalog.count("chunks"),
        sentences=sentences if isinstance(sentences, int) else 0,
        links=catalog.count("links"),
        broken_links=broken,
        notes_awaiting_sentences=awaiting if isinstance(awaiting, int) else 0,
    )


def current_counts(layout: IndexLayout) -> IndexCounts | None:
    """The published generation's counts without opening its derived indexes (cheap
    enough for a poll); None when no index has been published."""
    current = layout.current()
    if current is None or not current.catalog.is_file():
        return None
    catalog = open_catalog_for_reading(current.catalog)
    try:
        return index_counts(catalog, read_state(current.root))
    finally:
        catalog.close()
