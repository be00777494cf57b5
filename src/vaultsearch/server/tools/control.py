"""The MCP tools that control the index: ``reindex``, ``cancel_index``, ``index_status``
and ``reload_config``.

Runs go through the server's ``LiveIndex`` (so they queue behind and coalesce with the
watcher's) and its ``IndexRunner`` (so one progress snapshot describes whatever runs).
A ``reindex`` whose caller sent a progress token waits for the run and reports it as
MCP progress notifications; without one it returns at once. Answers carry no output
schema: structured content for programs, the same facts as text for the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from vaultsearch.app.browse import confine
from vaultsearch.app.live import LiveIndex
from vaultsearch.app.reload import reload_config
from vaultsearch.app.vault import Vault, write_error
from vaultsearch.errors import IndexMissingError
from vaultsearch.fault import retry_note
from vaultsearch.indexing.runner import RunSnapshot, shown_run
from vaultsearch.server.activity import ActivityLog
from vaultsearch.server.tools.core import agent_errors

POLL_SECONDS = 0.25
MAX_FAILED_SHOWN = 20
STATUS_KEYS = ("notes", "chunks", "sentences", "notes_awaiting_sentences", "links",
               "resolved_links", "broken_links", "model", "spec_version", "last_indexed",
               "size_on_disk")  # fmt: skip


def answer(data: dict[str, Any], text: str) -> CallToolResult:
    clean = {k: v for k, v in data.items() if v is not None}
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=clean)


def progress_line(snap: RunSnapshot | dict[str, Any]) -> str:
    """One line for a run: a snapshot of this process's, or one recorded in the index
    folder by any process (``shown_run``), with who ran it and why."""
    d = snap.to_dict() if isinstance(snap, RunSnapshot) else snap
    if d["state"] == "idle":
        return "no index run recorded"
    stage = f" (stage {d['stage']})" if d.get("stage") else ""
    line = (
        f"{d.get('kind')} {d['state']}{stage}: {d['percent']:.0f}%, "
        f"{d.get('files_done', 0)}/{d.get('files_total', 0)} files, "
        f"{d.get('chunks_done', 0)}/{d.get('chunks_total', 0)} texts embedded"
    )
    if d.get("by"):
        line += f" (by {d['by']}, pid {d.get('pid')}" + (
            f": {d['reason']})" if d.get("reason") else ")"
        )
    if d.get("current_file"):
        line += f", now {d['current_file']}"
    if d.get("error"):
        line += f"; error: {d['error']}"
    if d.get("note"):
        line += f"; {d['note']}"
    return line


class ControlTools:
    def __init__(
        self,
        vault: Vault,
        live: LiveIndex,
        watching: Callable[[], bool],
        activity: ActivityLog | None = None,
    ) -> None:
        self.vault = vault
        self.live = live
        self.runner = vault.runner()
        self.watching = watching
        self.activity = activity

    async def reindex(
        self,
        ctx: Context,
        full: Annotated[bool, Field(description="Re-parse every note, rebuild indexes.")] = False,
        path: Annotated[
            str | None, Field(description="Only this vault-relative file or folder.")
        ] = None,
    ) -> CallToolResult:
        with agent_errors():
            paths = None if path is None else [confine(self.vault.root, path)[0]]
            if full and paths:
                raise ToolError("Pass either path or full=true: a full rebuild reads every file.")
        cannot = write_error(self.vault.index_dir)
        if cannot is not None:
            raise ToolError(f"Not started: {cannot}; index into a folder you can write.")
        started = self.live.request(full, paths)
        what = "a full rebuild" if full else f"an update of {paths[0]}" if paths else "an update"
        data: dict[str, Any] = {"full": full, "path": paths[0] if paths else None}
        token = (ctx.request_context.meta or {}).get("progress_token")
        if token is not None:
            await self._follow(ctx)
        if self.live.state.role == "reader":
            data.update(started=False, role="reader")
            return answer(
                data, "Another vaultsearch process writes this index and keeps it current."
            )
        if token is None:
            data.update(started=started, already_running=not started)
            text = (
                f"Started {what} in the background; index_status shows its progress."
                if started
                else f"A run is going; {what} follows it."
            )
            return answer(data, text)
        summary = self.live.state.last_summary or {}
        data.update(started=True, summary=summary, error=self.live.state.last_error)
        if self.live.state.last_error:
            raise ToolError(f"The index run failed: {self.live.state.last_error}")
        verb = "was cancelled" if summary.get("cancelled") else "is done"
        counts = ", ".join(
            f"{summary[k]} {k}" for k in ("added", "updated", "moved", "removed") if summary.get(k)
        )
        return answer(
            data, f"{what[0].upper()}{what[1:]} {verb}" + (f": {counts}." if counts else ".")
        )

    async def _follow(self, ctx: Context) -> None:
        """Report the runs until the index is idle; the percent never goes back, though a
        queued run may follow the one in progress."""
        sent = -1.0
        while True:
            idle = await anyio.to_thread.run_sync(self.live.wait_idle, POLL_SECONDS)
            if self.live.state.role == "reader":  # another process writes: nothing to follow
                return
            snap = self.runner.snapshot()
            percent = 100.0 if idle else snap.percent
            if percent > sent or idle:
                sent = max(sent, percent)
                await ctx.report_progress(sent, 100.0, progress_line(snap))
            if idle:
                return

    def cancel_index(self) -> CallToolResult:
        cancelling = self.runner.cancel()
        snap = self.runner.snapshot()
        if not cancelling:
            return answer({"cancelling": False}, "Nothing is running.")
        text = (
            f"Cancelling the {snap.kind} at {snap.percent:.0f}%: it stops after the current "
            "model call; what is done stays, the rest is indexed by the next run."
        )
        return answer({"cancelling": True, "progress": snap.to_dict()}, text)

    def index_status(self) -> CallToolResult:
        # the run's state first: once it says done or cancelled, what is read next
        # already sees the generation that run published
        snap = self.runner.snapshot()
        run = shown_run(self.runner)
        with agent_errors():
            try:
                st: dict[str, Any] = self.vault.status()
            except IndexMissingError:
                st = {}
            counts = self.vault.file_counts()
        live = self.live.state
        last_error = live.last_error or st.get("write_error") or snap.error
        data: dict[str, Any] = {
            "vault": str(self.vault.root),
            "index_exists": bool(st),
            **{k: st[k] for k in STATUS_KEYS if st.get(k) is not None},
            "files": counts.to_dict(),
            "pending_changes": counts.pending,
            "failed": counts.failed_items(MAX_FAILED_SHOWN),
            "progress": run,
            "role": live.role,
            "indexing": live.indexing,
            "runs": live.runs,
            "last_summary": live.last_summary,
            "watching": self.watching(),
            "last_error": last_error,
        }
        head = (
            f"index: {st['counts_line']}; model {st.get('model')}; "
            f"last indexed {st.get('last_indexed')}"
            if st
            else f"no index yet for {self.vault.root}"
        )
        lines = [
            head,
            f"files: {counts.total} total, {counts.indexed} indexed, {counts.pending} pending "
            f"changes, {counts.failed_line()}",
            progress_line(run),
            f"role {live.role}, {'watching' if data['watching'] else 'not watching'} for changes",
        ]
        if last_error:
            lines.append(f"last error: {last_error}")
        lines += [
            f"failed {x['path']}: {x['reason']}{retry_note(x.get('tries'))}" for x in data["failed"]
        ]
        return answer(data, "\n".join(lines))

    def reload_config(self) -> CallToolResult:
        result = reload_config(self.vault)
        if self.activity is not None:
            self.activity.add("config_reload", result.message())
        if result.error:
            raise ToolError(result.message())
        return answer(result.to_dict(), result.message())
