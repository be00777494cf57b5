"""One Starlette app for ``vaultsearch serve`` and ``vaultsearch mcp --http``: the Index
Manager page, its assets, the REST routes and, for ``mcp --http``, ``/mcp``.

Both commands assemble it here so the page, its guards and its routes cannot drift
apart. The page and its assets hold no vault data, so they load without the token (a
browser cannot send a header on navigation); every data route needs it when one is set.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from importlib import resources
from typing import TYPE_CHECKING

from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from vaultsearch.server.http.bodyguard import BodyGuard
from vaultsearch.server.http.guard import BearerAuth, security_settings
from vaultsearch.server.http.streams import EndStreamsOnExit
from vaultsearch.server.jsonlimits import MAX_BYTES

if TYPE_CHECKING:
    from vaultsearch.app.vault import Vault
    from vaultsearch.server.activity import ActivityLog

ASSETS = {
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}
MCP_PATH = "/mcp"
_NO_CACHE = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
SHUTDOWN_GRACE = 5
"""Seconds a stopping server waits for responses under way (event streams are ended
at once: see ``streams``)."""


def _asset(name: str) -> bytes:
    return resources.files("vaultsearch.server.http").joinpath("web", name).read_bytes()


async def page(request: Request) -> Response:
    return Response(_asset("index.html"), media_type="text/html; charset=utf-8", headers=_NO_CACHE)


async def asset(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in ASSETS:
        return JSONResponse({"error": f"There is no asset {name!r}."}, status_code=404)
    return Response(_asset(name), media_type=ASSETS[name], headers=_NO_CACHE)


def page_routes() -> list[BaseRoute]:
    return [Route("/", page), Route("/assets/{name}", asset)]


class RequestGuard:
    """Host checked on every request (DNS rebinding), Origin and a JSON body on every
    state-changing one; ``/mcp`` is left to the MCP transport, which checks the same."""

    def __init__(self, app: ASGIApp, bind: str, port: int, allow_hosts: Iterable[str] = ()) -> None:
        self.app = app
        self._check = TransportSecurityMiddleware(security_settings(bind, port, allow_hosts))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope["path"].startswith(MCP_PATH):
            request = Request(scope)
            refusal = await self._check.validate_request(request, is_post=_changes(scope))
            if refusal is not None:
                reason = bytes(refusal.body).decode() or "Refused"
                await _error(refusal.status_code, f"{reason}: {_fix(refusal.status_code)}")(
                    scope, receive, send
                )
                return
        await self.app(scope, receive, send)


def _changes(scope: Scope) -> bool:
    return scope["method"] not in ("GET", "HEAD", "OPTIONS")


def _fix(status: int) -> str:
    if status == 400:
        return "send the body as JSON with Content-Type: application/json."
    if status == 421:
        return "open the page by the address the server printed, or start it with --allow-host."
    return "state-changing requests are accepted only from this server's own page."


def _error(status: int, sentence: str) -> Response:
    return JSONResponse({"error": sentence}, status_code=status)


class TokenGate:
    """The bearer token on every route but the public ones."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.guarded = BearerAuth(app, token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _public(scope["path"]):
            await self.app(scope, receive, send)
            return
        await self.guarded(scope, receive, send)


def _public(path: str) -> bool:
    return path == "/" or path == "/health" or path.startswith("/assets/")


def rest_routes(vault: Vault, activity: ActivityLog | None = None) -> list[BaseRoute]:
    """The REST API the page drives, on this process's index runner; ``activity`` is
    the MCP tools' log when one server answers both, so the page shows their reloads."""
    from vaultsearch.server.http.rest import ControlContext
    from vaultsearch.server.http.rest import rest_routes as routes

    return routes(ControlContext.for_vault(vault, activity))


def assemble(
    rest_routes: Sequence[BaseRoute],
    bind: str,
    port: int,
    token: str | None = None,
    allow_hosts: Iterable[str] = (),
    mcp_app: Starlette | None = None,
    max_body: Callable[[], int] = lambda: MAX_BYTES,
    page: bool = True,
) -> EndStreamsOnExit:
    """The page and the REST routes, inside ``mcp_app`` when given (its lifespan runs
    the MCP session manager), else in a Starlette app of their own. ``port`` is the one
    the server listens on: Host and Origin must name it. ``page``: False for a server
    with no vault behind it (MCP over a Milvus store), whose page would have nothing to
    show."""
    routes = [*(page_routes() if page else []), *rest_routes]
    if mcp_app is not None:
        mcp_app.router.routes.extend(routes)
        app: ASGIApp = mcp_app
    else:
        app = Starlette(routes=routes)
    app = BodyGuard(app, max_body)
    app = RequestGuard(app, bind, port, allow_hosts)
    if token is not None:
        app = TokenGate(app, token)
    return EndStreamsOnExit(app)
