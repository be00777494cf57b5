"""Refused arguments in one plain sentence, for every tool in one place.

The SDK reports pydantic's own text: a model name, error codes, input types and a URL,
which costs tokens and reads like a crash. An agent needs which argument, what was
wrong and what would do.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import ValidationError

PREFIX = "Error executing tool "


def _value(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _problem(tool: str, err: Any) -> str:
    field = ".".join(str(p) for p in err.get("loc", ()) if p != "__root__") or "the arguments"
    kind = err.get("type", "")
    msg = str(err.get("msg", "is not valid"))
    if kind == "value_error" and "error" in err.get("ctx", {}):
        return str(err["ctx"]["error"]).rstrip(".")
    if kind == "missing":
        return f"{tool} needs the argument {field}"
    if kind == "extra_forbidden":
        return f"{tool} has no argument {field!r}"
    if msg.startswith("Input should be "):
        msg = "should be " + msg.removeprefix("Input should be ")
    elif msg.startswith("Input "):
        msg = msg.removeprefix("Input ")
    else:
        msg = "is not valid: " + msg[0].lower() + msg[1:]
    got = f" (got {_value(err['input'])})" if "input" in err and kind != "missing" else ""
    return f"{field} {msg}{got}"


def sentence(tool: str, exc: ValidationError) -> str:
    """``top_k should be greater than or equal to 1 (got -1).`` and the like."""
    seen: list[str] = []
    for err in exc.errors(include_url=False):
        problem = _problem(tool, err)
        if problem not in seen:
            seen.append(problem)
    return "; ".join(seen[:3]) + "."


def plain(exc: ToolError) -> ToolError:
    """The same refusal without the SDK's prefix and with validation errors as a sentence."""
    cause = exc.__cause__
    text = str(exc)
    name = text.removeprefix(PREFIX).split(":", 1)[0] if text.startswith(PREFIX) else ""
    if isinstance(cause, ValidationError):
        return ToolError(sentence(name or "the tool", cause))
    if name and text.startswith(f"{PREFIX}{name}: "):
        return ToolError(text.removeprefix(f"{PREFIX}{name}: "))
    return exc


class PlainErrorsServer(MCPServer[Any]):
    """An MCP server whose tool errors are one sentence, without the SDK's prefix: the
    vault's server and the Milvus store's both."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Any = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            raise plain(exc) from exc.__cause__
