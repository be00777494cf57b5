"""What each tool returns, as JSON schemas an agent reads before calling.

These models are the wire contract: the descriptions are written for a model that
decides what to call next, which is why they say what a field is *for*. The values
come from ``vaultsearch.browse`` and ``Vault``; converting here keeps the Python API
free of pydantic.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class _Out(BaseModel):
    message: str | None = Field(
        default=None,
        description="Anything the caller should know about this answer, e.g. how to go on.",
    )


class NoteRef(BaseModel):
    path: str = Field(description="Vault-relative path: pass it to read_note or related.")
    title: str


class SearchHit(NoteRef):
    heading_path: str = Field(description="Headings above the passage, outermost first.")
    start_line: int = Field(description="First line of the passage (1-based, file lines).")
    end_line: int = Field(description="Last line; read_note(path, start_line, end_line) shows it.")
    snippet: str = Field(description="The best sentences of the passage, as written.")
    highlights: list[list[int]] = Field(
        default_factory=list,
        description="[start, end) character ranges of snippet that match the query.",
    )
    score: float = Field(description="Fused relevance; only the order among hits matters.")
    confidence: float = Field(
        default=0.0,
        description="Estimated probability (0-1) that this note answers the query; "
        "below 0.1 no note is likely to answer (see matches_well).",
    )
    explain: dict[str, Any] | None = Field(
        default=None,
        description="With explain=true: each branch's rank, score and contribution, the "
        "graph, recency and rerank parts (they add up to score), widened typos.",
    )


class SearchResult(_Out):
    query: str
    mode: str
    hits: list[SearchHit] = Field(description="Best first, at most one per note.")
    index_building: bool = Field(
        description="True while the index is being built or updated: results may be incomplete."
    )
    stale: bool = Field(
        description="True when the answer comes from an index older than the notes on disk."
    )
    matches_well: bool = Field(
        default=True,
        description="False when no hit is likely to answer the query (see message).",
    )


class NoteText(_Out):
    path: str
    title: str
    tags: list[str]
    frontmatter: dict[str, Any] = Field(description="The note's YAML properties.")
    heading: str | None = Field(
        default=None, description="The heading path that was selected, if any."
    )
    start_line: int
    end_line: int = Field(description="Last line shown; 0 for an empty note.")
    total_lines: int
    text: str = Field(description="The lines shown, each prefixed with its line number and '| '.")
    truncated: bool = Field(description="True when the answer was cut at the size bound.")
    next_start_line: int | None = Field(
        default=None,
        description="When truncated: call read_note again with start_line set to this.",
    )
    outlinks: list[str] = Field(description="Notes this note links to (resolved paths).")
    backlinks: list[str] = Field(description="Notes that link to this note.")
    unresolved_links: list[str] = Field(description="Link targets that match no note.")


class LinkedNote(NoteRef):
    distance: int = Field(default=1, description="Link hops from the note, in either direction.")


class SimilarNote(NoteRef):
    score: float = Field(description="Cosine similarity of the notes' mean vectors, -1..1.")


class RelatedResult(_Out):
    path: str
    title: str
    outlinks: list[NoteRef]
    backlinks: list[NoteRef]
    embeds: list[NoteRef] = Field(description="Outlinks written as embeds (![[...]]).")
    unresolved_links: list[str]
    nearby: list[LinkedNote] = Field(description="Notes 2..depth link hops away, nearest first.")
    similar: list[SimilarNote] = Field(
        description="Notes closest in meaning, linked or not, most similar first."
    )


class NoteEntry(NoteRef):
    tags: list[str]
    date: str = Field(description="The note's date (frontmatter updated/date, else mtime), UTC.")


class NoteList(_Out):
    notes: list[NoteEntry]
    total: int = Field(description="Notes matching folder/tag over all pages.")
    next_cursor: str | None = Field(
        default=None,
        description="Pass as cursor (same sort) for the next page; null on the last page.",
    )
    index_building: bool


class TagEntry(BaseModel):
    tag: str = Field(description="Lower case, without '#'; pass to search's tags filter.")
    notes: int = Field(description="Notes with this tag or any tag below it (a/b counts for a).")
    direct: int = Field(description="Notes with exactly this tag.")


class TagList(_Out):
    tags: list[TagEntry]
    total: int = Field(description="Distinct tags, including parents of hierarchical tags.")
