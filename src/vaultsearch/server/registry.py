"""The tools as an agent sees them: names, descriptions, annotations, strict arguments.

The descriptions are what a model reads to choose a tool, so they say what each is for
and when to use which. Unknown argument names are refused rather than ignored (the SDK
ignores them by default) because a silently dropped filter looks like a wrong answer.
"""

from __future__ import annotations

from typing import Any, cast

from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import ToolAnnotations
from pydantic import ConfigDict, model_validator

from vaultsearch.server.activity import ActivityLog
from vaultsearch.server.controltools import DESCRIPTIONS as CONTROL
from vaultsearch.server.controltools import ControlTools
from vaultsearch.server.tools import VaultTools

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
REINDEX = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)
CHANGES = {"reindex", "cancel_index", "reload_config"}


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


DESCRIPTIONS = {
    "search": """Find where the notes talk about something; start here for any question about
the vault's content. Returns the best passage per note with its path and line range; then
call read_note(path, start_line, end_line, context) to read around a hit. mode: hybrid
(default: meaning and words), keyword (exact words, names, codes; fastest) or semantic
(meaning only). Narrow with tags, folders, after/before (the note's date) and where
(frontmatter). The query also understands "exact phrase", -word, tag:x and path:x.""",
    "read_note": """Read a note or part of it, with line numbers, its frontmatter, outlinks and
backlinks. Pass a search hit's start_line/end_line (plus context for surrounding lines), or a
heading to read one section. Without a range it returns the start of the note (at most 200
lines / 20,000 characters); when cut, next_start_line says where to continue.""",
    "related": """What a note connects to: outlinks, backlinks, embeds and unresolved links, notes
2-3 link hops away (depth), and the notes most similar in meaning even when nothing links
them. Use it to explore around a note you found.""",
    "list_notes": """Browse notes by folder or tag, sorted by path or by date (newest first), one
page at a time (pass next_cursor back as cursor). Use it to see what exists, e.g. the latest
notes in a folder; use search to find content.""",
    "list_tags": """All tags with note counts, most used first. A hierarchical tag counts toward
its parents (notes tagged project/alpha count for project), as the tags filters match.""",
}


def build_tools(tools: VaultTools, activity: ActivityLog | None = None) -> list[Tool]:
    out = []
    control = ControlTools(tools.vault, tools.live, tools.watching, activity)
    for owner, described in ((tools, DESCRIPTIONS), (control, CONTROL)):
        for name, text in described.items():
            annotations = REINDEX if name in CHANGES else READ_ONLY
            fn = getattr(owner, name)
            description = " ".join(text.split())
            tool = Tool.from_function(
                fn, name=name, description=description, annotations=annotations
            )
            if owner is control:
                tool.fn_metadata.output_schema = None  # structured content, no schema to list
            out.append(strict(tool))
    return out
