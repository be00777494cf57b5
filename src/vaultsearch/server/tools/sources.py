"""The MCP tools for named sources: list_sources, read_source, reindex_target.

They publish no output schema (tools/list has a size budget all tools share); the
structured content is still sent, and the text half is its compact rendering.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

from mcp.types import CallToolResult, TextContent
from pydantic import Field

from vaultsearch.errors import IndexMissingError, QueryError
from vaultsearch.server.tools.core import agent_errors

if TYPE_CHECKING:
    from vaultsearch.app.live import LiveIndex
    from vaultsearch.app.vault import Vault


def _reply(data: dict[str, Any], text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


class SourceTools:
    def __init__(self, vault: Vault, live: LiveIndex) -> None:
        self.vault = vault
        self.live = live

    def list_sources(self) -> CallToolResult:
        with agent_errors():
            try:
                rows = self.vault.sources()
            except IndexMissingError:
                rows = []
            lines = [
                f"{r['name']} ({r['type']} {r.get('url') or r.get('path')}): {r['files']} files, "
                f"{r['chunks']} chunks, last indexed {r.get('last_indexed', 'never')}"
                + (f"; error: {r['error']}" if r.get("error") else "")
                for r in rows
            ]
            return _reply({"sources": rows}, "\n".join(lines) or "No sources indexed yet.")

    def read_source(
        self,
        chunk_id: Annotated[int | None, Field(description="A hit's chunk_id.")] = None,
        path: Annotated[str | None, Field(description="A path as search returns it.")] = None,
        start_line: Annotated[int | None, Field(ge=1)] = None,
        end_line: Annotated[int | None, Field(ge=1)] = None,
        heading: Annotated[str | None, Field(description="A heading, or 'A > B'.")] = None,
        qualified_name: Annotated[str | None, Field(description="Class.method")] = None,
        page: Annotated[int | None, Field(ge=1)] = None,
        context: Annotated[int, Field(ge=0, le=100)] = 0,
    ) -> CallToolResult:
        from vaultsearch.app.sourceread import read_source

        with agent_errors():
            r = read_source(
                self.vault, chunk_id, path, start_line, end_line, heading, qualified_name,
                page, context,
            )  # fmt: skip
            s = r.slice
            data: dict[str, Any] = {
                "path": r.path,
                "source": r.source,
                "kind": r.kind,
                "language": r.language,
                "title": r.title,
                "start_line": s.start_line,
                "end_line": s.end_line,
                "total_lines": s.total_lines,
                "text": s.text,
                "next_start_line": s.next_start_line,
            }
            for key in ("heading", "qualified_name", "page"):
                if getattr(r, key):
                    data[key] = getattr(r, key)
            head = {k: v for k, v in data.items() if k != "text" and v not in ("", None)}
            return _reply(data, json.dumps(head, ensure_ascii=False) + "\n" + s.text)

    def reindex_target(
        self,
        path: Annotated[str | None, Field(description="A file or folder path.")] = None,
        source: Annotated[str | None, Field(description="A source name.")] = None,
    ) -> CallToolResult:
        with agent_errors():
            if (path is None) == (source is None):
                raise QueryError("Pass either path or source.")
            if source is not None:
                names = self.vault.source_set.names
                if source not in names and source != "vault":
                    known = ", ".join(sorted({"vault", *names}))
                    raise QueryError(f"There is no source {source!r}; sources: {known}.")
                target = None if source == "vault" else f"{source}:"
            else:
                target = (path or "").strip().lstrip("/")
            started = self.live.request(paths=None if target is None else [target])
            what = f"source {source}" if source else str(target)
            shown = what if source else repr(what)
            message = (
                f"Started re-indexing {shown} in the background; index_status shows when done."
                if started
                else f"A run is going; {shown} is re-indexed by the run that follows it."
            )
            return _reply({"started": started, "target": what, "message": message}, message)
