"""The MCP tools: thin adapters from an agent's arguments to ``Vault`` and ``Browser``.

Each tool answers with structured content (without nulls; no output schema is
published, see ``lean``) and a compact text rendering. A ``VaultsearchError`` becomes
a tool error carrying its one-sentence message and fix, so an agent can correct the
call. How the tools are described to the agent and registered is in ``registry``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from vaultsearch.app import listing
from vaultsearch.app.answer import Answer
from vaultsearch.app.browse import Browser
from vaultsearch.app.freshness import ChangeProbe, freshness
from vaultsearch.app.searchanswer import SearchAnswer, lines_reader
from vaultsearch.errors import IndexMissingError, VaultsearchError
from vaultsearch.models import SearchHits
from vaultsearch.search.confidence import weak_answer
from vaultsearch.search.request import SearchRequest
from vaultsearch.server.tools import render
from vaultsearch.server.tools.schemas import NoteText, SearchResult
from vaultsearch.server.tools.searchargs import request_signature
from vaultsearch.server.tools.sessions import SearchSessions, SessionHit

if TYPE_CHECKING:
    from vaultsearch.app.live import LiveIndex
    from vaultsearch.app.vault import Vault

M = TypeVar("M", bound=BaseModel)
LINKS_SHOWN = 50
"""Links of each kind a read_note answer shows; the links tool pages through all."""
PathArg = Annotated[str, Field(description="Vault-relative, as search returns it.")]


@contextmanager
def agent_errors() -> Iterator[None]:
    """Our errors are meant for the caller: pass their message and fix on as a tool
    error (the SDK would hide anything else behind a generic message)."""
    try:
        yield
    except VaultsearchError as exc:
        raise ToolError(str(exc)) from exc


def answered(a: Answer) -> CallToolResult:
    """An ``Answer`` as a tool result: its data structured, its text as text."""
    return CallToolResult(
        content=[TextContent(type="text", text=a.text)], structured_content=a.data
    )


def reply(result: M, text: Callable[[M], str]) -> CallToolResult:
    """Both halves of an answer from one model, so the text never says something the
    structured content does not."""
    return CallToolResult(
        content=[TextContent(type="text", text=text(result))],
        structured_content=result.model_dump(mode="json", exclude_none=True),
    )


class VaultTools:
    """The tools of one server. Each method's signature is the argument schema the SDK
    publishes, so the ``Field`` descriptions are written for the agent."""

    def __init__(self, vault: Vault, live: LiveIndex, watching: Callable[[], bool]) -> None:
        self.vault = vault
        self.live = live
        self.browser = Browser(vault)
        self.watching = watching
        self.sessions = SearchSessions(vault.config.sessions.max_sessions)
        self.changes = ChangeProbe(vault)

    def index_state(self) -> tuple[bool, bool, str | None]:
        """(building, stale, message) for answers read from the committed index."""
        f = freshness(self.vault, self.live.state, self.watching(), self.changes)
        return f.building, f.stale, f.message

    def search(self, **args: Any) -> CallToolResult:
        """The arguments are ``SearchRequest``'s fields (``request_signature`` below)."""
        with agent_errors():
            request = SearchRequest(**args)
            building, stale, message = self.index_state()
            try:
                answer = self.vault.search_answer(request)
            except IndexMissingError:
                answer = SearchAnswer(request, SearchHits())
                building, stale = True, False
                message = "No index exists yet; it is being built now. Try again shortly."
            hits = answer.hits
            weak = None if building else weak_answer([h.confidence for h in hits])
            message = " ".join(m for m in (hits.degraded, message) if m) or None
            session = self.sessions.add(
                request.query,
                request.mode,
                (
                    SessionHit(h.path, h.title, h.heading_path, h.start_line, h.end_line,
                               h.score, rank, h.chunk_id)
                    for rank, h in enumerate(hits, 1)
                ),
            )  # fmt: skip
            result = SearchResult(
                **answer.to_dict(lines_reader(self.vault, self.browser)),
                index_building=building,
                stale=stale,
                matches_well=weak is None,
                message=" ".join(m for m in (message, weak) if m) or None,
                session_id=session.id,
            )
            return reply(result, render.search)

    def read_note(
        self,
        path: PathArg,
        heading: Annotated[str | None, Field(description="Section: heading or 'A > B'.")] = None,
        start_line: Annotated[int | None, Field(ge=1)] = None,
        end_line: Annotated[int | None, Field(ge=1)] = None,
        context: Annotated[int, Field(ge=0, le=100, description="Lines around.")] = 0,
        frontmatter: Annotated[bool, Field(description="Add tags and properties.")] = False,
        links: Annotated[bool, Field(description="Add outlinks and backlinks.")] = False,
    ) -> Annotated[CallToolResult, NoteText]:
        with agent_errors():
            r = self.browser.read_note(path, heading, start_line, end_line, context)
            s = r.slice
            cut: list[str] = []

            def capped(label: str, items: tuple[str, ...]) -> list[str] | None:
                if not links:
                    return None
                if len(items) > LINKS_SHOWN:
                    cut.append(f"{label} {LINKS_SHOWN} of {len(items)}")
                return list(items[:LINKS_SHOWN])

            result = NoteText(
                path=r.path,
                title=r.title,
                tags=list(r.tags) if frontmatter else None,
                frontmatter=r.frontmatter if frontmatter else None,
                heading=r.heading,
                start_line=s.start_line,
                end_line=s.end_line,
                total_lines=s.total_lines,
                text=s.text,
                truncated=s.next_start_line is not None,
                next_start_line=s.next_start_line,
                outlinks=capped("outlinks", r.outlinks),
                backlinks=capped("backlinks", r.backlinks),
                unresolved_links=capped("unresolved links", r.unresolved),
            )
            notes = [
                r.partial,
                None if r.indexed or not links else "Not in the index yet: links are not known.",
                f"Shown: {', '.join(cut)}; the links tool lists them all." if cut else None,
            ]
            result.message = " ".join(n for n in notes if n) or None
            return reply(result, render.read_note)

    def related(
        self,
        path: PathArg,
        depth: Annotated[int, Field(ge=1, le=3, description="Link hops to follow.")] = 1,
        limit: Annotated[int, Field(ge=1, le=100, description="Notes per list.")] = 10,
    ) -> CallToolResult:
        with agent_errors():
            return answered(listing.related(self.browser, path, depth, limit))

    def list_notes(
        self,
        folder: Annotated[str | None, Field(description="Name, /from/root or glob.")] = None,
        tag: str | None = None,
        sort: Annotated[
            Literal["path", "date"], Field(description="path A-Z, or date newest first.")
        ] = "path",
        limit: Annotated[int, Field(ge=1, le=500)] = 50,
        cursor: Annotated[str | None, Field(description="next_cursor of the last page.")] = None,
    ) -> CallToolResult:
        with agent_errors():
            return answered(listing.list_notes(self.browser, folder, tag, sort, limit, cursor))

    def list_tags(
        self,
        prefix: Annotated[str | None, Field(description="Only this tag and tags below it.")] = None,
        limit: Annotated[int, Field(ge=1, le=2000)] = 200,
    ) -> CallToolResult:
        with agent_errors():
            return answered(listing.list_tags(self.browser, prefix, limit))


request_signature(VaultTools.search, Annotated[CallToolResult, SearchResult])
