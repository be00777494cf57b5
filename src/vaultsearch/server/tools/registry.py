"""The tools as an agent sees them: names, descriptions, annotations, strict arguments.

The descriptions are what a model reads to choose a tool, so they say what each is for
and when to use which, in at most 250 characters (``lean`` keeps the listing small).
Unknown argument names are refused rather than ignored (the SDK
ignores them by default) because a silently dropped filter looks like a wrong answer.
"""

from __future__ import annotations

from typing import Any, cast

from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import ToolAnnotations
from pydantic import ConfigDict, model_validator

from vaultsearch.server.activity import ActivityLog
from vaultsearch.server.tools import sources as sourcetools
from vaultsearch.server.tools.control import DESCRIPTIONS as CONTROL
from vaultsearch.server.tools.control import ControlTools
from vaultsearch.server.tools.core import VaultTools
from vaultsearch.server.tools.lean import lean
from vaultsearch.server.tools.nav import NavTools

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
    "search": """Find passages about something; start here. Gives the best passage per note (path,
lines, snippet). mode: hybrid, keyword (exact words, fastest) or semantic. Filters: tags,
folders, after/before (date), where (frontmatter).""",
    "read_note": """Read a note or part of it, numbered: a hit's start_line/end_line (+context) or
a heading. Long notes are cut (next_start_line goes on). Frontmatter and links only on request.""",
    "related": """Explore around a note: its links, notes depth hops away and notes close in
meaning even when unlinked.""",
    "list_notes": """Browse notes by folder or tag, by path or date (newest first: recent notes), a
page at a time (pass next_cursor back as cursor).""",
    "list_tags": """Tags with note counts, most used first (a/b counts for a too), to choose
search's tags filter.""",
}


NAVIGATION = {
    "multi_get": """Read several notes or ranges at once (PATH, PATH:LINE or PATH:LINE:COUNT), up
to max_chars in all, e.g. the top search hits.""",
    "links": """A note's backlinks or outlinks, broken links, orphans, the most linked notes, or
the shortest link path from path to target.""",
    "outline": """A note's headings with each section's lines, to pick what to read.""",
    "folders": """Folders with note counts, to see how the vault is organised.""",
}


def build_tools(tools: VaultTools, activity: ActivityLog | None = None) -> list[Tool]:
    out = []
    nav = NavTools(tools.browser)
    control = ControlTools(tools.vault, tools.live, tools.watching, activity)
    for owner, described in ((tools, DESCRIPTIONS), (nav, NAVIGATION), (control, CONTROL)):
        for name, text in described.items():
            annotations = REINDEX if name in CHANGES else READ_ONLY
            fn = getattr(owner, name)
            tool = Tool.from_function(fn, name=name, description=text, annotations=annotations)
            out.append(lean(strict(tool)))
    return out + build_source_tools(sourcetools.SourceTools(tools.vault, tools.live))


def build_source_tools(tools: sourcetools.SourceTools) -> list[Tool]:
    return [
        plain_tool(
            getattr(tools, name), name, text, REINDEX if name == "reindex_target" else READ_ONLY
        )
        for name, text in sourcetools.DESCRIPTIONS.items()
    ]


def plain_tool(fn: Any, name: str, description: str, annotations: ToolAnnotations) -> Tool:
    """A strict tool without an output schema (the schema would cost more of the
    agent's context in tools/list than the answers it describes)."""
    tool = Tool.from_function(
        fn,
        name=name,
        description=" ".join(description.split()),
        annotations=annotations,
        structured_output=False,
    )
    return lean(strict(tool))
