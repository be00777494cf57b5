"""The command line of a Milvus store: ``push``, and ``--store-uri`` for ``search``,
``get`` and ``status``, which then need no vault and no local index."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vaultsearch.search.milvus_reader import MilvusReader


def store_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store-uri",
        metavar="URI",
        help="read a Milvus store instead of a local index (a .db file or http://host:19530)",
    )
    p.add_argument("--collection", help="the store's collection prefix (default: store.collection)")


def add_milvus_commands(
    sub: Any, common: Callable[..., None], push: Callable[..., int], pull: Callable[..., int]
) -> None:
    p = sub.add_parser("push", help="copy the vault's index into a Milvus store, embedding nothing")
    common(p)
    p.add_argument("--to", metavar="URI", help="the Milvus store (default: store.uri)")
    p.add_argument("--collection", help="the collection prefix (default: store.collection)")
    p.add_argument("--full", action="store_true", help="build a new generation, then switch to it")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=push)
    p = sub.add_parser(
        "pull", help="index the vault locally with the vectors of a Milvus store (no model call)"
    )
    common(p)
    p.add_argument(
        "--from", dest="from_uri", metavar="URI", help="the Milvus store (default: store.uri)"
    )
    p.add_argument("--collection", help="the collection prefix (default: store.collection)")
    p.add_argument("--full", action="store_true", help="rebuild the local index from every file")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=pull)


def reader_of(args: argparse.Namespace) -> MilvusReader:
    from vaultsearch.config import load_config
    from vaultsearch.embedding import Embedder
    from vaultsearch.search.milvus_reader import MilvusReader
    from vaultsearch.store.milvus.target import MilvusTarget

    config = load_config(args.config, None, tuple(getattr(args, "set", None) or ()))
    target = MilvusTarget.from_config(config, args.store_uri, args.collection)
    return MilvusReader(target, config, Embedder.shared(config.embedding))


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def get_from_store(args: argparse.Namespace) -> int:
    if not args.spec:
        from vaultsearch.errors import QueryError

        raise QueryError("Name the note to read from the Milvus store: its PATH.")
    reader = reader_of(args)
    print_json([reader.get(spec) for spec in args.spec])
    return 0


def serve_store(args: argparse.Namespace) -> int:
    """``mcp --store-uri``: the read tools over the store, over stdio (or streamable
    HTTP with ``--http``). The target is checked before stdio is claimed, so a bad URI
    or prefix is an error, not a server."""
    from vaultsearch.config import load_config
    from vaultsearch.errors import VaultsearchError
    from vaultsearch.server.mcp.handshake import STORE_INSTRUCTIONS
    from vaultsearch.server.mcp.pipe import StdioPipe
    from vaultsearch.store.milvus.target import MilvusTarget

    if args.allow_writes:
        raise VaultsearchError(
            "--allow-writes does not apply to a server over a Milvus store, which only reads it.",
            fix="drop --allow-writes, or serve the vault itself (vaultsearch mcp VAULT "
            "--allow-writes)",
        )
    config = load_config(args.config, None, tuple(getattr(args, "set", None) or ()))
    target = MilvusTarget.from_config(config, args.store_uri, args.collection)
    if args.http:
        from vaultsearch.server.mcp.storehttp import run_store_http

        hosts = tuple(args.allow_host or ())
        return run_store_http(target, config, args.host, args.port, hosts)
    pipe = StdioPipe.claim(STORE_INSTRUCTIONS)
    from vaultsearch.server.mcp.storeserver import run_store_server

    return run_store_server(target, config, pipe)
