"""The MCP tools for finding one's way without searching: ``links``, ``outline``,
``folders`` and ``multi_get``, thin adapters over ``vaultsearch.app.navigate`` (which the
CLI prints too). Their answers carry no output schema (see ``lean``): the structured
content is the ``Answer``'s data, the text its text.
"""

from __future__ import annotations

from typing import Annotated

from mcp.types import CallToolResult
from pydantic import Field

from vaultsearch.app import navigate
from vaultsearch.app.browse import MAX_CHARS, Browser
from vaultsearch.app.linkmap import LinkQuery
from vaultsearch.server.tools.core import PathArg, agent_errors, answered

Limit = Annotated[int, Field(ge=1, le=1000)]


class NavTools:
    def __init__(self, browser: Browser) -> None:
        self.browser = browser

    def links(
        self,
        kind: LinkQuery,
        path: Annotated[
            str | None, Field(description="The note (backlinks, outlinks, path).")
        ] = None,
        target: Annotated[str | None, Field(description="kind=path: the note to reach.")] = None,
        limit: Limit = 50,
    ) -> CallToolResult:
        with agent_errors():
            return answered(navigate.links(self.browser, kind, path, target, limit))

    def outline(self, path: PathArg) -> CallToolResult:
        with agent_errors():
            return answered(navigate.outline(self.browser, path))

    def folders(
        self,
        under: Annotated[str | None, Field(description="Only this folder and below.")] = None,
        limit: Limit = 200,
    ) -> CallToolResult:
        with agent_errors():
            return answered(navigate.folders(self.browser, under, limit))

    def multi_get(
        self,
        items: Annotated[
            list[str], Field(min_length=1, max_length=50, description="PATH[:LINE[:COUNT]] each.")
        ],
        max_chars: Annotated[
            int, Field(ge=100, le=100_000, description="Total text cap.")
        ] = MAX_CHARS,
        context: Annotated[int, Field(ge=0, le=100, description="Lines around.")] = 0,
    ) -> CallToolResult:
        with agent_errors():
            return answered(navigate.multi_get(self.browser, items, max_chars, context))
