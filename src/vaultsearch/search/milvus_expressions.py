"""Search filters as Milvus boolean expressions, with the local filters' meaning.

Each filter is exact against the fields ``schema`` denormalises onto every chunk row:
hierarchical tags through ``tag_keys``, folder names through ``folder_runs``,
frontmatter values normalised as ``filters._value_matches`` compares them. A folder
glob has no exact expression and is refused with a sentence.
"""

from __future__ import annotations

import json
from typing import Any

from vaultsearch.errors import QueryError
from vaultsearch.search.filters import VAULT, SearchFilters
from vaultsearch.store.milvus.schema import meta_values


def expression(filters: SearchFilters) -> str:
    """An expression for Milvus's ``filter=``; empty when nothing is filtered."""
    clauses: list[str] = []
    for tag in filters.tags:
        key = tag.lower().lstrip("#").rstrip("/")
        clauses.append(f"array_contains(tag_keys, {_s(key)})")
    if filters.folders:
        clauses.append(_any([_folder(f) for f in filters.folders]))
    for p in filters.paths:
        clauses.append(f"path_lower like {_s('%' + _like(p.lower()) + '%')}")
    if filters.after is not None:
        clauses.append(f"date >= {filters.after!r}")
    if filters.before is not None:
        clauses.append(f"date < {filters.before!r}")
    for key, wanted in filters.where.items():
        options = meta_values({key: wanted})[key]
        clauses.append(f"json_contains_any(meta[{_s(key)}], {literal(options)})")
    scope = filters.scope
    if scope.sources:
        names = [("" if s == VAULT else s) for s in scope.sources]
        clauses.append(f"source in {literal(names)}")
    if scope.kinds:
        clauses.append(f"kind in {literal(list(scope.kinds))}")
    if scope.prefixes:
        likes = [
            f"{f} like {_s(_like(p) + '%')}" for p in scope.prefixes for f in ("rel_path", "path")
        ]
        clauses.append(_any(likes))
    if scope.files:
        files = literal(list(scope.files))
        clauses.append(f"(rel_path in {files} or path in {files})")
    return " and ".join(clauses)


def _folder(spec: str) -> str:
    if any(c in spec for c in "*?["):
        raise QueryError(
            f"The folder filter {spec!r} is a glob, which a Milvus store cannot match exactly; "
            "give the folder from the root (/a/b) or by name."
        )
    if spec.startswith("/"):
        root = spec.strip("/")
        if not root:
            return "id >= 0"
        return f"(folder == {_s(root)} or folder like {_s(_like(root) + '/%')})"
    return f"array_contains(folder_runs, {_s(spec.strip('/'))})"


def _any(parts: list[str]) -> str:
    return "(" + " or ".join(parts) + ")"


def _s(value: Any) -> str:
    """A string literal; JSON's escaping is what Milvus's expression parser reads, but
    not its ``\\uXXXX`` form, so text outside ASCII is written as itself."""
    return json.dumps(str(value), ensure_ascii=False)


def literal(values: list[Any]) -> str:
    """A list literal for ``in``, ``json_contains_any`` and the like."""
    return json.dumps(values, ensure_ascii=False)


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def ids_in(name: str, ids: list[int]) -> str:
    return f"{name} in {literal(ids)}"
