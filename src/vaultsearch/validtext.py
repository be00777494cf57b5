"""Strings from outside made valid Unicode before they reach a tokenizer or a library.

A lone UTF-16 surrogate is legal in a Python str (from a JSON escape such as
``"\\ud800"``, or from a byte of argv that was not UTF-8) but not in UTF-8: the
tokenizer, Tantivy and SQLite refuse it with an unrelated error.
"""

from __future__ import annotations

from typing import Any


def valid_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD; a surrogate pair is
    joined into the character it stands for."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def valid_strings(value: Any) -> Any:
    """Every string in a JSON-like value made valid text, keys included."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, list | tuple):
        return [valid_strings(v) for v in value]
    if isinstance(value, dict):
        return {valid_strings(k): valid_strings(v) for k, v in value.items()}
    return value
