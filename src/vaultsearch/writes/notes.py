"""Note files changed on an agent's behalf: create or overwrite, edit, move, delete.

Each change is one atomic replacement per file, made through ``confined`` so that no
folder swapped for a link can take it out of the vault. A move rewrites the links in
other notes that lead to the moved one (see ``links``); it writes the new file first
and removes the old one last, so an interruption leaves a copy, never a lost note.
Notes reached only through a symlinked folder are read like any note but never written:
their links to a moved note stay as they were.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from vaultsearch.errors import PathOutsideVaultError, QueryError
from vaultsearch.links import LinkResolver
from vaultsearch.writes import edits
from vaultsearch.writes.confined import ConfinedVault
from vaultsearch.writes.guard import note_path
from vaultsearch.writes.links import Move, rebase_links, rewrite_links

EDIT_OPS = ("append", "prepend", "replace_section", "find_replace")


@dataclass
class MoveResult:
    old: str
    new: str
    rewritten: dict[str, int] = field(default_factory=dict)
    """Notes whose links changed (the moved one under its new path) -> how many links."""


class NoteFiles:
    def __init__(self, root: Path, index_dir: Path | None, notes: Callable[[], list[str]]) -> None:
        self.root = root.resolve()
        self.index_dir = index_dir
        self.notes = notes
        """Vault-relative paths of every note now (for the links a move must rewrite)."""
        self.files = ConfinedVault(self.root, index_dir)

    def _existing(self, path: str) -> tuple[str, bytes]:
        rel, _ = note_path(self.root, path, self.index_dir)
        try:
            return rel, self.files.read(rel)
        except FileNotFoundError:
            raise QueryError(
                f"There is no note {rel!r}; list_notes or search give existing paths."
            ) from None

    def write(self, path: str, content: str, overwrite: bool) -> tuple[str, bool]:
        """(path, created)."""
        rel, _ = note_path(self.root, path, self.index_dir)
        try:
            return rel, self.files.write(rel, content.encode("utf-8"), replace=overwrite)
        except FileExistsError:
            raise QueryError(
                f"{rel!r} exists already; pass overwrite=true to replace it."
            ) from None

    def edit(
        self,
        path: str,
        op: str,
        content: str = "",
        heading: str | None = None,
        find: str | None = None,
        expected_count: int | None = None,
    ) -> str:
        rel, raw = self._existing(path)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise QueryError(f"{rel!r} is not UTF-8 text, so it cannot be edited.") from None
        if op == "append":
            new = edits.append(text, content)
        elif op == "prepend":
            new = edits.prepend(text, content)
        elif op == "replace_section":
            if not heading:
                raise QueryError(
                    "replace_section needs heading, e.g. 'Pests' or 'Tomatoes > Pests'."
                )
            new = edits.replace_section(text, heading, content)
        elif op == "find_replace":
            new = edits.find_replace(text, find or "", content, expected_count)
        else:
            raise QueryError(f"Unknown edit {op!r}; use one of {', '.join(EDIT_OPS)}.")
        self.files.write(rel, new.encode("utf-8"))
        return rel

    def delete(self, path: str) -> str:
        rel, _ = note_path(self.root, path, self.index_dir)
        try:
            self.files.unlink(rel)
        except FileNotFoundError:
            raise QueryError(
                f"There is no note {rel!r}; list_notes or search give existing paths."
            ) from None
        return rel

    def move(self, path: str, new_path: str) -> MoveResult:
        old, data = self._existing(path)
        new, _ = note_path(self.root, new_path, self.index_dir)
        if self.files.exists(new):
            raise QueryError(f"{new!r} exists already; choose another new_path or delete it first.")
        others = [n for n in self.notes() if n != old]
        before = LinkResolver((n, ()) for n in [*others, old])
        stem = posixpath.splitext(posixpath.basename(new))[0].lower()
        same_name = [
            n for n in others if posixpath.splitext(posixpath.basename(n))[0].lower() == stem
        ]
        move = Move(old, new, bare_name_unique=not same_name)
        result = MoveResult(old, new)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None:  # relative links rebased on the new folder, then links to itself
            text, n_rebased = rebase_links(text, move, before.resolve)
            text, n_self = rewrite_links(text, new, move, before.resolve)
            if n_self or n_rebased:
                data = text.encode("utf-8")
                result.rewritten[new] = n_self + n_rebased
        try:
            self.files.write(new, data, replace=False)
        except FileExistsError:
            raise QueryError(
                f"{new!r} exists already; choose another new_path or delete it first."
            ) from None
        for note in others:
            try:
                text = self.files.read(note).decode("utf-8")
            except (OSError, UnicodeDecodeError, QueryError, PathOutsideVaultError):
                continue
            if "[[" not in text and "](" not in text:
                continue
            changed, n = rewrite_links(text, note, move, before.resolve)
            if n:
                self.files.write(note, changed.encode("utf-8"))
                result.rewritten[note] = n
        self.files.unlink(old)
        return result
