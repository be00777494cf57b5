"""Print the Markdown table of every search parameter against every surface.

Each column is read from what that surface really publishes: the fields
``Vault.search_answer`` takes, the flags of ``vaultsearch search``, the MCP tool's
argument signature and the REST body in ``/openapi.json``. ``docs/Search.md`` holds the
output; ``tests/test_surfaces.py`` fails when the two differ.

    python scripts/search_params.py
"""

from __future__ import annotations

import inspect


def surfaces() -> dict[str, set[str]]:
    """The search parameters each surface accepts, by their canonical names."""
    from vaultsearch.app.vault import Vault
    from vaultsearch.cli.main import _subcommands, build_parser
    from vaultsearch.search.request import parameters
    from vaultsearch.server.http.openapi import openapi_spec
    from vaultsearch.server.tools.core import VaultTools

    python = set(inspect.signature(Vault.search).parameters) | {n for n, _, _ in parameters()}
    search = _subcommands(build_parser())["search"]
    cli = {a.dest for a in search._actions}
    mcp = set(inspect.signature(VaultTools.search).parameters)
    body = openapi_spec()["components"]["schemas"]["SearchRequest"]["properties"]
    return {"Python": python, "CLI": cli, "MCP": mcp, "REST": set(body)}


def table() -> str:
    from vaultsearch.search.request import parameters

    columns = surfaces()
    head = "| parameter | CLI flag | " + " | ".join(columns) + " | meaning |"
    head = head.replace("| Python |", "| Python (`SearchRequest`) |")
    rows = [head, "|" + "---|" * (len(columns) + 3)]
    for name, default, meta in parameters():
        marks = " | ".join("✅" if name in got else "❌" for got in columns.values())
        flag = meta["cli"] if meta["cli"] != "QUERY" else "(positional)"
        shown = "" if default in (None, False, "") else f" Default {default}."
        text = (meta["help"] + shown).replace("*", "\\*")
        rows.append(f"| `{name}` | `{flag}` | {marks} | {text} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
