"""Which parser names exist, which globs route files to them by default, and what makes a
glob valid: settings, so they sit below ``config`` (which checks a ``[parsers]`` table)
and below ``parsers`` (which turns the names into parsers)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from pathspec.patterns.gitignore.basic import GitIgnoreBasicPattern

CODE_EXTENSIONS = ("py", "js", "mjs", "cjs", "jsx", "ts", "tsx", "go", "rs", "java")
"""Read by syntax tree (``code``)."""
PLAIN_CODE_EXTENSIONS = (
    "c", "h", "cc", "cpp", "hpp", "cs", "rb", "php", "swift", "kt", "scala", "sh", "lua",
)  # fmt: skip
"""Read by blank lines and indentation (``code-plain``): no grammar is shipped for them."""

PARSER_NAMES = ("markdown", "text", "code", "code-plain", "pdf")

DEFAULT_PARSER_MAP: dict[str, str] = {
    "**/*.md": "markdown",
    "**/*.markdown": "markdown",
    "**/*.txt": "text",
    **{f"**/*.{ext}": "code" for ext in CODE_EXTENSIONS},
    **{f"**/*.{ext}": "code-plain" for ext in PLAIN_CODE_EXTENSIONS},
    "**/*.pdf": "pdf",
}

_DIR_OR_END = "(?:/|$)"


def compile_glob(glob: str) -> re.Pattern[str]:
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


def compile_parser_map(mapping: Mapping[str, str]) -> list[tuple[re.Pattern[str], str]]:
    """The ordered (glob, parser name) rules; a ``ValueError`` names the first bad entry."""
    rules = []
    for glob, name in mapping.items():
        if name not in PARSER_NAMES:
            allowed = ", ".join(sorted(PARSER_NAMES))
            raise ValueError(f"unknown parser {name!r} for {glob!r}; allowed: {allowed}")
        rules.append((compile_glob(glob), name))
    return rules
