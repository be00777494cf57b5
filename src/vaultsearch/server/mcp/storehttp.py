"""``vaultsearch mcp --store-uri URI --http``: the read tools over a Milvus store on
streamable HTTP, for agents on other machines that share one server.

The same guards as the vault's HTTP server (Host and Origin must name this server, a
bearer token off loopback, bounded bodies) and no page or REST routes: there is no
vault behind it. Writes stay refused by name (``storeserver.refusal``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from vaultsearch.server.http.guard import security_settings
from vaultsearch.server.http.webapp import SHUTDOWN_GRACE, assemble
from vaultsearch.server.mcp.calllog import CallLog
from vaultsearch.server.mcp.storeserver import (
    StoreServer,
    StoreTools,
    build_store_server,
    serve_until_done,
)

if TYPE_CHECKING:
    from vaultsearch.config import Config
    from vaultsearch.store.milvus.target import MilvusTarget


def run_store_http(
    target: MilvusTarget,
    config: Config,
    host: str,
    port: int,
    allow_hosts: tuple[str, ...] = (),
) -> int:
    """Serve until SIGTERM or SIGINT; 0 on every orderly end."""
    from vaultsearch.server.mcp.run import _check_port, _log_stream, quiet_libraries

    quiet_libraries()
    _check_port(host, port)
    log = CallLog(_log_stream())
    tools = StoreTools(target, config)
    server = build_store_server(tools, log)
    return serve_until_done(tools, _serve, server, log, target, host, port, allow_hosts)


async def _serve(
    server: StoreServer,
    log: CallLog,
    target: MilvusTarget,
    host: str,
    port: int,
    allow_hosts: tuple[str, ...],
) -> None:
    import uvicorn

    from vaultsearch.server.mcp.run import announce_http

    token = announce_http(host, port, log, store=target.shown())
    mcp_app = server.streamable_http_app(
        transport_security=security_settings(host, port, allow_hosts), host=host
    )
    app = assemble(
        [], bind=host, port=port, token=token.value if token else None,
        allow_hosts=allow_hosts, mcp_app=mcp_app, page=False,
    )  # fmt: skip
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=SHUTDOWN_GRACE
    )
    uv = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(app.follow, uv)
        await uv.serve()
        tg.cancel_scope.cancel()
