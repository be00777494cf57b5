"""The opt-in write tools: notes and raw documents.

Listed only when writes are enabled (``[writes] enabled = true`` or ``mcp
--allow-writes``). Every write is confined to the vault (``writes.guard`` judges the
path, ``writes.confined`` writes it), atomic, logged as a ``write`` event, and indexed
before the tool answers, so the very next ``search`` finds it. Enabling them sweeps
the temp files that writes killed earlier left in the vault.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.types import CallToolResult
from pydantic import Field

from vaultsearch.app.browse import link_neighbourhood
from vaultsearch.errors import QueryError
from vaultsearch.server.tools.core import PathArg, agent_errors
from vaultsearch.server.tools.resources import note_uri
from vaultsearch.server.tools.syncindex import index_paths
from vaultsearch.server.tools.toolbox import answer
from vaultsearch.writes.confined import sweep_temps
from vaultsearch.writes.documents import DocumentStore, parse
from vaultsearch.writes.guard import note_path
from vaultsearch.writes.notes import NoteFiles

if TYPE_CHECKING:
    from vaultsearch.server.mcp.calllog import CallLog
    from vaultsearch.server.tools.core import VaultTools


class WriteTools:
    def __init__(self, tools: VaultTools, log: CallLog) -> None:
        self.tools = tools
        vault = tools.vault
        self.vault = vault
        self.log = log
        self.notes = NoteFiles(vault.root, vault.index_dir, self._note_paths)
        self.lock = threading.Lock()
        """One file change at a time: two edits of one note must not both read the old text."""
        self.documents = DocumentStore(
            vault.root, vault.config.writes.documents_folder, vault.index_dir
        )
        swept = sweep_temps(vault.root, vault.index_dir)
        if swept:
            log.write({"event": "swept_temps", "paths": swept})

    def _note_paths(self) -> list[str]:
        return [p for p, info in self.vault.files().items() if not info.skip]

    def _done(self, tool: str, paths: list[str], data: dict[str, Any], text: str) -> CallToolResult:
        self.log.write({"event": "write", "tool": tool, "paths": paths})
        pending = index_paths(self.tools.live, paths)
        data["searchable"] = pending is None
        if pending:
            data["message"] = pending
            text += f"\n{pending}"
        return answer(data, text)

    # --- notes ------------------------------------------------------------------------
    def write_note(
        self,
        path: PathArg,
        content: Annotated[str, Field(description="The whole note, Markdown.")],
        overwrite: Annotated[bool, Field(description="Replace an existing note.")] = False,
    ) -> CallToolResult:
        with agent_errors():
            with self.lock:
                rel, created = self.notes.write(path, content, overwrite)
            verb = "created" if created else "overwrote"
            return self._done(
                "write_note",
                [rel],
                {"path": rel, "uri": note_uri(rel), "created": created},
                f"{verb} {rel}",
            )

    def edit_note(
        self,
        path: PathArg,
        operation: Annotated[
            Literal["append", "prepend", "replace_section", "find_replace"],
            Field(description="prepend goes after frontmatter; replace_section keeps the heading."),
        ],
        content: Annotated[
            str, Field(description="Text to add, the new section body, or the replacement.")
        ] = "",
        heading: Annotated[
            str | None, Field(description="replace_section: 'Heading' or 'A > B'.")
        ] = None,
        find: Annotated[
            str | None, Field(description="find_replace: exact text to replace.")
        ] = None,
        expected_count: Annotated[
            int | None, Field(ge=1, description="find_replace: refuse unless it occurs this often.")
        ] = None,
    ) -> CallToolResult:
        with agent_errors():
            with self.lock:
                rel = self.notes.edit(path, operation, content, heading, find, expected_count)
            return self._done(
                "edit_note", [rel], {"path": rel, "operation": operation}, f"{operation}: {rel}"
            )

    def move_note(
        self,
        path: PathArg,
        new_path: Annotated[str, Field(description="New vault-relative path.")],
    ) -> CallToolResult:
        with agent_errors():
            with self.lock:
                r = self.notes.move(path, new_path)
            changed = sorted(r.rewritten)
            data = {"path": r.new, "old_path": r.old, "rewritten": r.rewritten}
            links = sum(r.rewritten.values())
            text = f"moved {r.old} -> {r.new}; {links} links rewritten in {len(changed)} notes"
            return self._done("move_note", [r.old, r.new, *changed], data, text)

    def delete_note(self, path: PathArg) -> CallToolResult:
        with agent_errors():
            with self.lock:
                linked = self._backlinks(path)
                rel = self.notes.delete(path)
            data: dict[str, Any] = {"path": rel, "deleted": True}
            text = f"deleted {rel}"
            if linked:
                data["still_linked_from"] = linked
                text += f"; links to it remain in {', '.join(linked[:10])}"
            return self._done("delete_note", [rel], data, text)

    def _backlinks(self, path: str) -> list[str]:
        """Notes whose links the deletion breaks, from the index, so the agent can fix them."""
        snap = self.tools.browser.snapshot()
        if snap is None:
            return []
        rel, _ = note_path(self.vault.root, path, self.vault.index_dir)
        return [x.path for x in link_neighbourhood(snap.reader("graph").graph, rel).backlinks]

    # --- documents --------------------------------------------------------------------
    def upsert_documents(
        self,
        documents: Annotated[
            list[dict[str, Any]],
            Field(min_length=1, max_length=100, description="Each {id, text, metadata?}."),
        ],
    ) -> CallToolResult:
        with agent_errors():
            docs = [parse(d, n) for n, d in enumerate(documents, 1)]
            if len({d.id for d in docs}) != len(docs):
                raise QueryError("Two documents have the same id; send each id once per call.")
            with self.lock:
                stored = self.documents.upsert(docs)
            rows = [{"id": s.id, "path": s.path, "created": c} for s, c in stored]
            created = sum(c for _, c in stored)
            folder = self.vault.config.writes.documents_folder
            text = f"{created} created, {len(rows) - created} updated in {folder}/"
            return self._done(
                "upsert_documents", [s.path for s, _ in stored], {"documents": rows}, text
            )

    def delete_documents(
        self,
        ids: Annotated[list[str], Field(min_length=1, max_length=500, description="Document ids.")],
    ) -> CallToolResult:
        with agent_errors():
            with self.lock:
                deleted, missing = self.documents.delete(ids)
            data: dict[str, Any] = {"deleted": len(deleted), "missing": missing}
            text = f"deleted {len(deleted)}" + (
                f"; not stored: {', '.join(missing)}" if missing else ""
            )
            return self._done("delete_documents", deleted, data, text)

    def list_documents(
        self,
        limit: Annotated[int, Field(ge=1, le=500, description="Documents per page.")] = 50,
        cursor: Annotated[str | None, Field(description="next_cursor of the last page.")] = None,
    ) -> CallToolResult:
        with agent_errors():
            docs, total, more = self.documents.list(limit, cursor)
            rows = [{"id": d.id, "path": d.path, "bytes": d.size} for d in docs]
            data: dict[str, Any] = {"documents": rows, "total": total}
            if more:
                data["next_cursor"] = more
            text = "\n".join(
                [f"{len(rows)} of {total} documents"]
                + [f"{r['id']}  {r['path']}" for r in rows]
                + ([f"next page: cursor={more}"] if more else [])
            )
            return answer(data, text)
