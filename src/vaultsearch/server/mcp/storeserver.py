"""``vaultsearch mcp --store-uri URI``: MCP over a Milvus store, for an agent on a machine
that holds neither the vault nor its index.

Only what the store holds can be answered: search, a note's indexed passages, the
store's status. The tools that change the index or the notes are refused by name with
a sentence, not left unknown: an agent may know them from a server over a vault, and
the writer of a Milvus store is whoever indexes or pushes where the vault is (one
writer per collection prefix), never a reader of it.

The store is connected at the first call, not at start: the client gets its handshake
at once and an unreachable server, a refused token or a missing collection is told in
the answer to each call (one sentence each), until the store is there.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from vaultsearch import __version__
from vaultsearch.app.searchanswer import SearchAnswer
from vaultsearch.search.confidence import weak_answer
from vaultsearch.search.request import SearchRequest
from vaultsearch.server.mcp.calllog import CallLog
from vaultsearch.server.mcp.handshake import SERVER_NAME, STORE_INSTRUCTIONS
from vaultsearch.server.mcp.jsonrpc import valid_params
from vaultsearch.server.tools import render
from vaultsearch.server.tools.argerrors import PlainErrorsServer
from vaultsearch.server.tools.control import answer
from vaultsearch.server.tools.core import agent_errors, reply
from vaultsearch.server.tools.registry import READ, WRITE_TOOLS, plain_tool
from vaultsearch.server.tools.schemas import SearchResult
from vaultsearch.server.tools.searchargs import request_signature

if TYPE_CHECKING:
    from vaultsearch.config import Config
    from vaultsearch.search.milvus_reader import MilvusReader
    from vaultsearch.store.milvus.target import MilvusTarget

REFUSED = frozenset({"reindex", "cancel_index", "reload_config", "reindex_target", *WRITE_TOOLS})
MAX_CHARS = 20_000
"""Passage text one read_note answer carries at most."""

DESCRIPTIONS = {
    "search": """Find passages about something; start here. Gives the best passage per note (path,
lines, snippet). mode: hybrid, keyword (exact words) or semantic. Filters: tags, folders,
after/before (date), where (frontmatter).""",
    "read_note": """A note's indexed passages in order, each with its lines and headings (the
store holds passages, not files); start_line/end_line keep those that overlap.""",
    "index_status": """What the Milvus store holds: notes, chunks, sentences, links, the model
and schema it was built with, its generation and when it was last pushed.""",
}


class StoreTools:
    def __init__(self, target: MilvusTarget, config: Config) -> None:
        self.target = target
        self.config = config
        self._reader: MilvusReader | None = None
        self._lock = threading.Lock()

    def reader(self) -> MilvusReader:
        with self._lock:
            if self._reader is None:
                from vaultsearch.embedding import Embedder
                from vaultsearch.search.milvus_reader import MilvusReader

                embedder = Embedder.shared(self.config.embedding)
                self._reader = MilvusReader(self.target, self.config, embedder)
            return self._reader

    def search(self, **args: Any) -> CallToolResult:
        """The arguments are ``SearchRequest``'s fields (``request_signature`` below)."""
        with agent_errors():
            request = SearchRequest(**args)
            found = SearchAnswer(request, self.reader().answer(request))
            shaped = found.to_dict()
            for hit in shaped["hits"]:  # no note:// or chunk:// resources without files
                hit.pop("uri", None)
                hit.pop("chunk_uri", None)
            weak = weak_answer([h.confidence for h in found.hits])
            result = SearchResult(
                **shaped, index_building=False, stale=False, matches_well=weak is None,
                message=weak,
            )  # fmt: skip
            return reply(result, render.search)

    def read_note(
        self,
        path: Annotated[str, Field(description="As search returns it.")],
        start_line: Annotated[int | None, Field(ge=1)] = None,
        end_line: Annotated[int | None, Field(ge=1)] = None,
    ) -> CallToolResult:
        with agent_errors():
            note = self.reader().get(path)
            low, high = start_line or 1, end_line or 1 << 62
            kept = [c for c in note["chunks"] if c["end_line"] >= low and c["start_line"] <= high]
            shown: list[dict[str, Any]] = []
            size = 0
            for c in kept:
                if shown and size + len(c["text"]) > MAX_CHARS:
                    break
                shown.append(c)
                size += len(c["text"])
            data = {**note, "chunks": shown, "truncated": len(shown) < len(kept)}
            if data["truncated"]:
                data["next_start_line"] = kept[len(shown)]["start_line"]
            lines = [f"{note['path']}  {note['title']}"]
            for c in shown:
                head = f"  [{c['heading_path']}]" if c["heading_path"] else ""
                lines.append(f"--- lines {c['start_line']}-{c['end_line']}{head}\n{c['text']}")
            if data["truncated"]:
                lines.append(f"(cut: read_note with start_line={data['next_start_line']} goes on)")
            return answer(data, "\n".join(lines))

    def index_status(self) -> CallToolResult:
        with agent_errors():
            status = self.reader().status()
            text = (
                f"Milvus store {self.target.shown()}, generation {status['generation']}: "
                f"{status.get('notes', 0)} notes, {status.get('chunks', 0)} chunks, "
                f"{status.get('sentences', 0)} sentences, {status.get('links', 0)} links; "
                f"model {status['model']}; schema {status['schema_version']}; "
                f"last pushed {status['last_indexed']}"
            )
            if status.get("syncing_since"):
                text += f"; a push started at {status['syncing_since']} has not finished"
            return answer(status, text)

    def close(self) -> None:
        with self._lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None


