"""What search, read_note, index_status and reindex return: the shape of their
structured content, dumped without ``None`` fields.

They are not published as output schemas (``lean`` drops them: they cost an agent more
bytes than they told it); the field descriptions document the wire for readers of this
code and of docs/MCP.md. The values come from ``vaultsearch.app.browse`` and ``Vault``;
converting here keeps the Python API free of pydantic. The browsing tools answer with
``vaultsearch.app.answer.Answer`` data instead, which the CLI prints too.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


def _unset(value: Any) -> bool:
    return not value


class _Out(BaseModel):
    message: str | None = Field(
        default=None,
        description="Anything the caller should know about this answer, e.g. how to go on.",
    )


class NoteRef(BaseModel):
    path: str = Field(description="Vault-relative path: pass it to read_note or related.")
    title: str


class SearchHit(NoteRef):
    heading_path: str | None = Field(default=None, description="Headings above the passage.")
    start_line: int = Field(description="First line of the passage (1-based, file lines).")
    end_line: int = Field(description="Last line; read_note(path, start_line, end_line) shows it.")
    snippet: str | None = Field(default=None, description="The best sentences of the passage.")
    highlights: list[list[int]] | None = Field(
        default=None,
        description="[start, end) character ranges of snippet that match the query.",
    )
    text: str | None = Field(default=None, description="With full_text: the passage's lines.")
    score: float = Field(description="Fused relevance; only the order among hits matters.")
    confidence: float = Field(
        default=0.0,
        description="Estimated probability (0-1) that this note answers the query; "
        "matches_well says whether the first hit is likely to.",
    )
    chunk_id: int | None = Field(default=None, description="The passage's chunk in the index.")
    uri: str | None = Field(
        default=None, description="The whole file as a resource: note://path or code://source/path."
    )
    chunk_uri: str | None = Field(
        default=None,
        description="Just this passage as a resource (resources/read): chunk://start-end/path.",
    )
    passages: list[dict[str, Any]] | None = Field(
        default=None, description="With chunks > 1: the note's next best passages."
    )
    explain: dict[str, Any] | None = Field(
        default=None,
        description="With explain=true: each branch's rank, score and contribution, the "
        "graph, recency and rerank parts (they add up to score), widened typos.",
    )
    source: str | None = None
    kind: str | None = None
    language: str | None = None
    qualified_name: str | None = None
    node_type: str | None = None
    page: int | None = None


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
        description="False when the first hit answers with probability below 0.29 "
        "(calibrated on judged queries; message gives it): read it before relying on it.",
    )
    session_id: str | None = Field(
        default=None,
        description="Pass to get_search_results for the hits' full text (kept a while).",
    )
    degraded: str | None = Field(
        default=None,
        description="Set when a damaged index file left the search without part of it "
        "(e.g. hybrid answered keyword-only): what is missing and the repair.",
    )


class NoteText(_Out):
    path: str
    title: str
    tags: list[str] | None = None
    frontmatter: dict[str, Any] | None = Field(
        default=None, description="The note's YAML properties."
    )
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
    outlinks: list[str] | None = Field(
        default=None, description="Notes this note links to (resolved paths)."
    )
    backlinks: list[str] | None = Field(default=None, description="Notes that link to this note.")
    unresolved_links: list[str] | None = Field(
        default=None, description="Link targets that match no note."
    )
