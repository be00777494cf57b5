"""The first answer of a stdio connection, known before the MCP SDK is imported.

Importing the SDK builds some 580 pydantic models (about a second of CPU here, ten
and more on a loaded machine), and a client waits for its opening request before
anything else. The SDK serves two protocol eras and the client's first request picks
one for the connection: ``initialize`` opens the handshake era, a request carrying
the per-request ``_meta`` envelope (``server/discover`` from a client in ``auto``
mode) opens the modern one. Either answer depends only on constants, so the stdio
pipe sends it the moment that first request arrives; the SDK, once loaded, still
receives the same request and so picks the same era: the pipe drops its answer and
logs whether the two agreed (tests/test_mcp_handshake.py checks they do for every
protocol version the SDK serves).

Only the opening request is answered early. An ``initialize`` after a discover (the
client's probe timed out while the SDK loaded) must get the SDK's refusal of a
handshake on a modern connection, which is what tells the client to probe again;
answering it from here would split the client and the server across the two eras.
This module imports nothing from the SDK.
"""

from __future__ import annotations

import json
from typing import Any

from vaultsearch import __version__
from vaultsearch.server.jsonlimits import too_deep

SERVER_NAME = "vaultsearch"
INSTRUCTIONS = """Search and read a folder of Markdown notes (an Obsidian-style vault).
Start with `search`; read around a hit with `read_note(path, start_line, end_line, context)`
or several hits at once with `multi_get`; explore with `related`, `links` and `outline`;
browse with `list_notes`, `list_tags` and `folders`; `index_status` tells whether the index
is complete. Each search returns a session_id: `get_search_results` gives its hits' full
text to cite. Write tools are listed only when the server allows writes; every path is
relative to the vault."""

STORE_INSTRUCTIONS = """Search a team's index held in a Milvus store (no vault files here).
Start with `search`; `read_note(path)` gives a hit's note as the store holds it: its indexed
passages with their line ranges; `index_status` says what the store holds and which model
built it. The index is written where the vault is, so this server has no write tools."""
"""``vaultsearch mcp --store-uri``: the server over a Milvus store has only these tools."""

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""``mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS`` of the SDK this was checked with."""
MODERN_VERSIONS = ("2026-07-28",)
"""``mcp_types.version.MODERN_PROTOCOL_VERSIONS`` of the same SDK."""
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"

CAPABILITIES: dict[str, Any] = {
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}
MODERN_CAPABILITIES: dict[str, Any] = {
    "prompts": {"listChanged": True},
    "resources": {"listChanged": True, "subscribe": True},
    "tools": {"listChanged": True},
}
"""At modern versions changes are announced on ``subscriptions/listen``, which the SDK
serves, so it advertises them there."""
SERVER_INFO = {"name": SERVER_NAME, "title": SERVER_NAME, "version": __version__}


def initialize_result(protocol_version: str, instructions: str = INSTRUCTIONS) -> dict[str, Any]:
    """What the SDK answers: the client's version when it speaks it, else its latest."""
    negotiated = (
        protocol_version if protocol_version in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
    )
    return {
        "capabilities": CAPABILITIES,
        "instructions": instructions,
        "protocolVersion": negotiated,
        "serverInfo": SERVER_INFO,
    }


def discover_result(instructions: str = INSTRUCTIONS) -> dict[str, Any]:
    """What the SDK answers a supported ``server/discover``."""
    return {
        "cacheScope": "private",
        "capabilities": MODERN_CAPABILITIES,
        "instructions": instructions,
        "resultType": "complete",
        "supportedVersions": list(MODERN_VERSIONS),
        "ttlMs": 0,
        "_meta": {SERVER_INFO_KEY: SERVER_INFO},
    }


def as_request(raw: bytes) -> dict[str, Any] | None:
    """The message when ``raw`` is shaped like a request (a method and an id), the kind
    that picks the connection's era; None for notifications, answers, blanks and junk.
    Decoded as the line screen decodes it, so the SDK never takes as a request a line
    that was not one here."""
    if too_deep(raw):
        return None
    try:
        message = json.loads(raw.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None
    return message


def _plain_client(client: Any) -> bool:
    return (
        isinstance(client, dict)
        and isinstance(client.get("name"), str)
        and isinstance(client.get("version"), str)
    )


def _plain_initialize(params: dict[str, Any], instructions: str) -> dict[str, Any] | None:
    plain = (
        set(params) <= {"protocolVersion", "capabilities", "clientInfo"}
        and isinstance(params.get("protocolVersion"), str)
        and isinstance(params.get("capabilities"), dict)
        and _plain_client(params.get("clientInfo"))
    )
    return initialize_result(params["protocolVersion"], instructions) if plain else None


def _plain_discover(params: dict[str, Any], instructions: str) -> dict[str, Any] | None:
    """Only a version the SDK serves: any other gets its -32022, which names them."""
    meta = params.get("_meta")
    plain = (
        set(params) == {"_meta"}
        and isinstance(meta, dict)
        and set(meta) <= {VERSION_KEY, CLIENT_INFO_KEY, CLIENT_CAPABILITIES_KEY}
        and meta.get(VERSION_KEY) in MODERN_VERSIONS
        and isinstance(meta.get(CLIENT_CAPABILITIES_KEY), dict)
        and (CLIENT_INFO_KEY not in meta or _plain_client(meta[CLIENT_INFO_KEY]))
    )
    return discover_result(instructions) if plain else None


def answer_for(
    message: dict[str, Any], instructions: str = INSTRUCTIONS
) -> tuple[int | str, str] | None:
    """(request id, answer line) for a plain, well-formed opening request the SDK would
    accept (``initialize`` or ``server/discover``); None for anything else, which waits
    for the SDK and its own validation and errors. ``instructions``: the server's own,
    which the SDK sends too (a server over a Milvus store has other tools)."""
    request_id, params, method = message.get("id"), message.get("params"), message.get("method")
    if message.get("jsonrpc") != "2.0" or isinstance(request_id, bool):
        return None
    if not isinstance(request_id, int | str) or not isinstance(params, dict):
        return None
    if method == "initialize":
        result = _plain_initialize(params, instructions)
    elif method == "server/discover":
        result = _plain_discover(params, instructions)
    else:
        return None
    if result is None:
        return None
    answer = {"jsonrpc": "2.0", "id": request_id, "result": result}
    return request_id, json.dumps(answer, ensure_ascii=False)


def early_answer(raw: bytes) -> tuple[int | str, str] | None:
    """``answer_for`` a raw line that is a request."""
    message = as_request(raw)
    return None if message is None else answer_for(message)
