"""``vaultsearch serve``: the vault's Index Console, once per vault.

A second ``serve`` for the same index finds the running one, prints its URL and exits
0; a manager left by a crash is not in the way (see ``consoles``). The server listens
on the socket bound while claiming, so the printed port is the one it serves.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import webbrowser
from collections.abc import Iterable

import anyio

from vaultsearch.app.vault import Vault
from vaultsearch.errors import VaultsearchError
from vaultsearch.server.http import consoles
from vaultsearch.server.http.guard import TOKEN_ENV, server_token
from vaultsearch.server.http.streams import EndStreamsOnExit
from vaultsearch.server.http.webapp import SHUTDOWN_GRACE, assemble, rest_routes


def run_serve(
    vault: Vault,
    host: str = "127.0.0.1",
    port: int | None = None,
    open_browser: bool = True,
    allow_hosts: Iterable[str] = (),
) -> int:
    claim = consoles.claim(vault.root, vault.index_dir, host, port)
    if claim is None:
        running = consoles.find(vault.index_dir)
        if running is None:
            raise VaultsearchError(
                f"Another process holds the Index Console lock of {vault.index_dir} "
                "but does not answer.",
                fix="wait a moment and run the command again, or stop that process",
            )
        print(f"An Index Console already serves this vault: {running.url}", flush=True)
        return 0
    try:
        token = server_token(host)
        url = claim.record.url
        if token is not None and token.generated:
            print(
                f"vaultsearch: send 'Authorization: Bearer {token.value}' (set {TOKEN_ENV} to "
                f"choose it); in a browser open {url}#token={token.value}",
                file=sys.stderr,
                flush=True,
            )
        app = assemble(
            rest_routes(vault),
            bind=host,
            port=claim.record.port,
            token=token.value if token else None,
            allow_hosts=allow_hosts,
            max_body=lambda: vault.config.server.max_body_bytes,
        )
        anyio.run(_serve, app, claim, open_browser)
    finally:
        claim.release()
    return 0


async def _serve(app: EndStreamsOnExit, claim: consoles.Claim, open_browser: bool) -> None:
    import uvicorn

    for sig in (signal.SIGTERM, signal.SIGINT):  # uvicorn's own shutdown, then exit 0
        signal.signal(sig, lambda *_: None)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=SHUTDOWN_GRACE)
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:

        async def announce() -> None:
            await claim.publish_when_started(server)
            print(f"Index Console for {claim.record.vault}: {claim.record.url}", flush=True)
            if open_browser:
                await anyio.to_thread.run_sync(open_in_browser, claim.record.url)

        tg.start_soon(announce)
        tg.start_soon(app.follow, server)
        await server.serve(sockets=[claim.socket] if claim.socket else None)
        tg.cancel_scope.cancel()


def open_in_browser(url: str) -> None:
    with contextlib.suppress(webbrowser.Error):  # no browser here: the URL is printed
        webbrowser.open(url)
