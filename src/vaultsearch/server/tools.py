"""The MCP tools: thin adapters from an agent's arguments to ``Vault`` and ``Browser``.

Each tool answers with structured content (checked against its schema) and a compact
text rendering. A ``VaultsearchError`` becomes a tool error carrying its one-sentence
message and fix, so an agent can correct the call. How the tools are described to the
agent and registered is in ``registry``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from vaultsearch.browse import Browser, Linked, page_notes, tag_counts
from vaultsearch.errors import IndexMissingError, QueryError, VaultsearchError
from vaultsearch.search.confidence import weak_answer
from vaultsearch.server import render
from vaultsearch.server.schemas import (
    LinkedNote,
    NoteEntry,
    NoteList,
    NoteRef,
    NoteText,
    RelatedResult,
    SearchHit,
    SearchResult,
    SimilarNote,
    TagEntry,
    TagList,
)

if TYPE_CHECKING:
    from vaultsearch.indexing.live import LiveIndex
    from vaultsearch.vault import Vault

M = TypeVar("M", bound=BaseModel)
Scalar = str | int | float | bool
PathArg = Annotated[
    str, Field(description="Vault-relative note path as search or list_notes return it.")
]


@contextmanager
def agent_errors() -> Iterator[None]:
    """Our errors are meant for the caller: pass their message and fix on as a tool
    error (the SDK would hide anything else behind a generic message)."""
    try:
        yield
    except VaultsearchError as exc:
        raise ToolError(str(exc)) from exc


def reply(result: M, text: Callable[[M], str]) -> CallToolResult:
    """Both halves of an answer from one model, so the text never says something the
    structured content does not."""
    return CallToolResult(
        content=[TextContent(type="text", text=text(result))],
        structured_content=result.model_dump(mode="json"),
    )


class VaultTools:
    """The tools of one server. Each method's signature is the argument schema the SDK
    publishes, so the ``Field`` descriptions are written for the agent."""

    def __init__(self, vault: Vault, live: LiveIndex, watching: Callable[[], bool]) -> None:
        self.vault = vault
        self.live = live
        self.browser = Browser(vault)
        self.watching = watching

    def index_state(self) -> tuple[bool, bool, str | None]:
        """(building, stale, message) for answers read from the committed index."""
        s = self.live.state
        building = s.indexing or (s.role != "reader" and s.runs == 0)
        if s.last_error:
            msg = f"The last index update failed ({s.last_error}); answers use the last good index."
            return building, True, msg
        if building:
            return True, True, "The index is being updated; answers come from what is indexed."
        return False, False, None

    def search(
        self,
        query: Annotated[str, Field(min_length=1, description="Words or a question.")],
        top_k: Annotated[int, Field(ge=1, le=100, description="Notes to return.")] = 10,
        mode: Annotated[
            Literal["hybrid", "keyword", "semantic"],
            Field(description="hybrid: meaning+words; keyword: exact words, fastest; semantic."),
        ] = "hybrid",
        tags: Annotated[
            list[str] | str | None, Field(description="Notes with all these tags.")
        ] = None,
        folders: Annotated[
            list[str] | str | None,
            Field(description="Notes in any of these: name, /from/root, glob."),
        ] = None,
        after: Annotated[str | None, Field(description="Dated on/after, YYYY-MM-DD.")] = None,
        before: Annotated[str | None, Field(description="Dated before, YYYY-MM-DD.")] = None,
        where: Annotated[
            dict[str, Scalar | list[Scalar]] | None,
            Field(description="Frontmatter field -> value, or list of accepted values."),
        ] = None,
        explain: Annotated[bool, Field(description="Add each strategy's rank/score.")] = False,
    ) -> Annotated[CallToolResult, SearchResult]:
        with agent_errors():
            self._check_fields(where)
            tags = [tags] if isinstance(tags, str) else tags  # agents often pass just one
            folders = [folders] if isinstance(folders, str) else folders
            building, stale, message = self.index_state()
            try:
                hits = self.vault.search(
                    query, top_k=top_k, mode=mode, tags=tags, folders=folders,
                    after=after, before=before, where=where, explain=explain,
                )  # fmt: skip
            except IndexMissingError:
                hits, building, stale = [], True, False
                message = "No index exists yet; it is being built now. Try again shortly."
            weak = None if building else weak_answer([h.confidence for h in hits])
            result = SearchResult(
                query=query,
                mode=mode,
                hits=[SearchHit(**h.to_dict()) for h in hits],
                index_building=building,
                stale=stale,
                matches_well=weak is None,
                message=" ".join(m for m in (message, weak) if m) or None,
            )
            return reply(result, render.search)

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
        heading: Annotated[
            str | None, Field(description="Read this section: heading text or 'A > B'.")
        ] = None,
        start_line: Annotated[int | None, Field(ge=1, description="First line to show.")] = None,
        end_line: Annotated[int | None, Field(ge=1, description="Last line to show.")] = None,
        context: Annotated[int, Field(ge=0, le=100, description="Extra lines around.")] = 0,
    ) -> Annotated[CallToolResult, NoteText]:
        with agent_errors():
            r = self.browser.read_note(path, heading, start_line, end_line, context)
            s = r.slice
            result = NoteText(
                path=r.path,
                title=r.title,
                tags=list(r.tags),
                frontmatter=r.frontmatter,
                heading=r.heading,
                start_line=s.start_line,
                end_line=s.end_line,
                total_lines=s.total_lines,
                text=s.text,
                truncated=s.next_start_line is not None,
                next_start_line=s.next_start_line,
                outlinks=list(r.outlinks),
                backlinks=list(r.backlinks),
                unresolved_links=list(r.unresolved),
                message=r.partial
                or (None if r.indexed else "Not in the index yet: links are not known."),
            )
            return reply(result, render.read_note)

    def related(
        self,
        path: PathArg,
        depth: Annotated[int, Field(ge=1, le=3, description="Link hops to follow.")] = 1,
        limit: Annotated[int, Field(ge=1, le=50, description="Similar notes to return.")] = 10,
    ) -> Annotated[CallToolResult, RelatedResult]:
        with agent_errors():
            r = self.browser.related(path, depth, limit)
            if r is None:
                rel = self.browser.find(path)[0]
                result = RelatedResult(
                    path=rel, title=rel, outlinks=[], backlinks=[], embeds=[],
                    unresolved_links=[], nearby=[], similar=[],
                    message="No index exists yet; it is being built. Try again shortly.",
                )  # fmt: skip
                return reply(result, render.related)

            def refs(items: tuple[Linked, ...]) -> list[NoteRef]:
                return [NoteRef(path=x.path, title=x.title) for x in items]

            result = RelatedResult(
                path=r.path,
                title=r.title,
                outlinks=refs(r.outlinks),
                backlinks=refs(r.backlinks),
                embeds=refs(r.embeds),
                unresolved_links=list(r.unresolved),
                nearby=[
                    LinkedNote(path=x.path, title=x.title, distance=x.distance) for x in r.nearby
                ],
                similar=[SimilarNote(path=x.path, title=x.title, score=x.score) for x in r.similar],
            )
            return reply(result, render.related)

    def list_notes(
        self,
        folder: Annotated[str | None, Field(description="Name, /from/root or glob.")] = None,
        tag: Annotated[str | None, Field(description="Only notes with this tag.")] = None,
        sort: Annotated[
            Literal["path", "date"], Field(description="path A-Z, or date newest first.")
        ] = "path",
        limit: Annotated[int, Field(ge=1, le=500, description="Notes per page.")] = 50,
        cursor: Annotated[str | None, Field(description="next_cursor of the last page.")] = None,
    ) -> Annotated[CallToolResult, NoteList]:
        with agent_errors():
            notes, indexed = self.browser.notes()
            page = page_notes(notes, folder, tag, sort, limit, cursor)
            result = NoteList(
                notes=[NoteEntry(**asdict(n)) for n in page.notes],
                total=page.total,
                next_cursor=page.next_cursor,
                index_building=not indexed,
                message=None if indexed else "No index yet: files listed without tags or titles.",
            )
            return reply(result, render.list_notes)

    def list_tags(
        self,
        prefix: Annotated[str | None, Field(description="Only this tag and tags below it.")] = None,
        limit: Annotated[int, Field(ge=1, le=2000, description="Tags to return.")] = 200,
    ) -> Annotated[CallToolResult, TagList]:
        with agent_errors():
            notes, indexed = self.browser.notes()
            rows = tag_counts(notes)
            if prefix:
                p = prefix.lower().lstrip("#").rstrip("/")
                rows = [t for t in rows if t.tag == p or t.tag.startswith(p + "/")]
            result = TagList(
                tags=[TagEntry(tag=t.tag, notes=t.notes, direct=t.direct) for t in rows[:limit]],
                total=len(rows),
                message=None if indexed else "No index exists yet; tags are known after it.",
            )
            return reply(result, render.list_tags)
