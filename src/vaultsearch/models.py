"""The small values that flow between parsing, indexing and search.

They are plain frozen dataclasses so that every stage can be tested on its own and
nothing downstream can mutate what an upstream stage produced.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal

LinkKind = Literal["wikilink", "markdown"]


@dataclass(frozen=True, slots=True)
class Heading:
    level: int
    text: str
    line: int
    """1-based line of the heading in the file."""
    parent: int | None = None
    """Index into ``ParsedNote.headings`` of the enclosing heading, ``None`` at top level."""


@dataclass(frozen=True, slots=True)
class Link:
    target: str
    """The note part of the link as written, without heading or block: ``folder/Note``."""
    embed: bool = False
    heading: str | None = None
    block: str | None = None
    label: str | None = None
    kind: LinkKind = "wikilink"
    line: int = 0


@dataclass(frozen=True, slots=True)
class Section:
    """A run of the note under one heading, down to the next heading of any level.

    Line numbers are 1-based and inclusive, character offsets index the whole file
    text (frontmatter included), so both point at the exact place in the editor.
    """

    heading_path: tuple[str, ...]
    start_line: int
    end_line: int
    start_char: int
    end_char: int
    qualified_name: str = ""
    """Code: the dotted name of the class, function or method (``Class.method``)."""
    node_type: str = ""
    """Code: the syntax node the section is (``function_definition``, ``class``...)."""
    page: int = 0
    """PDF: the 1-based page; 0 for sources without pages."""


SourceKind = Literal["note", "code", "pdf", "text"]


@dataclass(frozen=True, slots=True)
class ParsedNote:
    path: str
    """Vault-relative POSIX path: the note's identity."""
    text: str
    title: str
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    frontmatter: dict[str, Any] = field(default_factory=dict)
    links: tuple[Link, ...] = ()
    headings: tuple[Heading, ...] = ()
    sections: tuple[Section, ...] = ()
    date: datetime | None = None
    """From frontmatter (updated, modified, date, created); ``None`` means use the mtime."""
    warnings: tuple[str, ...] = ()
    """Problems the parser recovered from, e.g. invalid YAML: recorded, never fatal."""
    kind: SourceKind = "note"
    language: str = ""
    """Code: the grammar's language name (``python``, ``typescript``...)."""


@dataclass(frozen=True, slots=True)
class Chunk:
    ordinal: int
    heading_path: tuple[str, ...]
    start_line: int
    end_line: int
    start_char: int
    end_char: int
    text: str
    embed_text: str
    """What the model sees: title and heading path, then the text. Never ids or paths."""
    qualified_name: str = ""
    node_type: str = ""
    page: int = 0


@dataclass(frozen=True, slots=True)
class BranchPart:
    """One retrieval branch's evidence for a note: its best chunk there."""

    branch: str
    chunk_id: int
    rank: int
    """1-based rank of the note in this branch (notes ranked by their best chunk)."""
    raw: float
    """BM25 score or cosine of the best chunk (plus the share of the note's other chunks)."""
    normalised: float
    """``raw`` mapped into [0, 1] (convex fusion); 1 / (rrf_k + rank) for RRF."""
    weight: float
    contribution: float


@dataclass(frozen=True, slots=True)
class Passage:
    heading_path: str
    start_line: int
    end_line: int


