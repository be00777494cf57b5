"""Which chunk stands for a code file in its hit: a definition before the module's lines.

A file's module section (its docstring, imports and constants) sums up everything the
file does, so it matches a plain-words description of one of its functions about as
well as the function does, often better, and shown first it names the module where the
reader wanted the function. A hit names one place to open: when a definition of the file
was retrieved too, the best of them leads and the module's lines follow. The file's rank
does not change, only the passage and qualified name that stand for it.
"""

from __future__ import annotations

from collections.abc import Sequence

from vaultsearch.store.catalog import ChunkRow

MODULE = "module"
"""The node type the code parser gives the lines between top-level definitions."""


def definition_first(rows: Sequence[ChunkRow]) -> list[ChunkRow]:
    """``rows`` (one note's chunks, best first) with the best definition first when a
    module section leads; other notes' rows unchanged."""
    if not rows or rows[0].node_type != MODULE:
        return list(rows)
    lead = next((r for r in rows if r.node_type and r.node_type != MODULE), None)
    if lead is None:
        return list(rows)
    return [lead, *(r for r in rows if r is not lead)]
