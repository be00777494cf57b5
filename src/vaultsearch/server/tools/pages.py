"""MCP tools that open, list and stop Index Console pages (``vaultsearch serve``).

An agent hands a person the page's URL; the page runs in its own process so it stays
up when the agent's session ends. Answers are short JSON text without output schemas:
they cost the tool list almost nothing.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import anyio
from pydantic import Field

from vaultsearch.server.http import consoles
from vaultsearch.server.tools.core import agent_errors

if TYPE_CHECKING:
    from vaultsearch.app.vault import Vault


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class ConsoleTools:
    def __init__(self, vault: Vault) -> None:
        self.vault = vault

    async def open_index_console(self) -> str:
        with agent_errors():
            record = consoles.find(self.vault.index_dir, wait=0)
            started = record is None
            if record is None:
                record = await anyio.to_thread.run_sync(
                    consoles.start_background,
                    self.vault.root,
                    self.vault.index_dir,
                    self.vault.config.source,
                )
        return _text({"url": record.url, "started": started, "pid": record.pid})

    async def list_index_consoles(self) -> str:
        records = await anyio.to_thread.run_sync(consoles.list_running)
        keep = ("vault", "url", "pid", "started")
        return _text({"consoles": [{k: r.to_dict()[k] for k in keep} for r in records]})

    async def stop_index_console(
        self,
        url: Annotated[
            str, Field(description="A URL from list_index_consoles; default: this vault's.")
        ] = "",
    ) -> str:
        def target() -> consoles.ConsoleRecord | None:
            if not url:
                return consoles.find(self.vault.index_dir, wait=0)
            wanted = url.rstrip("/") + "/"
            return next((r for r in consoles.list_running() if r.url == wanted), None)

        record = await anyio.to_thread.run_sync(target)
        if record is None:
            where = url or "this vault"
            return _text({"stopped": False, "reason": f"no Index Console runs for {where}"})
        stopped = await anyio.to_thread.run_sync(consoles.stop, record)
        return _text({"stopped": stopped, "url": record.url})
