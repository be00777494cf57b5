"""The small values that flow between parsing, indexing and search.

They are plain frozen dataclasses so that every stage can be tested on its own and
nothing downstream can mutate what an upstream stage produced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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


@dataclass(frozen=True, slots=True)
class StrategyScore:
    rank: int
    score: float


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
    explain: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "title": self.title,
            "heading_path": self.heading_path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "snippet": self.snippet,
            "score": round(self.score, 6),
        }
        if self.explain is not None:
            out["explain"] = self.explain
        return out
