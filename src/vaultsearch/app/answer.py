"""``Answer``: what a read-only question about the vault gives back, to a program and to
a reader at once.

The MCP tools send ``data`` as structured content and ``text`` as text content; the CLI
prints one or the other (``--json``). Building both in one place keeps them saying the
same thing, and the rules every answer follows live here: no ``None`` values, and every
list capped with its total and a word on how to see more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Answer:
    data: dict[str, Any]
    text: str


def answer(data: dict[str, Any], lines: Sequence[str | None]) -> Answer:
    clean = {k: v for k, v in data.items() if v is not None}
    return Answer(clean, "\n".join(x for x in lines if x))


def page(label: str, items: list[Any], limit: int) -> tuple[list[Any], str]:
    """The shown part of a list and the line that says what was left out."""
    if len(items) > limit:
        return items[:limit], f"{limit} of {len(items)} {label} (raise limit for more)"
    return items, f"{len(items)} {label}"


def listed(label: str, names: Sequence[str], most: int = 25) -> str | None:
    """``label: a, b, c (+n more)`` for a text line, or None for an empty list."""
    if not names:
        return None
    more = f" (+{len(names) - most} more)" if len(names) > most else ""
    return f"{label}: {', '.join(names[:most])}{more}"
