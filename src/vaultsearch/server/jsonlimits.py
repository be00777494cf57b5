"""How deep and how large a JSON message may be, measured before it is parsed.

``json.loads`` and every recursive walk after it (pydantic, the string cleaning) use
the interpreter's stack: a few hundred levels of nesting raise ``RecursionError``
somewhere no one expects it. No request of this server needs more than a handful of
levels, so anything deeper than ``MAX_DEPTH`` is refused from its raw bytes, where
counting brackets outside strings costs no recursion at all.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate

MAX_DEPTH = 64
"""Levels of ``[`` / ``{``; a tools/call needs about five."""
MAX_BYTES = 4 * 1024 * 1024
"""A stdio line, and the default HTTP body cap (``server.max_body_bytes``); the SDK's
own cap on ``/mcp`` is the same 4 MiB."""
ID_WINDOW = 65_536
"""Bytes of a refused message searched for its request id."""

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_DELTA = [0] * 256
for _b in b"[{":
    _DELTA[_b] = 1
for _b in b"]}":
    _DELTA[_b] = -1
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.S)
_ID_VALUE = re.compile(rb'\s*:\s*(-?\d{1,18}(?![\d.eE])|"[^"\\]{0,256}")')


def nesting_depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in ``raw``, brackets inside strings
    not counted; linear in C-level loops, whatever the input."""
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_DELTA.__getitem__, brackets)), default=0)


def too_deep(raw: bytes) -> bool:
    return nesting_depth(raw) > MAX_DEPTH


def recover_id(raw: bytes) -> int | str | None:
    """The top-level ``"id"`` of a message that is not parsed (too deep, too long), when
    it stands in the first ``ID_WINDOW`` bytes: so the client learns which request
    failed."""
    head = raw[:ID_WINDOW]
    depth = 0
    for token in _TOKEN.finditer(head):
        text = token.group()
        if text in (b"[", b"{"):
            depth += 1
        elif text in (b"]", b"}"):
            depth -= 1
        elif depth == 1 and text == b'"id"':
            value = _ID_VALUE.match(head, token.end())
            if value is None:
                return None
            try:
                found = json.loads(value.group(1))
            except ValueError:
                return None
            return found if isinstance(found, int | str) else None
    return None


def depth_sentence() -> str:
    return f"the JSON is nested deeper than {MAX_DEPTH} levels"


def size_sentence(size: int, limit: int) -> str:
    return f"the message is {size:,} bytes, over the limit of {limit:,} bytes"
