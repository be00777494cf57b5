"""What every framework adapter makes of a hit: the passage it cites and its metadata."""

from __future__ import annotations

from typing import Any

from vaultsearch.app.sourceread import indexed_text
from vaultsearch.app.vault import Vault
from vaultsearch.errors import VaultsearchError
from vaultsearch.models import Hit

SHOWN = ("path", "title", "heading_path")
"""The metadata an LLM prompt may show; the rest is for the program."""


def passage(vault: Vault, hit: Hit) -> str:
    """The hit's lines of the file as indexed, not the snippet: a framework hands this
    text to an LLM, which needs the whole passage. The snippet if the file is gone."""
    try:
        text = indexed_text(vault, hit.path)[1]
    except VaultsearchError:
        return hit.snippet
    return "\n".join(text.splitlines()[hit.start_line - 1 : hit.end_line]) or hit.snippet


def metadata(hit: Hit) -> dict[str, Any]:
    out: dict[str, Any] = {
        "path": hit.path,
        "title": hit.title,
        "heading_path": hit.heading_path,
        "start_line": hit.start_line,
        "end_line": hit.end_line,
        "score": hit.score,
        "confidence": hit.confidence,
    }
    if hit.source:
        out["source"] = hit.source
    if hit.explain is not None:
        out["explain"] = hit.explain.to_dict()
    return out


def node_id(hit: Hit) -> str:
    return f"{hit.source}:{hit.path}#L{hit.start_line}-{hit.end_line}"
