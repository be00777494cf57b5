"""``vaultsearch sources add|list|remove``: named folders and git repositories.

Kept out of cli.py so that the command's parser and output live in one place; it
imports nothing heavy, because building the parser happens on every CLI start.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vaultsearch.app.vault import Vault

_GIT_LIKE = re.compile(r"^(?:[a-z][a-z0-9+.-]*(?:://|::)|[\w.-]+@[\w.-]+:)|\.git/?$", re.IGNORECASE)


def looks_like_git(location: str) -> bool:
    """A URL, an scp-style ``user@host:path``, a path ending in ``.git``, or git's
    ``transport::address`` (so that it is refused as a git url, not looked for as a
    folder)."""
    return bool(_GIT_LIKE.search(location.strip()))


def add_sources_parser(
    sub: Any,
    common: Callable[..., None],
    handler: Callable[[argparse.Namespace], int],
) -> None:
    p = sub.add_parser("sources", help="add, list or remove named folders and git repositories")
    p.add_argument("--vault", default=".", help="the vault folder (default: .)")
    common(p, vault_positional=False)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=handler)
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")

    a = actions.add_parser("add", help="add a source (indexed by the next 'vaultsearch index')")
    a.add_argument("name", help="letters, digits, '_', '-', '.'; note ids become NAME:path")
    a.add_argument("location", help="a folder, or a git URL / path (anything git clone takes)")
    a.add_argument("--type", choices=["folder", "git"], help="default: git for URLs and *.git")
    a.add_argument("--branch", default="", help="git: the branch (default: the remote's HEAD)")
    a.add_argument("--include", action="append", default=[], help="only files matching (glob)")
    a.add_argument("--exclude", action="append", default=[], help="skip files matching (glob)")
    a.add_argument(
        "--parser", action="append", default=[], metavar="GLOB=NAME", help="parser override"
    )
    a.add_argument("--max-file-size", type=int, default=0, help="bytes; 0: vault.max_file_size")
    a.add_argument("--index", action="store_true", help="index the new source right away")

    actions.add_parser("list", help="every source with its files, chunks and last index run")

    r = actions.add_parser("remove", help="forget a source and remove it from the index")
    r.add_argument("name", help="the source's name")


def run_sources(args: argparse.Namespace, vault: Vault) -> int:
    if args.action == "add":
        return _add(args, vault)
    if args.action == "remove":
        summary = vault.remove_source(args.name)
        if args.json:
            print(json.dumps(summary.to_dict(), indent=2))
        else:
            print(
                f"removed source {args.name}: {summary.removed} files, "
                f"{summary.chunks_written} chunks written"
            )
        return 0
    rows = vault.sources()
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        print_sources(rows)
    return 0


def _add(args: argparse.Namespace, vault: Vault) -> int:
    from vaultsearch.errors import VaultsearchError
    from vaultsearch.sourceconfig import source_from_table

    kind = args.type or ("git" if looks_like_git(args.location) else "folder")
    parsers = {}
    for item in args.parser:
        glob, sep, name = item.partition("=")
        if not sep or not glob.strip() or not name.strip():
            raise VaultsearchError(
                f"--parser {item!r} is not GLOB=NAME.", fix="e.g. '**/*.py=text'"
            )
        parsers[glob.strip()] = name.strip()
    table: dict[str, Any] = {"name": args.name, "type": kind}
    location = args.location
    if kind == "folder" or (not looks_like_git(location) and Path(location).exists()):
        location = str(Path(location).expanduser().resolve())  # as typed: from the cwd
    table["url" if kind == "git" else "path"] = location
    for key in ("branch", "include", "exclude", "max_file_size"):
        if getattr(args, key):
            table[key] = getattr(args, key)
    if parsers:
        table["parsers"] = parsers
    source = source_from_table(table, "the command line", 0)
    if source.type == "git":
        from vaultsearch.indexing.gitsource import check_values

        check_values(source.url, source.branch)
    path = vault.add_source(source)
    print(f"added source {source.name} ({kind} {source.location}) to {path}")
    if args.index:
        summary = vault.index(source=source.name)
        print(f"indexed {summary.added} files, {summary.chunks_embedded} chunks embedded")
        for line in summary.source_lines():
            print(f"  {line}")
    else:
        print(f"next: vaultsearch index --source {source.name}")
    return 0


def print_sources(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("source", "type", "path or url", "files", "chunks", "failed", "last indexed"):
        table.add_column(column)
    for r in rows:
        where = r.get("url") or r.get("path", "")
        if r.get("branch"):
            where += f" ({r['branch']})"
        last = r.get("last_indexed", "never")
        if r.get("commit"):
            last += f" @ {r['commit'][:10]}"
        table.add_row(
            r["name"], r["type"], where, str(r["files"]), str(r["chunks"]), str(r["failed"]), last
        )
    console = Console()
    console.print(table)
    for r in rows:
        if r.get("error"):
            console.print(f"  {r['name']}: {r['error']}", markup=False, highlight=False)
