"""Which parser reads which file, decided by gitignore-style globs from the config.

The mapping is ordered: the first glob that matches wins, so a user can route one folder
to another parser ahead of the catch-all ``**/*.md``. Matching ignores case because
vaults move between case-insensitive (macOS, Windows) and case-sensitive file systems.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Protocol, cast

from pathspec.patterns.gitignore.basic import GitIgnoreBasicPattern

from vaultsearch.models import ParsedNote
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

CODE_EXTENSIONS = ("py", "js", "mjs", "cjs", "jsx", "ts", "tsx", "go", "rs", "java")
"""Read by syntax tree (``code``)."""
PLAIN_CODE_EXTENSIONS = (
    "c", "h", "cc", "cpp", "hpp", "cs", "rb", "php", "swift", "kt", "scala", "sh", "lua",
)  # fmt: skip
"""Read by blank lines and indentation (``code-plain``): no grammar is shipped for them."""

DEFAULT_PARSER_MAP: dict[str, str] = {
    "**/*.md": "markdown",
    "**/*.markdown": "markdown",
    "**/*.txt": "text",
    **{f"**/*.{ext}": "code" for ext in CODE_EXTENSIONS},
    **{f"**/*.{ext}": "code-plain" for ext in PLAIN_CODE_EXTENSIONS},
    "**/*.pdf": "pdf",
}


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
_DIR_OR_END = "(?:/|$)"


class ParserRegistry:
    """Parsers are created on first use and then shared; they are not thread-safe."""

    def __init__(self, mapping: Mapping[str, str] = DEFAULT_PARSER_MAP) -> None:
        self._rules: list[tuple[re.Pattern[str], str]] = []
        for glob, name in mapping.items():
            if name not in _FACTORIES:
                allowed = ", ".join(self.known_parsers())
                raise ValueError(f"unknown parser {name!r} for {glob!r}; allowed: {allowed}")
            self._rules.append((_compile_glob(glob), name))
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


def _compile_glob(glob: str) -> re.Pattern[str]:
    """Gitignore semantics, except that a pattern naming files matches files only.

    pathspec lets ``*.md`` also match a directory ``x.md/`` and everything below it, which
    would hand ``x.md/data.txt`` to the Markdown parser.
    """
    if not isinstance(glob, str) or not glob.strip():
        raise ValueError(f"invalid parser glob {glob!r}: must be a non-empty string")
    regex, include = GitIgnoreBasicPattern.pattern_to_regex(glob.strip())
    if regex is None or not include:
        raise ValueError(f"invalid parser glob {glob!r}: comments and negations are not allowed")
    if regex.endswith(_DIR_OR_END):
        regex = regex.removesuffix(_DIR_OR_END) + "$"
    return re.compile(regex, re.IGNORECASE)
