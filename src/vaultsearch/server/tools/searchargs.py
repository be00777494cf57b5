"""The search parameters as pydantic sees them: the MCP tool's arguments and the REST body.

Both are generated from ``vaultsearch.search.request.SearchRequest`` so a parameter added there
appears on MCP, in ``/openapi.json`` and in the docs' table without another edit.
"""

from __future__ import annotations

import inspect
from functools import cache
from typing import Annotated, Any, get_type_hints

from pydantic import BaseModel, Field, create_model

from vaultsearch.search.request import SearchRequest, parameters


def _field(default: Any, meta: dict[str, Any], required: bool) -> Any:
    limits = {k: meta[k] for k in ("ge", "le", "min_length") if k in meta}
    return Field(default=... if required else default, description=meta["help"], **limits)


def _limits(info: Any) -> dict[str, Any]:
    """The bounds a ``Field`` was given, to give them again without its default."""
    out: dict[str, Any] = {}
    for m in info.metadata:
        for key in ("ge", "le", "min_length"):
            if getattr(m, key, None) is not None:
                out[key] = getattr(m, key)
    return out


def _annotated() -> list[tuple[str, Any, Any, Any]]:
    """(name, type, pydantic Field, default) of every parameter."""
    hints = get_type_hints(SearchRequest)
    return [
        (name, hints[name], _field(default, meta, name == "query"), default)
        for name, default, meta in parameters()
    ]


def request_signature(fn: Any, returns: Any) -> Any:
    """``fn(self, **args)`` given the signature of every search parameter, which is what
    the MCP SDK reads to build and publish the tool's argument model."""
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for name, hint, info, default in _annotated():
        params.append(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if name == "query" else default,
                annotation=Annotated[hint, Field(description=info.description, **_limits(info))],
            )
        )
    fn.__signature__ = inspect.Signature(params, return_annotation=returns)
    return fn


@cache
def request_model() -> type[BaseModel]:
    fields: dict[str, Any] = {name: (hint, info) for name, hint, info, _ in _annotated()}
    return create_model("SearchRequest", **fields)


def request_schema() -> dict[str, Any]:
    """JSON Schema of a search request, without pydantic's titles."""
    from vaultsearch.server.tools.lean import compact_schema

    return dict(compact_schema(request_model().model_json_schema()))
