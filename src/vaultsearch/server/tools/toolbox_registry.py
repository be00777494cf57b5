"""How the session, report and write tools are described to an agent and listed.

Descriptions stay under 250 characters each: tools/list is read by the model on every
turn. The write tools (reports included) are listed only when writes are enabled, so a
default server offers an agent no way to change the vault.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from vaultsearch.errors import VaultsearchError
from vaultsearch.server.tools.registry import READ_ONLY, plain_tool
from vaultsearch.server.tools.toolbox import SessionTools, template_schema
from vaultsearch.server.tools.writes import WriteTools

if TYPE_CHECKING:
    from vaultsearch.app.vault import Vault
    from vaultsearch.server.mcp.calllog import CallLog
    from vaultsearch.server.tools.core import VaultTools

WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)

READ_TOOLS = {
    "get_search_results": """Full text, file URI and lines of the hits of one search session
(session_id from search) or several (session_ids: merged, each passage once at its best
rank). Use it to read what you will cite.""",
    "list_search_results": """The search sessions still kept: id, query, hits, age in seconds.""",
    "get_template_schema": """Variables a report template expects, with a description each,
and the templates available (basic, paper, bullet_points, and the vault's own).""",
}
WRITE_TOOLS = {
    "create_rag_report": """Write a Markdown report from a template (get_template_schema) into
rag-reports/ (not indexed). variables.sources: [{path, start_line, end_line}], or
variables.session_ids to cite those searches. Returns the file's path.""",
    "write_note": """Create a note, or replace one with overwrite=true; searchable when this
returns.""",
    "edit_note": """Edit a note: append, prepend (after frontmatter), replace_section (body under
a heading) or find_replace (exact text; expected_count guards it). Searchable when this
returns.""",
    "move_note": """Rename or move a note and rewrite the wikilinks and Markdown links in other
notes that point to it (labels, headings and embeds kept).""",
    "delete_note": """Delete a note file from the vault.""",
    "upsert_documents": """Store raw documents as Markdown files (frontmatter + text) in the
documents folder, by id: new ids are created, known ones replaced. Searchable when this
returns.""",
    "delete_documents": """Delete stored documents by id; says which ids were not stored.""",
    "list_documents": """Stored documents (id, path, size), one page at a time (pass next_cursor
back as cursor).""",
}
_DESTRUCTIVE = {"write_note", "move_note", "delete_note", "upsert_documents", "delete_documents"}


def toolbox_tools(tools: VaultTools, log: CallLog, writes: bool) -> list[Tool]:
    sessions = SessionTools(tools, log)
    out = [plain_tool(getattr(sessions, n), n, d, READ_ONLY) for n, d in READ_TOOLS.items()]
    if writes:
        writer = WriteTools(tools, log)
        for name, text in WRITE_TOOLS.items():
            owner = sessions if name == "create_rag_report" else writer
            annotations = READ_ONLY if name == "list_documents" else (
                DESTRUCTIVE if name in _DESTRUCTIVE else WRITE
            )  # fmt: skip
            out.append(plain_tool(getattr(owner, name), name, text, annotations))
    return out


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


async def refuse_writes(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Middleware while writes are off: a call to a write tool (an agent may know them
    from another session) is refused with how to enable them, not "unknown tool"."""
    name = (ctx.params or {}).get("name") if ctx.method == "tools/call" else None
    if name not in WRITE_TOOLS:
        return await call_next(ctx)
    text = (
        f"{name} changes the vault, and writes are off on this server; the user can "
        "allow them with 'vaultsearch mcp --allow-writes' or [writes] enabled = true."
    )
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
