"""The search contract: one request every surface builds and one function that checks it.

The Python API, the CLI, MCP and REST each used to spell out their own copy of the
parameters, caps and checks, and they drifted (a ``where`` on a field no note has was
an error over MCP and an empty list on the CLI). Now each surface only maps its own
spelling onto ``SearchRequest``; ``validate`` judges it once, so a mistake reads the
same everywhere, and the MCP input schema, the OpenAPI body and the docs' parameter
table are generated from the fields below.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, get_args

from vaultsearch.errors import QueryError
from vaultsearch.models import SourceKind

Mode = Literal["hybrid", "keyword", "semantic"]
MODES: tuple[str, ...] = get_args(Mode)
KINDS: tuple[str, ...] = get_args(SourceKind)
MAX_TOP_K = 100
"""One cap on every surface: past 100 notes a list is read by nobody, and an agent pays
for every hit in its context."""
Scalar = str | int | float | bool


def _m(help: str, cli: str, **limits: Any) -> dict[str, Any]:
    """What the surfaces publish about a field: help text, CLI flag, bounds."""
    return {"help": help, "cli": cli, **limits}


@dataclass(frozen=True)
class SearchRequest:
    """Everything a search can be asked, with the defaults every surface shares."""

    query: str = field(
        default="",
        metadata=_m('Words or a question; operators: "phrase", -word, tag:x, path:"a b".',
                    "QUERY", min_length=1),
    )  # fmt: skip
    top_k: int = field(default=10, metadata=_m("Notes to return.", "--top-k", ge=1, le=MAX_TOP_K))
    mode: Mode = field(
        default="hybrid", metadata=_m("hybrid, keyword (exact words) or semantic.", "--mode")
    )
    tags: list[str] | str | None = field(
        default=None, metadata=_m("Notes with all these tags.", "--tag")
    )
    folders: list[str] | str | None = field(
        default=None,
        metadata=_m("Any of: a folder name, /from/root, or a glob (**/hooks/**).", "--folder"),
    )
    after: str | None = field(
        default=None, metadata=_m("Dated on or after, YYYY-MM-DD.", "--after")
    )
    before: str | None = field(default=None, metadata=_m("Dated before, YYYY-MM-DD.", "--before"))
    where: dict[str, Scalar | list[Scalar]] | None = field(
        default=None, metadata=_m("Frontmatter field: value or [values].", "--where")
    )
    min_score: float | None = field(
        default=None, metadata=_m("Drop hits whose fused score is below.", "--min-score")
    )
    min_similarity: float | None = field(
        default=None,
        metadata=_m(
            "Drop hits below this confidence (0-1, any mode).",
            "--min-similarity",
            ge=0.0,
            le=1.0,
        ),
    )
    sources: list[str] | None = field(
        default=None, metadata=_m("Source names; 'vault' for the notes.", "--source")
    )
    kinds: list[SourceKind] | None = field(default=None, metadata=_m("File kinds.", "--kind"))
    path_prefix: list[str] | None = field(
        default=None, metadata=_m("Paths starting so.", "--path-prefix")
    )
    files: list[str] | None = field(default=None, metadata=_m("Exact paths.", "--file"))
    chunks: int = field(default=1, metadata=_m("Passages per note.", "--chunks", ge=1, le=5))
    snippet_chars: int = field(
        default=300, metadata=_m("Snippet length; 0 for none.", "--snippet-chars", ge=0, le=2000)
    )
    full_text: bool = field(
        default=False, metadata=_m("Whole passages, not snippets.", "--full-text")
    )
    explain: bool = field(default=False, metadata=_m("Add score parts.", "--explain"))

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], what: str = "search") -> SearchRequest:
        """From JSON-like arguments; an unknown name is refused naming the closest one."""
        names = [f.name for f in fields(cls)]
        args: dict[str, Any] = {}
        for key, value in data.items():
            if key not in names:
                close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise QueryError(
                    f"{what} has no field {key!r}{hint}; it takes: {', '.join(names)}.",
                    fix="see 'Search parameters on every surface' in docs/Search.md",
                )
            args[key] = value
        return cls(**args)


def _default(f: Any) -> Any:
    return f.default_factory() if callable(f.default_factory) else f.default


def parameters() -> list[tuple[str, Any, dict[str, Any]]]:
    """(name, default, metadata) of every search parameter, in the order surfaces list them."""
    return [(f.name, _default(f), dict(f.metadata)) for f in fields(SearchRequest)]


def _strings(value: Any, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]  # one tag or folder where a list is taken: what agents often send
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise QueryError(f"'{name}' takes a list of strings.")
    return tuple(v.strip() for v in value if v.strip())


def _number(value: Any, name: str, low: float | None, high: float | None, whole: bool) -> None:
    kind = int if whole else int | float
    ok = isinstance(value, kind) and not isinstance(value, bool)
    ok = ok and (low is None or value >= low) and (high is None or value <= high)
    if ok and not whole:
        ok = value == value and abs(value) != float("inf")  # not NaN, not infinite
    if not ok:
        what = "an integer" if whole else "a number"
        span = f" from {low:g} to {high:g}" if low is not None and high is not None else ""
        raise QueryError(f"'{name}' must be {what}{span}, got {value!r}.")


def check_shape(r: SearchRequest) -> SearchRequest:
    """The request on its own: types, ranges and the closed lists (mode, kinds). Lists
    given as one string become one-item lists."""
    if not isinstance(r.query, str):
        raise QueryError("'query' must be a string.")
    if r.mode not in MODES:
        raise QueryError(f"'mode' must be one of {', '.join(MODES)}, got {r.mode!r}.")
    for f in fields(r):
        meta = f.metadata
        if "ge" in meta:
            whole = isinstance(_default(f), int) and not isinstance(_default(f), bool)
            value = getattr(r, f.name)
            if value is not None:
                _number(value, f.name, meta["ge"], meta.get("le"), whole)
    if r.min_score is not None:
        _number(r.min_score, "min_score", None, None, whole=False)
    for name in ("full_text", "explain"):
        if not isinstance(getattr(r, name), bool):
            raise QueryError(f"'{name}' must be true or false.")
    if r.where is not None and not isinstance(r.where, Mapping):
        raise QueryError("'where' takes a mapping of frontmatter field to value or list.")
    lists = {n: _strings(getattr(r, n), n) for n in
             ("tags", "folders", "sources", "kinds", "path_prefix", "files")}  # fmt: skip
    bad = sorted(set(lists["kinds"]) - set(KINDS))
    if bad:
        raise QueryError(f"Unknown kind {', '.join(bad)}; kinds are: {', '.join(KINDS)}.")
    return replace(r, **{n: list(v) or None for n, v in lists.items()})  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class VaultTerms:
    """What the index holds that a filter can name: the tags, folders and frontmatter
    fields of its notes (sources are checked against the configuration by ``Scope``)."""

    tags: frozenset[str]
    paths: tuple[str, ...]
    fields: frozenset[str]

    @classmethod
    def of(cls, notes: Iterable[Any]) -> VaultTerms:
        tags: set[str] = set()
        paths, keys = [], set()
        for n in notes:
            tags.update(t.lower() for t in n.tags)
            paths.append(n.path)
            keys.update(n.frontmatter)
        return cls(frozenset(tags), tuple(paths), frozenset(keys))


def _unknown(what: str, wanted: list[str], names: Iterable[str], fix: str) -> QueryError:
    """``No note has the tag 'x' (did you mean 'y'?); tags in this vault: ...``: the
    same sentence for every filter and on every surface."""
    known = sorted(set(names))
    close = [
        c for w in wanted for c in difflib.get_close_matches(w.strip("/*"), known, n=1, cutoff=0.7)
    ]
    hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
    listed = ", ".join(known[:40]) + (", ..." if len(known) > 40 else "") or "none"
    plural = "fields" if what.endswith("field(s)") else f"{what}s"
    return QueryError(
        f"No indexed file has the {what} {', '.join(_short(w) for w in wanted)}{hint}; "
        f"{plural.removeprefix('frontmatter ')} in this vault: {listed}.",
        fix=fix,
    )


def _short(value: str, limit: int = 60) -> str:
    """A value echoed in an error, cut so a pasted page cannot flood the answer."""
    return repr(value if len(value) <= limit else value[:limit] + "…")


def check_terms(r: SearchRequest, terms: VaultTerms) -> None:
    """Filters naming what no indexed file has: said, not answered with an empty list
    that looks like "nothing relevant"."""
    from vaultsearch.search.filters import folder_matches, tag_matches

    missing = sorted(set(r.where or {}) - terms.fields)
    if missing:
        fix = "drop the where filter or name one of these fields"
        raise _unknown("frontmatter field(s)", missing, terms.fields, fix)
    tags = [t for t in (r.tags or []) if not tag_matches(t, terms.tags)]
    if tags:
        raise _unknown(
            "tag", tags, terms.tags, "see the tags: 'vaultsearch tags' or the list_tags tool"
        )
    folders = [f for f in (r.folders or []) if not any(folder_matches(f, p) for p in terms.paths)]
    if folders:
        dirs = {p.rsplit("/", 1)[0] for p in terms.paths if "/" in p}
        dirs |= {d.rsplit("/", 1)[-1] for d in dirs}  # a name anywhere is a folder form too
        raise _unknown(
            "folder", folders, dirs, "see the folders: 'vaultsearch folders' or the folders tool"
        )


def validate(r: SearchRequest, terms: VaultTerms | None) -> SearchRequest:
    """The one check every surface's request goes through (``terms`` None: no index yet,
    nothing to compare filters with). Unknown sources and kinds are refused by
    ``search.filters.Scope`` on the same path."""
    r = check_shape(r)
    if terms is not None:
        check_terms(r, terms)
    return r
