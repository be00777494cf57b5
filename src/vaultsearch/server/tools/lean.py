"""What ``tools/list`` costs an agent: every byte of it is read before the first call.

Output schemas are not advertised: they were 12 KB of the 18 KB listing and a client
that wants fields finds them in the structured content anyway (the text content carries
the same facts). Input schemas lose what pydantic adds for humans (titles, ``anyOf``
with ``null`` for optional arguments, ``default: null``); validation does not read the
published schema, the argument model does, so nothing is accepted that was refused.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver.tools import Tool

MAX_DESCRIPTION = 250
"""Characters: what a tool is for and when to use it, no more."""


def compact_schema(schema: Any) -> Any:
    """The same constraints in fewer bytes."""
    if isinstance(schema, list):
        return [compact_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" or (key == "default" and (value is None or value is False)):
            continue
        if key == "additionalProperties" and isinstance(value, dict):
            continue  # the value types of a mapping argument: the description says them
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: compact_schema(prop) for name, prop in value.items()}
        else:
            out[key] = compact_schema(value)
    options = out.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if o != {"type": "null"}]
        lists = [o for o in kept if isinstance(o, dict) and o.get("type") == "array"]
        if len(kept) == 2 and len(lists) == 1 and lists[0].get("items") in kept:
            kept = lists  # one value is taken where a list is; the list form is enough to say
        if len(kept) > 1 and all(isinstance(o, dict) and list(o) == ["type"] for o in kept):
            types = [o["type"] for o in kept]
            kept = [{"type": [t for t in types if t != "integer" or "number" not in types]}]
        if len(kept) == 1 and isinstance(kept[0], dict):
            del out["anyOf"]
            out = {**kept[0], **out}
        elif len(kept) < len(options):
            out["anyOf"] = kept
    return out


def lean(tool: Tool) -> Tool:
    """The tool as listed: no output schema, a compact input schema, a short description."""
    description = " ".join((tool.description or "").split())
    if len(description) > MAX_DESCRIPTION:
        raise ValueError(
            f"The description of {tool.name} has {len(description)} characters; "
            f"keep it within {MAX_DESCRIPTION}."
        )
    tool.description = description
    tool.fn_metadata.output_schema = None
    tool.parameters = compact_schema(tool.parameters)
    return tool
