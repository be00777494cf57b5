"""Every MCP tool in one table: its name, the group that answers it, what it may change,
and the description an agent reads to choose it. Adding a tool is a method in its group's
module and one row here.

The descriptions are what a model reads to choose a tool, so they say what each is for
and when to use which, in at most 250 characters (``lean`` keeps the listing small).
Unknown argument names are refused rather than ignored (the SDK ignores them by default)
because a silently dropped filter looks like a wrong answer. The write tools are listed
only when writes are enabled, so a default server offers an agent no way to change the
vault; a call to one anyway is refused with how to enable them (``refuse_writes``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ConfigDict, model_validator

from vaultsearch.server.tools.lean import lean

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
REINDEX = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    group: str
    """Which object answers it (a key of the ``groups`` given to ``build_tools``)."""
    annotations: ToolAnnotations
    description: str
    structured: bool = False
    """With an output schema; the others answer text only, since a schema would cost more
    of the agent's context in tools/list than the answers it describes."""
    needs_writes: bool = False


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "search",
        "vault",
        READ,
        """Find passages about something; start here. Gives the best passage per note (path,
lines, snippet). mode: hybrid, keyword (exact words, fastest) or semantic. Filters: tags,
folders, after/before (date), where (frontmatter).""",
        structured=True,
    ),
    ToolSpec(
        "read_note",
        "vault",
        READ,
        """Read a note or part of it, numbered: a hit's start_line/end_line (+context) or
a heading. Long notes are cut (next_start_line goes on). Frontmatter and links only on request.""",
        structured=True,
    ),
    ToolSpec(
        "related",
        "vault",
        READ,
        """Explore around a note: its links, notes depth hops away and notes close in
meaning even when unlinked.""",
        structured=True,
    ),
    ToolSpec(
        "list_notes",
        "vault",
        READ,
        """Browse notes by folder or tag, by path or date (newest first: recent notes), a
page at a time (pass next_cursor back as cursor).""",
        structured=True,
    ),
    ToolSpec(
        "list_tags",
        "vault",
        READ,
        """Tags with note counts, most used first (a/b counts for a too), to choose
search's tags filter.""",
        structured=True,
    ),
    ToolSpec(
        "multi_get",
        "nav",
        READ,
        """Read several notes or ranges at once (PATH, PATH:LINE or PATH:LINE:COUNT), up
to max_chars in all, e.g. the top search hits.""",
        structured=True,
    ),
    ToolSpec(
        "links",
        "nav",
        READ,
        """A note's backlinks or outlinks, broken links, orphans, the most linked notes, or
the shortest link path from path to target.""",
        structured=True,
    ),
    ToolSpec(
        "outline",
        "nav",
        READ,
        """A note's headings with each section's lines, to pick what to read.""",
        structured=True,
    ),
    ToolSpec(
        "folders",
        "nav",
        READ,
        """Folders with note counts, to see how the vault is organised.""",
        structured=True,
    ),
    ToolSpec(
        "reindex",
        "control",
        REINDEX,
        """Update the index from the files now: all, or one path (file or folder); full=true
re-parses everything. Rarely needed: the vault is watched. With a progress token the call waits
and reports progress.""",
        structured=True,
    ),
    ToolSpec(
        "cancel_index",
        "control",
        REINDEX,
        """Stop the index run in progress after its current model call. What is done
stays searchable; the rest is indexed by the next run.""",
        structured=True,
    ),
    ToolSpec(
        "index_status",
        "control",
        READ,
        """Index counts (notes, chunks, sentences, links, broken links), model, last
update, failed files, the run in progress (percent, files, texts embedded, current file), pending
changes and the last error.""",
        structured=True,
    ),
    ToolSpec(
        "reload_config",
        "control",
        REINDEX,
        """Read the config file again: search settings apply at once; says which
changes need a rebuild or a restart. A bad file is refused and the running config kept.""",
        structured=True,
    ),
    ToolSpec(
        "list_sources",
        "sources",
        READ,
        """The sources this index covers (the vault and named folders or git repositories):
name, type, path or url, files, chunks, last indexed. Use a name in search's sources
filter.""",
    ),
    ToolSpec(
        "read_source",
        "sources",
        READ,
        """Read any indexed file (code, PDF, text, note) by a hit's chunk_id, or by path with
lines, heading, qualified_name (Class.method) or page; context adds lines around.""",
    ),
    ToolSpec(
        "reindex_target",
        "sources",
        REINDEX,
        """Re-index one file or folder (a path as search returns it) or one source (its name; a
git source is fetched first), in the background.""",
    ),
    ToolSpec(
        "get_search_results",
        "sessions",
        READ,
        """Full text, file URI and lines of the hits of one search session (session_id from
search) or several (session_ids: merged, each passage once at its best rank). Use it
to read what you will cite.""",
    ),
    ToolSpec(
        "list_search_results",
        "sessions",
        READ,
        """The search sessions still kept: id, query, hits, age in seconds.""",
    ),
    ToolSpec(
        "get_template_schema",
        "sessions",
        READ,
        """Variables a report template expects, with a description each, and the templates
available (basic, paper, bullet_points, and the vault's own).""",
    ),
    ToolSpec(
        "create_rag_report",
        "sessions",
        WRITE,
        """Write a Markdown report from a template (get_template_schema) into rag-reports/ (not
indexed). variables.sources: [{path, start_line, end_line}], or
variables.session_ids to cite those searches. Returns the file's path.""",
        needs_writes=True,
    ),
    ToolSpec(
        "write_note",
        "writes",
        DESTRUCTIVE,
        """Create a note, or replace one with overwrite=true; searchable when this returns.""",
        needs_writes=True,
    ),
    ToolSpec(
        "edit_note",
        "writes",
        WRITE,
        """Edit a note: append, prepend (after frontmatter), replace_section (body under a
heading) or find_replace (exact text; expected_count guards it). Searchable when
this returns.""",
        needs_writes=True,
    ),
    ToolSpec(
        "move_note",
        "writes",
        DESTRUCTIVE,
        """Rename or move a note and rewrite the wikilinks and Markdown links in other notes
that point to it (labels, headings and embeds kept).""",
        needs_writes=True,
    ),
    ToolSpec(
        "delete_note",
        "writes",
        DESTRUCTIVE,
        """Delete a note file from the vault.""",
        needs_writes=True,
    ),
    ToolSpec(
        "upsert_documents",
        "writes",
        DESTRUCTIVE,
        """Store raw documents as Markdown files (frontmatter + text) in the documents folder,
by id: new ids are created, known ones replaced. Searchable when this returns.""",
        needs_writes=True,
    ),
    ToolSpec(
        "delete_documents",
        "writes",
        DESTRUCTIVE,
        """Delete stored documents by id; says which ids were not stored.""",
        needs_writes=True,
    ),
    ToolSpec(
        "list_documents",
        "writes",
        READ,
        """Stored documents (id, path, size), one page at a time (pass next_cursor back as
cursor).""",
        needs_writes=True,
    ),
    ToolSpec(
        "open_index_console",
        "pages",
        REINDEX,
        """The URL of this vault's Index Console web page (index status, progress,
Update/Rebuild/Cancel, search), starting it in the background if none runs. Give the
URL to the user.""",
    ),
    ToolSpec(
        "list_index_consoles",
        "pages",
        READ,
        """Every Index Console page this user runs, one per vault: vault, URL, pid, started.""",
    ),
    ToolSpec(
        "stop_index_console",
        "pages",
        REINDEX,
        """Stop an Index Console page: this vault's, or the one at url (from
list_index_consoles).""",
    ),
)