request_signature(StoreTools.search, CallToolResult)


def build_tools(tools: StoreTools) -> list[Tool]:
    return [plain_tool(getattr(tools, n), n, d, READ) for n, d in DESCRIPTIONS.items()]


class StoreServer(PlainErrorsServer):
    """Tool errors as the vault server gives them: one sentence, no SDK prefix."""


def refusal(target: MilvusTarget) -> Any:
    """Middleware: a write or index tool is answered with why not and where to do it."""

    async def refuse(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        name = (ctx.params or {}).get("name") if ctx.method == "tools/call" else None
        if name not in REFUSED:
            return await call_next(ctx)
        text = (
            f"{name} changes the index or the notes, and this server only reads the Milvus "
            f"store {target.shown()}; run 'vaultsearch index' or 'vaultsearch push VAULT "
            f"--to {target.uri}' where the vault is."
        )
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)

    return refuse


def build_store_server(tools: StoreTools, log: CallLog) -> StoreServer:
    return StoreServer(
        name=SERVER_NAME,
        title=SERVER_NAME,
        version=__version__,
        instructions=STORE_INSTRUCTIONS,
        log_level="WARNING",
        tools=build_tools(tools),
        middleware=[valid_params, log, refusal(tools.target)],
    )


def run_store_server(target: MilvusTarget, config: Config, pipe: Any) -> int:
    """Serve over stdio until stdin closes, SIGTERM or SIGINT; 0 on every orderly end."""
    from vaultsearch.server.mcp.run import _log_handshake, _log_stream, quiet_libraries
    from vaultsearch.server.mcp.wire import StdioWire

    quiet_libraries()
    wire = StdioWire(pipe)
    log = CallLog(_log_stream())
    pipe.out.on_duplicate = lambda method, same: _log_handshake(log, pipe, method, same)
    tools = StoreTools(target, config)
    server = build_store_server(tools, log)
    log.write({"event": "serving", "transport": "stdio", "store": target.shown()})
    return serve_until_done(tools, _serve, server, wire)


def serve_until_done(tools: StoreTools, serve: Callable[..., Awaitable[None]], *args: Any) -> int:
    """``serve`` run to its end, stdio and HTTP alike: a client that went away is an
    orderly end (0), and the store's connection is closed whatever happened."""
    from vaultsearch.server.mcp.run import _disconnected

    try:
        anyio.run(serve, *args)
    except BaseException as exc:
        if not _disconnected(exc):
            raise
    finally:
        tools.close()
    return 0


async def _serve(server: StoreServer, wire: Any) -> None:
    import signal

    low = server._lowlevel_server
    async with anyio.create_task_group() as tg:

        async def until_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    tg.cancel_scope.cancel()

        tg.start_soon(until_signal)
        async with wire.streams() as (read, write):
            await low.run(read, write, low.create_initialization_options())
        tg.cancel_scope.cancel()