@dataclass(frozen=True, slots=True)
class Explain:
    method: str
    """``convex`` or ``rrf``."""
    branches: tuple[BranchPart, ...] = ()
    name_added: float = 0.0
    """Added when the query is the note's title or one of its aliases."""
    graph_added: float = 0.0
    graph_from: str | None = None
    """The retrieved note whose link passed ``graph_added`` to this one; for a code file,
    the note whose passage names one of its definitions (``search.symbolrefs``)."""
    recency_multiplier: float = 1.0
    recency_added: float = 0.0
    """``(fused + name_added + graph_added) * (recency_multiplier - 1)``."""
    rerank_added: float = 0.0
    """What reranking changed: the reranked score is the best fused score plus
    ``rerank_weight`` x relevance plus the rest x this note's share of the best fused."""
    reranker: str = ""
    """Which reranker scored this note (``rerank endpoint <model>``), empty when none did."""
    relevance: float | None = None
    """The reranker's relevance for the note's best passage, 0..1."""
    rewrites: tuple[str, ...] = ()
    """The queries LLM query expansion searched besides the one typed (``passage: ...``
    for the hypothetical answer); their branches are named ``semantic@1`` and so on."""
    notes: tuple[str, ...] = ()
    """What did not go as configured: an expansion or rerank endpoint that failed."""
    embedded: str = ""
    """The query as the semantic branches embedded it when a misspelt word the vault
    lacks was corrected (``hibernaton swap`` -> ``hibernation swap``); else empty."""
    expansions: tuple[str, ...] = ()
    """Query words that matched nothing and were widened: ``canvs~canva``, ``canv*canvas``."""
    confidence: float = 0.0
    cosine: float | None = None
    """Confidence evidence: the best chunk's cosine (its branch's floor when not retrieved)."""
    coverage: float = 0.0
    """Confidence evidence: idf-weighted share of the query's content words present."""
    more: tuple[Passage, ...] = field(default=())
    """Other passages of the same note among the candidates."""

    @property
    def fused(self) -> float:
        return sum(p.contribution for p in self.branches)

    @property
    def total(self) -> float:
        return (
            self.fused + self.name_added + self.graph_added + self.recency_added + self.rerank_added
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["branches"] = {p.branch: _part_dict(p) for p in self.branches}
        out["fused"] = round(self.fused, 6)
        out["total"] = round(self.total, 6)
        for key in (
            "name_added", "graph_added", "recency_added", "rerank_added", "confidence", "coverage"
        ):  # fmt: skip
            out[key] = round(out[key], 6)
        for key in ("reranker", "relevance", "rewrites", "notes", "embedded"):  # only when set
            if out[key] in ("", None, (), []):
                del out[key]
        if self.relevance is not None:
            out["relevance"] = round(self.relevance, 6)
        return out


def _part_dict(p: BranchPart) -> dict[str, Any]:
    d = asdict(p)
    del d["branch"]
    for key in ("raw", "normalised", "weight", "contribution"):
        d[key] = round(d[key], 6)
    return d


@dataclass(frozen=True, slots=True)
class Hit:
    path: str
    title: str
    heading_path: str
    start_line: int
    end_line: int
    snippet: str
    score: float
    chunk_id: int = 0
    explain: Explain | None = None
    highlights: tuple[tuple[int, int], ...] = ()
    """Matched character ranges of ``snippet``, start inclusive, end exclusive."""
    confidence: float = 0.0
    """Estimated probability, 0..1, that this note answers the query (see ``confidence``)."""
    source: str = ""
    """The named source the file belongs to; empty for the vault itself."""
    kind: SourceKind = "note"
    language: str = ""
    qualified_name: str = ""
    node_type: str = ""
    page: int = 0

    def marked_snippet(self, open_mark: str = "«", close_mark: str = "»") -> str:
        return mark(self.snippet, self.highlights, open_mark, close_mark)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "title": self.title,
            "heading_path": self.heading_path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "snippet": self.snippet,
            "highlights": [list(h) for h in self.highlights],
            "score": round(self.score, 6),
            "confidence": round(self.confidence, 3),
        }
        for key in ("source", "language", "qualified_name", "node_type", "page"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.kind != "note":
            out["kind"] = self.kind
        if self.explain is not None:
            out["explain"] = self.explain.to_dict()
        return out


def mark(
    text: str, ranges: Sequence[Sequence[int]], open_mark: str = "«", close_mark: str = "»"
) -> str:
    """``text`` with each range between marks; « and » mean nothing to Markdown, so a
    marked snippet never turns into bold or breaks a link when shown as Markdown."""
    parts, pos = [], 0
    for s, e in ranges:
        parts += [text[pos:s], open_mark, text[s:e], close_mark]
        pos = e
    parts.append(text[pos:])
    return "".join(parts)


class SearchHits(list[Hit]):
    """A search's hits, best first, and what the search went without.

    ``degraded`` is None for a whole answer; otherwise one sentence naming the derived
    index that could not be read and what the hits are instead (hybrid fell back to
    keyword-only), so no surface passes a weaker answer off as the one asked for."""

    degraded: str | None = None

    def __init__(self, hits: Iterable[Hit] = (), degraded: str | None = None) -> None:
        super().__init__(hits)
        self.degraded = degraded
