"""Starting and stopping ``vaultsearch mcp``: transports, background work, a clean exit.

The handshake must be answered at once, so nothing slow runs before it: indexing,
the watcher and the model load start after the first answer (or after a short delay
if no request comes). Searches made meanwhile answer from the committed index.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
import time
from typing import Any, TextIO

import anyio
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    ListResourcesResult,
    PaginatedRequestParams,
    Resource,
)

from vaultsearch import __version__
from vaultsearch.app.live import LiveIndex
from vaultsearch.app.vault import Vault
from vaultsearch.errors import VaultsearchError
from vaultsearch.server.activity import ActivityLog
from vaultsearch.server.http import consoles
from vaultsearch.server.http.guard import TOKEN_ENV, Token, security_settings, server_token
from vaultsearch.server.http.webapp import SHUTDOWN_GRACE, assemble, rest_routes
from vaultsearch.server.mcp.calllog import CallLog
from vaultsearch.server.mcp.handshake import INSTRUCTIONS, SERVER_NAME
from vaultsearch.server.mcp.jsonrpc import valid_params
from vaultsearch.server.mcp.pipe import StdioPipe
from vaultsearch.server.mcp.wire import StdioWire
from vaultsearch.server.tools.argerrors import PlainErrorsServer
from vaultsearch.server.tools.control import ControlTools
from vaultsearch.server.tools.core import VaultTools
from vaultsearch.server.tools.nav import NavTools
from vaultsearch.server.tools.pages import ConsoleTools
from vaultsearch.server.tools.registry import build_tools, refuse_writes
from vaultsearch.server.tools.resources import (
    note_resources,
    read_code,
    register_chunk_template,
    register_code_template,
    register_note_template,
    resource_page,
)
from vaultsearch.server.tools.sources import SourceTools
from vaultsearch.server.tools.toolbox import SessionTools, register_template_resources
from vaultsearch.server.tools.writes import WriteTools

START_DELAY = 1.0
"""Seconds after which background work starts even if no request has come."""
STOP_TIMEOUT = 3.0
LOG_ENV = "VAULTSEARCH_MCP_LOG"


class Background:
    """The index writer, the watcher and the model load, started once and stopped once."""

    def __init__(self, vault: Vault, watch: bool, log: CallLog) -> None:
        self.live = LiveIndex(vault)
        self.watch = watch
        self.log = log
        self.watching = False
        self._watcher: Any = None
        self._started = False
        self._stopping = False
        self._start_lock = threading.Lock()

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        if self.watch:  # first, so that a change during the first index run is not missed
            self._attach_watcher()
        opener = threading.Thread(target=self._open_then_index, name="vaultsearch-open")
        opener.daemon = True
        opener.start()
        threading.Thread(target=self._load_model, name="vaultsearch-model", daemon=True).start()

    def _open_then_index(self) -> None:
        """Open the reader's snapshot, then start the writer. Built while the start-up
        update scans the vault, the snapshot's many small objects interleave with the
        update's short-lived ones, and the allocator keeps what the update frees: at a
        million chunks an idle server held ~140 MB more that way."""
        with contextlib.suppress(Exception):  # no index yet, or damage: the update mends it
            self.live.vault.orchestrator.snapshot()
        with self._start_lock:
            if not self._stopping:
                self.live.start()

    def _attach_watcher(self) -> None:
        from vaultsearch.app.watcher import attach_watcher

        try:
            self._watcher = attach_watcher(self.live)
        except VaultsearchError as exc:  # e.g. the OS watch limit: serve, just without watching
            self.log.write({"event": "watch_failed", "error": str(exc)[:300]})
            return
        self.watching = True

    def _load_model(self) -> None:
        """Load the model now rather than in the first semantic search."""
        t = time.perf_counter()
        try:
            self.live.vault.embedder.embed_query("warm up")
        except Exception as exc:  # the search that needs it reports the error itself
            self.log.write({"event": "model_load_failed", "error": str(exc)[:300]})
            return
        self.log.write({"event": "model_ready", "ms": round((time.perf_counter() - t) * 1000)})

    def stop(self) -> None:
        with self._start_lock:
            self._stopping = True
        stop = getattr(self._watcher, "stop", None)
        if callable(stop):
            stop()
        self.live.stop(timeout=STOP_TIMEOUT)


class VaultServer(PlainErrorsServer):
    """MCPServer with the notes listed as resources and stdio over ``StdioWire``."""

    def __init__(
        self,
        vault_tools: VaultTools,
        wire: StdioWire | None,
        activity: ActivityLog | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.vault_tools = vault_tools
        self.wire = wire
        self.activity = activity
        register_note_template(self, vault_tools.browser)
        register_code_template(self, vault_tools.vault)
        register_chunk_template(self, vault_tools.vault, vault_tools.browser)

    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        """A ``code://`` file answers with its language's MIME type, ``text/x-python``."""
        if str(uri).startswith("code://"):
            from mcp.server.lowlevel.helper_types import ReadResourceContents

            from vaultsearch.server.tools.resources import CODE_TEMPLATE

            template = self._resource_manager._templates[CODE_TEMPLATE]
            params = template.matches(str(uri))
            if params is not None:
                text, mime = await anyio.to_thread.run_sync(
                    read_code, self.vault_tools.vault, str(params["source"]), str(params["path"])
                )
                return [ReadResourceContents(content=text, mime_type=mime)]
        return await super().read_resource(uri, context)

    async def list_resources(self) -> list[Resource]:
        notes = await anyio.to_thread.run_sync(note_resources, self.vault_tools.browser)
        return [*await super().list_resources(), *notes]

    async def _handle_list_resources(
        self, ctx: Any, params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        """Paged (the SDK's own handler answers every resource at once)."""
        try:
            cursor = params.cursor if params is not None else None
            page, more = resource_page(await self.list_resources(), cursor)
        except ValueError as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from exc
        return ListResourcesResult(resources=page, next_cursor=more)

    async def run_stdio_async(self) -> None:
        if self.wire is None:
            await super().run_stdio_async()
            return
        low = self._lowlevel_server
        async with self.wire.streams() as (read, write):
            await low.run(read, write, low.create_initialization_options())


def quiet_libraries() -> None:
    """No progress bars or banners from the model stack, no URLs in argument errors."""
    for key, value in {
        "TQDM_DISABLE": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "TRANSFORMERS_VERBOSITY": "error",
        "TOKENIZERS_PARALLELISM": "false",
        "PYDANTIC_ERRORS_INCLUDE_URL": "0",
    }.items():
        os.environ.setdefault(key, value)


def tool_groups(
    tools: VaultTools, activity: ActivityLog, log: CallLog, writes: bool
) -> dict[str, object]:
    """The objects that answer the tools of ``registry.TOOLS``, by group."""
    groups: dict[str, object] = {
        "vault": tools,
        "nav": NavTools(tools.browser),
        "control": ControlTools(tools.vault, tools.live, tools.watching, activity),
        "sources": SourceTools(tools.vault, tools.live),
        "sessions": SessionTools(tools, log),
        "pages": ConsoleTools(tools.vault),
    }
    if writes:
        groups["writes"] = WriteTools(tools, log)
    return groups


def build_server(
    vault: Vault,
    background: Background,
    log: CallLog,
    wire: StdioWire | None = None,
    writes: bool = False,
) -> VaultServer:
    tools = VaultTools(vault, background.live, lambda: background.watching)
    activity = ActivityLog()  # one for the tools and, over HTTP, the page's log
    server = VaultServer(
        tools,
        wire,
        activity,
        name=SERVER_NAME,
        title=SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        tools=build_tools(tool_groups(tools, activity, log, writes), writes),
        middleware=[valid_params, log, *([] if writes else [refuse_writes])],
    )
    register_template_resources(server, vault)
    return server


def run_server(
    vault: Vault,
    http: bool = False,
    host: str = "127.0.0.1",
    port: int = 8765,
    watch: bool = True,
    allow_hosts: tuple[str, ...] = (),
    allow_writes: bool = False,
    pipe: StdioPipe | None = None,
) -> int:
    """Serve until stdin closes, SIGTERM or SIGINT; 0 on every orderly end. ``pipe``:
    stdio claimed earlier by the caller, so ``initialize`` was answered while this
    module loaded."""
    quiet_libraries()
    wire = None if http else StdioWire(pipe or StdioPipe.claim())
    log = CallLog(_log_stream())
    if wire is not None:
        wire.pipe.out.on_duplicate = lambda method, same: _log_handshake(
            log, wire.pipe, method, same
        )
    background = Background(vault, watch and vault.config.watch.enabled, log)
    log.after_first = background.start
    writes = allow_writes or vault.config.writes.enabled
    server = build_server(vault, background, log, wire, writes=writes)
    try:
        if http:
            _check_port(host, port)
            anyio.run(_serve_http, server, background, host, port, allow_hosts)
        else:
            log.write({"event": "serving", "transport": "stdio", "vault": str(vault.root)})
            anyio.run(_serve_stdio, server, background)
    except BaseException as exc:
        if not _disconnected(exc):
            raise
    finally:
        background.stop()
    return 0


def _log_handshake(log: CallLog, pipe: StdioPipe, method: str, same: bool) -> None:
    """The early answer to the opening request against the SDK's own (dropped): they
    must agree."""
    early = not pipe.sdk_loaded_at_answer
    log.write(
        {"event": "handshake", "method": method, "answered_before_sdk_loaded": early}
        | {"sdk_agrees": same}
    )


async def _start_later(background: Background) -> None:
    await anyio.sleep(START_DELAY)
    background.start()


async def _serve_stdio(server: VaultServer, background: Background) -> None:
    async with anyio.create_task_group() as tg:

        async def until_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    tg.cancel_scope.cancel()

        tg.start_soon(until_signal)
        tg.start_soon(_start_later, background)
        await server.run_stdio_async()
        tg.cancel_scope.cancel()


def announce_http(host: str, port: int, log: CallLog, **shown: Any) -> Token | None:
    """Ready the process to serve HTTP and say where, for the vault's server and a
    store's alike: the bearer token off loopback (printed when generated) and the
    ``serving`` record with ``shown`` added."""
    # uvicorn shuts down on SIGTERM/SIGINT, then re-raises the signal to the previous
    # handler; a no-op one makes that an orderly exit instead of a kill or a traceback.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    url = f"http://{host if ':' not in host else f'[{host}]'}:{port}/mcp"
    record: dict[str, Any] = {"event": "serving", "transport": "http", "url": url, **shown}
    token = server_token(host)
    if token is not None:
        record["auth"] = "bearer token"
        if token.generated:
            print(
                f"vaultsearch: HTTP clients must send 'Authorization: Bearer {token.value}' "
                f"(set {TOKEN_ENV} to choose the token)",
                file=sys.stderr,
                flush=True,
            )
    log.write(record)
    return token


async def _serve_http(
    server: VaultServer,
    background: Background,
    host: str,
    port: int,
    allow_hosts: tuple[str, ...] = (),
) -> None:
    import uvicorn

    token = announce_http(host, port, background.log)
    mcp_app = server.streamable_http_app(
        transport_security=security_settings(host, port, allow_hosts), host=host
    )
    vault = server.vault_tools.vault
    app = assemble(
        rest_routes(vault, server.activity),
        bind=host,
        port=port,
        token=token.value if token else None,
        allow_hosts=allow_hosts,
        mcp_app=mcp_app,
        max_body=lambda: vault.config.server.max_body_bytes,
    )
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=SHUTDOWN_GRACE
    )
    uv = uvicorn.Server(config)
    claim = consoles.claim_listening(vault.root, vault.index_dir, host, port)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_start_later, background)
            tg.start_soon(app.follow, uv)
            if claim is not None:  # the vault's Index Console, unless a serve already is
                tg.start_soon(claim.publish_when_started, uv)
            await uv.serve()
            tg.cancel_scope.cancel()
    finally:
        if claim is not None:
            claim.release()


def _check_port(host: str, port: int) -> None:
    """Fail with a sentence and a fix, not with uvicorn's exit, when the port is taken."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
    except OSError as exc:
        raise VaultsearchError(
            f"Cannot listen on {host}:{port} ({exc.strerror or exc}).",
            fix="pass another --port, or stop the process that uses it",
        ) from None


def _log_stream() -> TextIO:
    path = os.environ.get(LOG_ENV)
    if path:
        return open(path, "a", encoding="utf-8")  # open for the life of the process
    return sys.stderr


def _disconnected(exc: BaseException) -> bool:
    """The client went away (a broken pipe, possibly inside an exception group)."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_disconnected(e) for e in exc.exceptions)
    return isinstance(exc, BrokenPipeError | ConnectionResetError)
