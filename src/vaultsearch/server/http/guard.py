"""Streamable HTTP that is safe beyond loopback: Host/Origin checks and a bearer token.

A browser page can reach a server on 127.0.0.1 through DNS rebinding, so the Host and
Origin headers are checked on every bind, not only on loopback. A server reachable
from other machines also needs a secret: one from ``VAULTSEARCH_MCP_TOKEN``, or one
made at start and printed to stderr, to be sent as ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import os
import secrets
import socket
from collections.abc import Iterable
from dataclasses import dataclass

from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

TOKEN_ENV = "VAULTSEARCH_MCP_TOKEN"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def allowed_hosts(bind: str, extra: Iterable[str] = ()) -> list[str]:
    """Names a legitimate client may put in Host: loopback, the bound address and,
    for a wildcard bind, this machine's name and addresses, plus ``extra``."""
    names = [*LOOPBACK_NAMES, _bracket(bind), *(_bracket(h) for h in extra)]
    if bind in ("0.0.0.0", "::", ""):
        hostname = socket.gethostname()
        names += [hostname, socket.getfqdn()]
        with contextlib.suppress(OSError):
            names += [_bracket(str(a[4][0])) for a in socket.getaddrinfo(hostname, None)]
    return list(dict.fromkeys(n for n in names if n))


def security_settings(bind: str, port: int, extra: Iterable[str] = ()) -> TransportSecuritySettings:
    """Host and Origin matched whole (the SDK's ``name:*`` patterns are prefix matches:
    ``127.0.0.1:8765.evil.com`` passed, and so did a page on any other local port).
    This server speaks plain http on ``port``; a name from ``--allow-host`` may also
    come without a port or as https, as a proxy in front sends it, unless it names
    its own port."""
    own = allowed_hosts(bind)
    hosts = [f"{h}:{port}" for h in own]
    origins = [f"http://{h}:{port}" for h in own]
    for name in dict.fromkeys(_extra_name(h) for h in extra if h.strip()):
        if _has_port(name):
            hosts.append(name)
            origins += [f"http://{name}", f"https://{name}"]
        else:
            hosts += [name, f"{name}:{port}"]
            origins += [f"http://{name}", f"https://{name}", f"http://{name}:{port}"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[h for h in dict.fromkeys(hosts) if not h.endswith(":*")],
        allowed_origins=[o for o in dict.fromkeys(origins) if not o.endswith(":*")],
    )


def _extra_name(name: str) -> str:
    """``--allow-host`` as given: a name, ``name:port``, an IPv6 address bare or in
    brackets (with or without a port)."""
    name = name.strip()
    return f"[{name}]" if name.count(":") > 1 and not name.startswith("[") else name


def _has_port(name: str) -> bool:
    return name.rpartition("]")[2].startswith(":") if name.startswith("[") else ":" in name


@dataclass(frozen=True, slots=True)
class Token:
    value: str
    generated: bool


def server_token(bind: str) -> Token | None:
    """The token this server demands: the environment's if set (on any bind), else a
    new one when the bind reaches beyond loopback, else none."""
    configured = os.environ.get(TOKEN_ENV, "").strip()
    if configured:
        return Token(configured, False)
    if is_loopback(bind):
        return None
    return Token(secrets.token_urlsafe(32), True)


class BearerAuth:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                await _unauthorized(send)
                return
        await self.app(scope, receive, send)


async def _unauthorized(send: Send) -> None:
    body = (
        b'{"error": "unauthorized", "message": "Send the server\'s token as '
        b'Authorization: Bearer <token> (VAULTSEARCH_MCP_TOKEN or the one it printed)."}'
    )
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"www-authenticate", b'Bearer realm="vaultsearch"'),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
