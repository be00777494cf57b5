"""The ``initialize`` answer, known before the MCP SDK is imported.

Importing the SDK builds some 580 pydantic models (about a second of CPU here), and
a client waits for the handshake before anything else. Its answer depends only on
constants, so the stdio pipe sends it the moment the request arrives and the SDK,
once loaded, still receives the same request: the pipe drops the SDK's own answer
and logs whether the two agreed (tests/test_mcp_handshake.py checks they do for
every protocol version the SDK negotiates). This module imports nothing from the SDK.
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

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""``mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS`` of the SDK this was checked with."""
CAPABILITIES: dict[str, Any] = {
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}


def initialize_result(protocol_version: str) -> dict[str, Any]:
    """What the SDK answers: the client's version when it speaks it, else its latest."""
    negotiated = (
        protocol_version if protocol_version in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
    )
    return {
        "capabilities": CAPABILITIES,
        "instructions": INSTRUCTIONS,
        "protocolVersion": negotiated,
        "serverInfo": {"name": SERVER_NAME, "title": SERVER_NAME, "version": __version__},
    }


def early_answer(raw: bytes) -> tuple[int | str, str] | None:
    """(request id, answer line) for a plain, well-formed ``initialize`` request; None for
    anything else, which waits for the SDK and its own validation and errors."""
    if too_deep(raw):
        return None
    try:
        message = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return None
    request_id, params = message.get("id"), message.get("params")
    if message.get("jsonrpc") != "2.0" or isinstance(request_id, bool):
        return None
    if not isinstance(request_id, int | str) or not isinstance(params, dict):
        return None
    client = params.get("clientInfo")
    plain = (
        set(params) <= {"protocolVersion", "capabilities", "clientInfo"}
        and isinstance(params.get("protocolVersion"), str)
        and isinstance(params.get("capabilities"), dict)
        and isinstance(client, dict)
        and isinstance(client.get("name"), str)
        and isinstance(client.get("version"), str)
    )
    if not plain:
        return None
    answer = {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": initialize_result(params["protocolVersion"]),
    }
    return request_id, json.dumps(answer, ensure_ascii=False)