WRITE_TOOLS = frozenset(t.name for t in TOOLS if t.needs_writes)


def build_tools(groups: Mapping[str, object], writes: bool) -> list[Tool]:
    """The tools of ``TOOLS`` in its order; the write tools only when ``writes``."""
    out = []
    for spec in TOOLS:
        if spec.needs_writes and not writes:
            continue
        fn = getattr(groups[spec.group], spec.name)
        if spec.structured:
            tool = Tool.from_function(
                fn, name=spec.name, description=spec.description, annotations=spec.annotations
            )
            out.append(lean(strict(tool)))
        else:
            out.append(plain_tool(fn, spec.name, spec.description, spec.annotations))
    return out


def strict(tool: Tool) -> Tool:
    """Refuse argument names the tool does not take, naming the ones it does."""
    base = tool.fn_metadata.arg_model
    allowed = {f.alias or n for n, f in base.model_fields.items()}

    def check(cls: type, data: Any) -> Any:
        unknown = sorted(set(data) - allowed) if isinstance(data, dict) else []
        if unknown:
            raise ValueError(
                f"{tool.name} has no argument {', '.join(map(repr, unknown))}; "
                f"it takes: {', '.join(sorted(allowed)) or 'no arguments'}"
            )
        return data

    namespace = {
        "model_config": ConfigDict(extra="forbid"),
        "_reject_unknown": model_validator(mode="before")(check),
        "__module__": __name__,
    }
    strict = cast(type[ArgModelBase], type(base.__name__, (base,), namespace))
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)
    return tool


def plain_tool(fn: Any, name: str, description: str, annotations: ToolAnnotations) -> Tool:
    tool = Tool.from_function(
        fn,
        name=name,
        description=" ".join(description.split()),
        annotations=annotations,
        structured_output=False,
    )
    return lean(strict(tool))


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
