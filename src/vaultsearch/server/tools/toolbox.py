"""Search sessions, report templates and reports as MCP tools.

``search`` keeps each answer as a session; ``get_search_results`` turns one or several
sessions into the passages' full text (one entry per chunk, at its best rank), which is
what a report cites. Reports are writes: their tool is listed only when writes are on.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from vaultsearch.app.sourceread import passage_lines
from vaultsearch.errors import QueryError, VaultsearchError
from vaultsearch.reports import library
from vaultsearch.reports.report import cite, file_name_for, write_report
from vaultsearch.server.tools.core import agent_errors
from vaultsearch.server.tools.resources import note_uri
from vaultsearch.server.tools.sessions import MergedHit, Session, merge_sessions
from vaultsearch.server.tools.syncindex import index_paths

if TYPE_CHECKING:
    from vaultsearch.app.vault import Vault
    from vaultsearch.server.mcp.calllog import CallLog
    from vaultsearch.server.tools.core import VaultTools

_MAX_TEXT = 8000
"""Characters of one passage's text; a passage is a chunk or a few, rarely more."""


def answer(data: dict[str, Any], text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


class SessionTools:
    def __init__(self, tools: VaultTools, log: CallLog) -> None:
        self.tools = tools
        self.vault = tools.vault
        self.log = log

    # --- sessions -------------------------------------------------------------------
    def _sessions(self, session_id: str | None, session_ids: list[str] | None) -> list[Session]:
        ids = [*([session_id] if session_id else []), *(session_ids or [])]
        if not ids:
            raise QueryError(
                "Pass session_id or session_ids as search or list_search_results give them."
            )
        found, missing = [], []
        for i in dict.fromkeys(ids):
            s = self.tools.sessions.get(i)
            if s is None:
                missing.append(i)
            else:
                found.append(s)
        if missing:
            live = ", ".join(s.id for s in self.tools.sessions.live()[:10]) or "none"
            raise QueryError(
                f"No search session {', '.join(map(repr, missing))} (expired or never made); "
                f"live sessions: {live}. Search again for a new one."
            )
        return found

    def _passage(self, m: MergedHit) -> dict[str, Any]:
        h = m.hit
        row: dict[str, Any] = {
            "rank": h.rank,
            "path": h.path,
            "title": h.title,
            "start_line": h.start_line,
            "end_line": h.end_line,
            "file_uri": self._file_uri(h.path),
            "score": round(h.score, 6),
            "sessions": list(m.sessions),
        }
        if h.heading_path:
            row["heading_path"] = h.heading_path
        try:
            lines = passage_lines(self.vault, self.tools.browser, h.path)[1]
            row["text"] = "\n".join(lines[h.start_line - 1 : h.end_line])[:_MAX_TEXT]
            if h.end_line > len(lines):
                row["message"] = "The note is shorter now than when it was searched."
        except QueryError as exc:
            row["text"], row["message"] = "", f"Not readable now: {exc}"
        return row

    def get_search_results(
        self,
        session_id: Annotated[str | None, Field(description="A session id from search.")] = None,
        session_ids: Annotated[
            list[str] | None, Field(description="Several session ids: merged, deduplicated.")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=100, description="Passages to return.")] = 20,
    ) -> CallToolResult:
        with agent_errors():
            merged = merge_sessions(self._sessions(session_id, session_ids))
            rows = [self._passage(m) for m in merged[:limit]]
            data = {"results": rows, "total": len(merged)}
            out = [f"{len(rows)} of {len(merged)} passages"]
            for i, r in enumerate(rows, 1):
                head = f"[{i}] {r['path']}:{r['start_line']}-{r['end_line']}  {r['title']}"
                out += [
                    head + (f"  [{r['heading_path']}]" if "heading_path" in r else ""),
                    r["text"],
                ]
            return answer(data, "\n".join(out))

    def list_search_results(self) -> CallToolResult:
        with agent_errors():
            store = self.tools.sessions
            rows = [
                {"session_id": s.id, "query": s.query, "mode": s.mode, "hits": len(s.hits),
                 "age_seconds": round(store.age(s), 1)}
                for s in store.live()
            ]  # fmt: skip
            text = "\n".join(
                [f"{len(rows)} sessions (newest use first, at most {store.max_sessions} kept)"]
                + [
                    f"{r['session_id']}  {r['hits']} hits  {r['age_seconds']}s  {r['query']!r}"
                    for r in rows
                ]
            )
            return answer({"sessions": rows}, text)

    # --- templates and reports ------------------------------------------------------
    def get_template_schema(
        self,
        name: Annotated[
            str | None, Field(description="basic, paper, bullet_points or a vault template.")
        ] = None,
    ) -> CallToolResult:
        with agent_errors():
            data = template_schema(self.vault.root, name or self.vault.config.reports.template)
            data["templates"] = library.names(self.vault.root)
            lines = [f"{data['name']}: {data['description']} ({data['origin']})"]
            for v, about in data["variables"].items():
                need = "required" if about["required"] else "optional"
                lines.append(f"- {v} ({need}): {about['description']}")
            lines.append("templates: " + ", ".join(data["templates"]))
            return answer(data, "\n".join(lines))

    def create_rag_report(
        self,
        variables: Annotated[
            dict[str, Any],
            Field(
                description="Template variables (get_template_schema); session_ids fills sources."
            ),
        ],
        template: Annotated[
            str | None, Field(description="Template name; default from config.")
        ] = None,
        output_dir: Annotated[
            str | None, Field(description="Vault folder; default rag-reports.")
        ] = None,
        file_name: Annotated[
            str | None, Field(description="File name; default dated slug.")
        ] = None,
    ) -> CallToolResult:
        with agent_errors():
            config = self.vault.config.reports
            name = template or config.template
            values = dict(variables)
            ids = values.pop("session_ids", None)
            if "sources" not in values and ids:
                if not isinstance(ids, list):
                    raise QueryError("session_ids must be a list of session ids from search.")
                merged = merge_sessions(self._sessions(None, [str(i) for i in ids]))
                values["sources"] = [
                    {"path": m.hit.path, "start_line": m.hit.start_line, "end_line": m.hit.end_line,
                     "title": m.hit.title, "heading_path": m.hit.heading_path}
                    for m in merged[:20]
                ]  # fmt: skip
            if "sources" in values:
                values["sources"] = cite(values["sources"], self._read_lines)
            now = datetime.now(UTC)
            values["generated_at"] = now.isoformat(timespec="seconds")
            text = library.render(self.vault.root, name, values, config)
            title = str(values.get("title") or name)
            rel = write_report(
                self.vault.root,
                output_dir or config.folder,
                file_name_for(now, title, file_name),
                text,
                self.vault.index_dir,
            )
            self.log.write({"event": "write", "tool": "create_rag_report", "paths": [rel]})
            pending = index_paths(self.tools.live, [rel])
            sources = len(values.get("sources") or [])
            data = {"path": rel, "uri": note_uri(rel), "template": library.check_name(name),
                    "sources": sources, "bytes": len(text.encode("utf-8"))}  # fmt: skip
            if pending:
                data["message"] = pending
            return answer(data, f"wrote {rel} ({sources} sources, template {data['template']})")

    def _read_lines(self, path: str) -> tuple[str, list[str]]:
        return passage_lines(self.vault, self.tools.browser, path)

    def _file_uri(self, path: str) -> str:
        real = self.vault.source_set.file_path(path)
        return (real if real is not None else self.vault.root / path).as_uri()


def template_schema(vault_root: Path, name: str) -> dict[str, Any]:
    return library.info(vault_root, name).to_dict()


def register_template_resources(server: MCPServer[Any], vault: Vault) -> None:
    """``template://{name}/schema`` and ``template://current/schema`` (the configured
    default): the same JSON as get_template_schema, for clients that read resources."""

    @server.resource(
        "template://current/schema",
        name="current_template_schema",
        description="Variables of the default report template (reports.template).",
        mime_type="application/json",
    )
    def current_schema() -> str:
        return _schema_json(vault, vault.config.reports.template)

    @server.resource(
        "template://{name}/schema",
        name="template_schema",
        description="Variables a report template expects, with a description each.",
        mime_type="application/json",
    )
    def named_schema(name: str) -> str:
        return _schema_json(vault, name)


def _schema_json(vault: Vault, name: str) -> str:
    try:
        return json.dumps(template_schema(vault.root, name), ensure_ascii=False, indent=1)
    except VaultsearchError as exc:
        raise ResourceNotFoundError(str(exc)) from exc
