"""Which parser reads which file, decided by gitignore-style globs from the config.

The mapping is ordered: the first glob that matches wins, so a user can route one folder
to another parser ahead of the catch-all ``**/*.md``. Matching ignores case because
vaults move between case-insensitive (macOS, Windows) and case-sensitive file systems.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Protocol, cast

from vaultsearch.models import ParsedNote
from vaultsearch.parsermap import (
    CODE_EXTENSIONS,
    DEFAULT_PARSER_MAP,
    PARSER_NAMES,
    PLAIN_CODE_EXTENSIONS,
    compile_parser_map,
)
from vaultsearch.parsers.code import CodeParser
from vaultsearch.parsers.codeplain import PlainCodeParser
from vaultsearch.parsers.markdown import MarkdownParser
from vaultsearch.parsers.pdf import PdfParser
from vaultsearch.parsers.text import PlainTextParser

__all__ = [
    "CODE_EXTENSIONS",
    "DEFAULT_PARSER_MAP",
    "PLAIN_CODE_EXTENSIONS",
    "BinaryParser",
    "CodeParser",
    "MarkdownParser",
    "Parser",
    "ParserRegistry",
    "PdfParser",
    "PlainCodeParser",
    "PlainTextParser",
    "is_binary",
    "parse_content",
]


class Parser(Protocol):
    name: str

    def parse(self, path: str, text: str) -> ParsedNote:
        """Parse one file; ``path`` is vault-relative POSIX. Must not raise on bad input."""
        ...


class BinaryParser(Parser, Protocol):
    """A parser of files that are not text (PDF): indexing hands it the bytes."""

    binary: bool

    def parse_bytes(self, path: str, data: bytes) -> ParsedNote:
        """Parse one file's bytes; raises ``UnreadableFile`` with the reason to record."""
        ...


def is_binary(parser: Parser) -> bool:
    return bool(getattr(parser, "binary", False))


def parse_content(parser: Parser, path: str, text: str, data: bytes) -> ParsedNote:
    """The one place a file meets its parser: the bytes for a binary parser (PDF), the
    decoded text otherwise."""
    if is_binary(parser):
        return cast(BinaryParser, parser).parse_bytes(path, data)
    return parser.parse(path, text)


_FACTORIES: dict[str, Callable[[], Parser]] = {
    "markdown": MarkdownParser,
    "text": PlainTextParser,
    "code": CodeParser,
    "code-plain": PlainCodeParser,
    "pdf": PdfParser,
}
assert set(_FACTORIES) == set(PARSER_NAMES), "parsermap.PARSER_NAMES names every parser"


class ParserRegistry:
    """Parsers are created on first use and then shared; they are not thread-safe."""

    def __init__(self, mapping: Mapping[str, str] = DEFAULT_PARSER_MAP) -> None:
        self._rules: list[tuple[re.Pattern[str], str]] = compile_parser_map(mapping)
        self._instances: dict[str, Parser] = {}

    def parser_for(self, path: str) -> Parser | None:
        rel = path.replace("\\", "/").lstrip("/")
        rel = rel.removeprefix("./")
        for regex, name in self._rules:
            if regex.match(rel):
                return self.instance(name)
        return None

    def known_parsers(self) -> list[str]:
        return sorted(_FACTORIES)

    def instance(self, name: str) -> Parser:
        if name not in self._instances:
            self._instances[name] = _FACTORIES[name]()
        return self._instances[name]
