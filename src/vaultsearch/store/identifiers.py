"""Identifiers split into their words, for the keyword index of code.

Tantivy's tokenizer keeps ``parseHTTPResponse`` as one token, so a search for "http
response" would never find it; snake_case it already splits at the underscores. The
words of every compound identifier are added beside the code (the code itself stays
as it is, so the whole identifier is still found as typed).
"""

from __future__ import annotations

import re

_IDENTIFIER = re.compile(r"[^\W\d_][^\W_]*(?:_+[^\W_]+)*")


def split_identifier(identifier: str) -> list[str]:
    """``parseHTTPResponse`` -> parse, http, response; ``get_userName`` -> get, user, name.

    Digits stay with their word (``sha256``, ``base64``), as the keyword tokenizer keeps
    them; any script with case splits the same way (``größeÄndern``)."""
    words: list[str] = []
    for part in identifier.split("_"):
        start = 0
        for i in range(1, len(part)):
            prev, ch = part[i - 1], part[i]
            nxt = part[i + 1] if i + 1 < len(part) else ""
            if ch.isupper() and (
                prev.islower() or prev.isdigit() or (prev.isupper() and nxt.islower())
            ):
                words.append(part[start:i])
                start = i
        if part[start:]:
            words.append(part[start:])
    return [w.lower() for w in words]


def identifier_words(code: str) -> str:
    """The lower-cased words of each distinct identifier that has a camelCase or
    PascalCase joint, one identifier per line, in order of first appearance."""
    lines: list[str] = []
    seen: set[str] = set()
    for match in _IDENTIFIER.finditer(code):
        ident = match.group()
        if ident in seen:
            continue
        seen.add(ident)
        words = split_identifier(ident)
        if len(words) > len(ident.strip("_").split("_")):
            lines.append(" ".join(words))
    return "\n".join(lines)
