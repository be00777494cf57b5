"""Raw documents: text an agent hands over under an id, kept as one Markdown file per
id (frontmatter + text) in the documents folder, so they are searched, linked and
edited like any note and survive a rebuild of the index."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import yaml

from vaultsearch.errors import QueryError
from vaultsearch.writes.confined import MAX_NAME_BYTES, ConfinedVault
from vaultsearch.writes.guard import folder_path, writable

_MAX_ID = 200


@dataclass(frozen=True, slots=True)
class Document:
    id: str
    text: str
    metadata: dict[str, Any]


@dataclass(frozen=True, slots=True)
class StoredDocument:
    id: str
    path: str
    size: int


def file_name(doc_id: str) -> str:
    """Reversible: every character but letters, digits, '-', '_' and '.' is %-encoded."""
    if not isinstance(doc_id, str) or not doc_id.strip() or len(doc_id) > _MAX_ID:
        raise QueryError(
            f"Document id {doc_id!r} must be a non-empty string of at most 200 characters."
        )
    name = quote(doc_id, safe="-_.")
    if name.startswith("."):
        name = "%2E" + name[1:]
    if len(name) + 3 > MAX_NAME_BYTES:
        raise QueryError(
            f"Document id {doc_id[:40]!r}... is too long for a file name: it would need "
            f"{len(name) + 3} bytes and a name can have {MAX_NAME_BYTES}; ids outside "
            "letters, digits, '-', '_' and '.' take 3 bytes per byte.",
            fix="use a shorter id",
        )
    return name + ".md"


def doc_id(name: str) -> str:
    return unquote(name.removesuffix(".md"))


def parse(raw: Any, n: int) -> Document:
    if not isinstance(raw, dict):
        raise QueryError(f"Document {n} must be an object with id and text.")
    unknown = sorted(set(raw) - {"id", "text", "metadata"})
    if unknown:
        raise QueryError(
            f"Document {n} has unknown field(s) {', '.join(unknown)}; it takes id, text, metadata."
        )
    text, metadata = raw.get("text"), raw.get("metadata") or {}
    if not isinstance(text, str):
        raise QueryError(f"Document {n} needs text (a string).")
    if not isinstance(metadata, dict) or "id" in metadata:
        raise QueryError(f"Document {n}: metadata must be an object of properties, without 'id'.")
    file_name(raw.get("id"))  # type: ignore[arg-type]  # checks the id, whatever it is
    return Document(raw["id"], text, metadata)


def render(doc: Document) -> str:
    front = yaml.safe_dump(
        {"id": doc.id, **doc.metadata},
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
    )
    body = doc.text if doc.text.endswith("\n") else doc.text + "\n"
    return f"---\n{front}---\n{body}"


class DocumentStore:
    def __init__(self, root: Path, folder: str, index_dir: Path | None) -> None:
        self.root = root
        self.folder = folder
        self.index_dir = index_dir
        self.files = ConfinedVault(root, index_dir)

    def _path(self, doc_id_: str) -> str:
        rel_folder, _ = folder_path(self.root, self.folder)
        name = file_name(doc_id_)
        rel, _ = writable(self.root, f"{rel_folder}/{name}" if rel_folder else name, self.index_dir)
        return rel

    def upsert(self, docs: list[Document]) -> list[tuple[StoredDocument, bool]]:
        """(stored, created) per document; each file replaced atomically."""
        out = []
        for doc in docs:
            rel = self._path(doc.id)
            data = render(doc).encode("utf-8")
            created = self.files.write(rel, data)
            out.append((StoredDocument(doc.id, rel, len(data)), created))
        return out

    def delete(self, ids: list[str]) -> tuple[list[str], list[str]]:
        """(deleted paths, ids that were not stored)."""
        deleted, missing = [], []
        for i in ids:
            rel = self._path(i)
            try:
                self.files.unlink(rel)
                deleted.append(rel)
            except FileNotFoundError:
                missing.append(i)
        return deleted, missing

    def list(self, limit: int, cursor: str | None) -> tuple[list[StoredDocument], int, str | None]:
        """One page in file-name order; the cursor is the last file name of the page."""
        rel_folder, folder = folder_path(self.root, self.folder)
        try:
            names = sorted(
                e.name for e in os.scandir(folder) if e.is_file() and e.name.endswith(".md")
            )
        except FileNotFoundError:
            names = []
        after = [n for n in names if cursor is None or n > cursor]
        page = after[:limit]
        docs = [
            StoredDocument(
                doc_id(n), f"{rel_folder}/{n}" if rel_folder else n, (folder / n).stat().st_size
            )
            for n in page
        ]
        more = page[-1] if len(after) > limit else None
        return docs, len(names), more
