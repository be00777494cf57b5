"""The browsing commands: ``get``, ``related``, ``list``, ``tags``, ``links``, ``outline``
and ``folders``.

Each prints the same ``Answer`` the MCP tool of that name gives an agent: its text, or
with ``--json`` its data, so a script and an agent see one implementation.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from vaultsearch.errors import VaultsearchError

if TYPE_CHECKING:
    from vaultsearch.app.answer import Answer
    from vaultsearch.app.browse import Browser

Common = Callable[..., None]


def _browser(args: argparse.Namespace) -> Browser:
    from vaultsearch.app.browse import Browser
    from vaultsearch.cli.main import _open

    return Browser(_open(args))


def _show(args: argparse.Namespace, a: Answer) -> None:
    from vaultsearch.cli.main import _print_json

    if args.json:
        _print_json(a.data)
    else:
        print(a.text)


def positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return n


def cmd_get(args: argparse.Namespace) -> int:
    from vaultsearch.app.browse import MAX_CHARS
    from vaultsearch.app.navigate import get_places, multi_get

    if args.store_uri:
        from vaultsearch.cli.milvus import get_from_store

        return get_from_store(args)
    if args.chunk or args.page:
        _show(
            args, get_places(_browser(args), args.chunk or [], args.spec, args.page, args.context)
        )
        return 0
    if not args.spec:
        raise VaultsearchError("Name what to read: PATH[:LINE[:COUNT]], or --chunk ID.")
    a = multi_get(_browser(args), args.spec, args.max_chars or MAX_CHARS, args.context)
    failed = [x["error"] for x in a.data["items"] if "error" in x]
    if failed and len(args.spec) == 1:
        raise VaultsearchError(failed[0])
    _show(args, a)
    return 1 if failed else 0


def cmd_related(args: argparse.Namespace) -> int:
    from vaultsearch.app.listing import related

    _show(args, related(_browser(args), args.path, args.depth, args.limit))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from vaultsearch.app.listing import list_notes

    b = _browser(args)
    _show(args, list_notes(b, args.folder, args.tag, args.sort, args.limit, args.cursor))
    return 0


def cmd_tags(args: argparse.Namespace) -> int:
    from vaultsearch.app.listing import list_tags

    _show(args, list_tags(_browser(args), args.prefix, args.limit))
    return 0


def cmd_links(args: argparse.Namespace) -> int:
    from vaultsearch.app.navigate import links

    _show(args, links(_browser(args), args.kind, args.path, args.to, args.limit))
    return 0


def cmd_outline(args: argparse.Namespace) -> int:
    from vaultsearch.app.navigate import outline

    _show(args, outline(_browser(args), args.path))
    return 0


def cmd_folders(args: argparse.Namespace) -> int:
    from vaultsearch.app.navigate import folders

    _show(args, folders(_browser(args), args.under, args.limit))
    return 0


def add_browse_commands(sub: Any, common: Common) -> None:
    """Register the commands on the ``vaultsearch`` subparsers."""
    from vaultsearch.app.linkmap import LINK_QUERIES

    def parser(name: str, help: str, handler: Callable[[argparse.Namespace], int]) -> Any:
        p = sub.add_parser(name, help=help)
        p.set_defaults(handler=handler)
        return p

    def finish(p: Any, limit: int | None = None) -> None:
        if limit is not None:
            p.add_argument("--limit", type=positive, default=limit, help=f"(default: {limit})")
        p.add_argument("--vault", default=".", help="the vault folder (default: .)")
        common(p, vault_positional=False)
        p.add_argument("--json", action="store_true", help="machine-readable output")

    p = parser("get", "print any indexed file or its lines: note, code, PDF page, chunk", cmd_get)
    p.add_argument("spec", nargs="*", help="PATH[:LINE[:COUNT]], as search prints paths")
    p.add_argument(
        "--chunk", type=int, action="append", metavar="ID", help="a hit's chunk_id (repeatable)"
    )
    p.add_argument("--page", type=positive, help="a PDF's page, for each PATH")
    p.add_argument("--context", type=int, default=0, help="extra lines around each range")
    p.add_argument("--max-chars", type=positive, help="text cap over all specs (default: 20000)")
    from vaultsearch.cli.milvus import store_args

    store_args(p)
    finish(p)

    p = parser("related", "a note's links, nearby notes and similar notes", cmd_related)
    p.add_argument("path", help="the note")
    p.add_argument("--depth", type=int, choices=[1, 2, 3], default=1, help="link hops")
    finish(p, 10)

    p = parser("list", "list notes by folder or tag, by path or date", cmd_list)
    p.add_argument("--folder", help="name, /from/root or glob")
    p.add_argument("--tag", help="only notes with this tag")
    p.add_argument("--sort", choices=["path", "date"], default="path", help="date: newest first")
    p.add_argument("--cursor", help="next page: the cursor the last page printed")
    finish(p, 50)

    p = parser("tags", "tags with note counts, most used first", cmd_tags)
    p.add_argument("--prefix", help="only this tag and tags below it")
    finish(p, 200)

    p = parser("links", "backlinks, outlinks, broken links, orphans, hubs, link paths", cmd_links)
    p.add_argument("kind", choices=LINK_QUERIES, help="what to list")
    p.add_argument("path", nargs="?", help="the note (backlinks, outlinks, path; broken)")
    p.add_argument("--to", help="kind path: the note to reach")
    finish(p, 50)

    p = parser("outline", "a note's headings with the lines of each section", cmd_outline)
    p.add_argument("path", help="the note")
    finish(p)

    p = parser("folders", "folders with their note counts", cmd_folders)
    p.add_argument("under", nargs="?", help="only this folder and below")
    finish(p, 200)
