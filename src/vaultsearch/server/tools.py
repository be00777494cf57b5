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

from vaultsearch import listing
from vaultsearch.answer import Answer
from vaultsearch.browse import Browser
from vaultsearch.errors import IndexMissingError, QueryError, VaultsearchError
from vaultsearch.freshness import ChangeProbe, freshness
from vaultsearch.models import SearchHits
from vaultsearch.search.confidence import weak_answer
from vaultsearch.server import render
from vaultsearch.server.hits import shape_hit
from vaultsearch.server.schemas import (
    NoteText,
    SearchHit,
    SearchResult,
)
from vaultsearch.server.sessions import SearchSessions, SessionHit
from vaultsearch.sourceread import passage_lines

if TYPE_CHECKING:
    from vaultsearch.indexing.live import LiveIndex
    from vaultsearch.vault import Vault

M = TypeVar("M", bound=BaseModel)
Scalar = str | int | float | bool
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

    def search(
        self,
        query: Annotated[str, Field(min_length=1, description="Words or a question.")],
        top_k: Annotated[int, Field(ge=1, le=100)] = 10,
        mode: Literal["hybrid", "keyword", "semantic"] = "hybrid",
        tags: Annotated[
            list[str] | str | None, Field(description="Notes with all these tags.")
        ] = None,
        folders: Annotated[
            list[str] | str | None,
            Field(description="Any of: name, /from/root, glob."),
        ] = None,
        after: Annotated[str | None, Field(description="Dated on/after, YYYY-MM-DD.")] = None,
        before: Annotated[str | None, Field(description="Dated before, YYYY-MM-DD.")] = None,
        where: Annotated[
            dict[str, Scalar | list[Scalar]] | None,
            Field(description="Frontmatter field: value or [values]."),
        ] = None,
        min_score: Annotated[float | None, Field(description="Drop hits scoring below.")] = None,
        chunks: Annotated[int, Field(ge=1, le=5, description="Passages per note.")] = 1,
        snippet_chars: Annotated[
            int, Field(ge=0, le=2000, description="Snippet length; 0 for none.")
        ] = 300,
        full_text: Annotated[bool, Field(description="Whole passages, not snippets.")] = False,
        explain: Annotated[bool, Field(description="Add score parts.")] = False,
        sources: Annotated[list[str] | None, Field(description="Source names; 'vault'.")] = None,
        kinds: Annotated[
            list[Literal["note", "code", "pdf", "text"]] | None, Field(description="File kinds.")
        ] = None,
        path_prefix: Annotated[list[str] | None, Field(description="Path starts.")] = None,
        files: Annotated[list[str] | None, Field(description="Exact paths.")] = None,
    ) -> Annotated[CallToolResult, SearchResult]:
        with agent_errors():
            self._check_fields(where)
            tags = [tags] if isinstance(tags, str) else tags  # agents often pass just one
            folders = [folders] if isinstance(folders, str) else folders
            building, stale, message = self.index_state()
            try:
                hits = self.vault.search(
                    query, top_k=top_k, mode=mode, tags=tags, folders=folders, after=after,
                    before=before, where=where, explain=explain or chunks > 1, min_score=min_score,
                    sources=sources, kinds=list(kinds) if kinds else None,
                    path_prefix=path_prefix, files=files,
                )  # fmt: skip
            except IndexMissingError:
                hits, building, stale = SearchHits(), True, False
                message = "No index exists yet; it is being built now. Try again shortly."
            weak = None if building else weak_answer([h.confidence for h in hits])
            message = " ".join(m for m in (hits.degraded, message) if m) or None
            session = self.sessions.add(
                query,
                mode,
                (
                    SessionHit(h.path, h.title, h.heading_path, h.start_line, h.end_line,
                               h.score, rank, h.chunk_id)
                    for rank, h in enumerate(hits, 1)
                ),
            )  # fmt: skip
            result = SearchResult(
                query=query,
                mode=mode,
                hits=[
                    SearchHit(
                        **shape_hit(
                            h,
                            self._lines(h.path) if full_text or chunks > 1 else None,
                            chunks,
                            snippet_chars,
                            full_text,
                            explain,
                        )
                    )
                    for h in hits
                ],
                index_building=building,
                stale=stale,
                matches_well=weak is None,
                message=" ".join(m for m in (message, weak) if m) or None,
                session_id=session.id,
                degraded=hits.degraded,
            )
            return reply(result, render.search)

    def _lines(self, path: str) -> list[str] | None:
        """The note's file lines for passages; None when it went away since indexing."""
        try:
            return passage_lines(self.vault, self.browser, path)[1]
        except VaultsearchError:
            return None

    def _check_fields(self, where: dict[str, Any] | None) -> None:
        known = self.browser.frontmatter_fields() if where else None
        if known is None or where is None:
            return
        unknown = sorted(set(where) - known)
        if unknown:
            listed = ", ".join(sorted(known)[:40])
            raise QueryError(
                f"No note has the frontmatter field(s) {', '.join(unknown)}; "
                f"fields in this vault: {listed}."
            )

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
