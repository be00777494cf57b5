"""The ``vaultsearch`` command.

Each subcommand is a thin layer over ``Vault``; errors become one sentence and the
command that fixes it, with a traceback only under ``--debug``.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from vaultsearch import __version__
from vaultsearch.errors import VaultsearchError, environment_error_sentence

if TYPE_CHECKING:
    from vaultsearch.app.vault import Vault

Handler = Callable[[argparse.Namespace], int]


def _open(args: argparse.Namespace, vault: str | None = None) -> Vault:
    """The command's vault, closed when ``main`` returns: a process exits anyway, but
    code that calls ``main`` again and again in one process must not gather the
    catalog connections, index files and reader locks of every call."""
    from vaultsearch.app.vault import Vault

    opened = Vault.open(
        vault or args.vault or ".",
        index_dir=args.index_dir,
        config=args.config,
        flags=tuple(getattr(args, "set", None) or ()),
    )
    closing: contextlib.ExitStack | None = getattr(args, "closing", None)
    if closing is not None:
        closing.callback(opened.close)
    return opened


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _human_size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


# --- index ----------------------------------------------------------------------
def cmd_index(args: argparse.Namespace) -> int:
    from vaultsearch.fault import retry_note
    from vaultsearch.indexing.progress import default_progress

    vault = _open(args)
    if args.check:
        check = vault.check()
        if args.json:
            _print_json(check.to_dict())
        else:
            label = {"current": "index is current", "update": "update needed"}.get(
                check.status, "rebuild needed"
            )
            print(label)
            for reason in check.reasons:
                print(f"  - {reason}")
        return check.exit_code
    if args.source and args.all:
        raise VaultsearchError(
            "--source and --all contradict each other.", fix="pass one of them, not both"
        )
    summary = vault.index(
        full=args.full,
        progress=default_progress(quiet=args.quiet or args.json),
        source=args.source,
        reason="asked on the command line",
    )
    if args.json:
        _print_json(summary.to_dict())
        return 0
    d = summary.to_dict()
    print(
        f"indexed {vault.root} -> {vault.index_dir}\n"
        f"  added {d['added']}, updated {d['updated']}, moved {d['moved']}, "
        f"removed {d['removed']}, unchanged {d['unchanged']}, failed {len(d['failed'])}\n"
        f"  chunks written {d['chunks_written']}, embedded {d['chunks_embedded']} "
        f"(and {d['sentences_embedded']} sentences), "
        f"{d['seconds']:.2f} s ({d['chunks_per_second']} chunks/s)"
    )
    if summary.counts is not None:
        print(f"  index: {summary.counts.line()}")
    for reason in d["rebuild_reasons"]:
        print(f"  rebuild: {reason}")
    for line in d["repaired"]:
        print(f"  repaired {line}")
    for path, reason in d["failed"].items():
        print(f"  failed {path}: {reason}{retry_note(summary.to_retry.get(path))}")
    for line in summary.source_lines():
        print(f"  {line}")
    return 0


# --- Milvus store ---------------------------------------------------------------
def cmd_push(args: argparse.Namespace) -> int:
    from vaultsearch.app.milvus_push import push
    from vaultsearch.store.milvus.target import MilvusTarget

    vault = _open(args)
    summary = push(
        vault, MilvusTarget.from_config(vault.config, args.to, args.collection), args.full
    )
    d = summary.to_dict()
    if args.json:
        _print_json(d)
        return 0
    print(
        f"pushed {vault.index_dir} -> {d['uri']} ({d['generation']}"
        f"{', new generation' if d['rebuilt'] else ''})\n"
        f"  {d['notes']} notes, {d['chunks']} chunks, {d['sentences']} sentences; upserted "
        f"{d['upserted_chunks']} chunks, deleted {d['deleted_chunks']}; embedded "
        f"{d['embedded']}; {d['seconds']:.2f} s"
    )
    return 0


def cmd_pull(args: argparse.Namespace) -> int:
    from vaultsearch.app.milvus_pull import pull
    from vaultsearch.store.milvus.target import MilvusTarget

    vault = _open(args)
    target = MilvusTarget.from_config(vault.config, args.from_uri, args.collection)
    summary = pull(vault, target, args.full)
    d = summary.to_dict()
    if args.json:
        _print_json(d)
        return 0
    i = d["index"]
    print(
        f"pulled {d['uri']} ({d['generation']}) -> {vault.index_dir}\n"
        f"  {d['vectors']} vectors read, {d['cached']} new to the embedding cache\n"
        f"  indexed {i['added'] + i['updated']} notes, chunks written {i['chunks_written']}, "
        f"embedded {i['chunks_embedded']} (and {i['sentences_embedded']} sentences)"
    )
    return 0


# --- status ---------------------------------------------------------------------
def cmd_status(args: argparse.Namespace) -> int:
    if args.store_uri:
        from vaultsearch.cli.milvus import reader_of

        _print_json(reader_of(args).status())
        return 0
    status = _open(args).status()
    if args.json:
        _print_json(status)
        return 0
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from vaultsearch.fault import retry_count_note, retry_note

    table = Table(show_header=False, box=None, pad_edge=False)
    for key in (
        "vault", "index_dir", "notes", "chunks", "vectors", "sentences",
        "notes_awaiting_sentences", "keyword_docs", "links", "resolved_links", "broken_links",
        "model", "dimension", "spec_version", "last_indexed", "config",
    ):  # fmt: skip
        table.add_row(key.replace("_", " "), str(status[key]))
    table.add_row("size on disk", _human_size(status["size_on_disk"]))
    to_retry = status["to_retry"]
    table.add_row("failed", f"{len(status['failed'])}{retry_count_note(len(to_retry))}")
    console = Console()
    console.print(f"index: {status['counts_line']}", highlight=False)
    console.print(table)
    for path, reason in status["failed"].items():
        why = escape(f"{path}: {reason}{retry_note(to_retry.get(path))}")
        console.print(f"  [red]failed[/red] {why}", markup=True, highlight=False)
    if len(status["sources"]) > 1:
        _print_sources(status["sources"])
    return 0


# --- sources --------------------------------------------------------------------
def cmd_sources(args: argparse.Namespace) -> int:
    from vaultsearch.cli.sources import run_sources

    return run_sources(args, _open(args))


def _print_sources(rows: list[dict[str, Any]]) -> None:
    from vaultsearch.cli.sources import print_sources

    print_sources(rows)


# --- search ---------------------------------------------------------------------
def cmd_search(args: argparse.Namespace) -> int:
    from vaultsearch.app.searchanswer import SearchAnswer, lines_reader
    from vaultsearch.search.request import SearchRequest, parameters

    values = {name: getattr(args, name) for name, _, _ in parameters()}
    values["where"] = dict(_parse_where(w) for w in args.where or []) or None
    request = SearchRequest(**values)
    if args.store_uri:  # a Milvus store: no vault, so passages are the stored chunks
        vault = None
        answer = SearchAnswer(request, _search_store(args, request))
    else:
        vault = _open(args)
        answer = vault.search_answer(request)
    hits = answer.hits
    if hits.degraded:
        print(f"warning: {hits.degraded}", file=sys.stderr)
    shaped = answer.to_dict(lines_reader(vault) if vault is not None else None)["hits"]
    if args.json or not sys.stdout.isatty():
        extra = {"degraded": hits.degraded} if hits.degraded else {}
        _print_json([{**h, **extra} for h in shaped])
        return 0
    _print_hits(hits, args.explain, shaped)
    return 0


def add_search_flags(p: argparse.ArgumentParser) -> None:
    """One flag per ``SearchRequest`` field, named and explained as the field says."""
    from typing import get_args, get_type_hints

    from vaultsearch.search.request import SearchRequest, parameters

    hints = get_type_hints(SearchRequest)
    for name, default, meta in parameters():
        flag, help = meta["cli"], meta["help"].rstrip(".")
        if name == "query":
            p.add_argument("query", help=help)
        elif name == "where":
            p.add_argument(
                flag, action="append", help=f"{help} as FIELD=VALUE[,VALUE] (repeatable)"
            )
        elif name == "mode":
            p.add_argument(flag, choices=get_args(hints[name]), default=default, help=help)
        elif name == "kinds":
            kinds = get_args(get_args(get_args(hints[name])[0])[0])
            p.add_argument(
                flag, dest=name, action="append", choices=kinds, help=f"{help} (repeatable)"
            )
        elif isinstance(default, bool):
            p.add_argument(flag, action="store_true", help=help)
        elif isinstance(default, int):
            p.add_argument(flag, type=int, default=default, help=f"{help} (default: {default})")
        elif "float" in str(hints[name]):
            p.add_argument(flag, type=float, help=help)
        elif "list" in str(hints[name]):
            p.add_argument(flag, dest=name, action="append", help=f"{help} (repeatable)")
        else:
            p.add_argument(flag, help=help)


def _search_store(args: argparse.Namespace, request: Any) -> Any:
    """The request against a Milvus store: its filters, as the local search takes them."""
    from vaultsearch.cli.milvus import reader_of

    return reader_of(args).answer(request)


def _parse_where(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise VaultsearchError(
            f"--where {text!r} is not FIELD=VALUE.", fix="e.g. --where status=draft"
        )
    key, value = text.split("=", 1)
    return key.strip(), value.split(",") if "," in value else value


def _print_hits(hits: Sequence[Any], explain: bool, shaped: Sequence[dict[str, Any]]) -> None:
    """``shaped`` (the JSON form of the same hits) says what ``--snippet-chars``,
    ``--full-text`` and ``--chunks`` asked to show of each."""
    from rich.console import Console
    from rich.markup import escape

    from vaultsearch.search.confidence import weak_answer

    console = Console()
    for i, h in enumerate(hits, 1):
        where = f"{h.path}:{h.start_line}-{h.end_line}"
        heading = f"  [dim]{escape(h.heading_path)}[/dim]" if h.heading_path else ""
        console.print(
            f"[bold]{i:>2}. {escape(where)}[/bold]  {h.score:.4f} "
            f"[dim](confidence {h.confidence:.2f})[/dim]{heading}"
        )
        wire = shaped[i - 1]
        if "text" in wire:
            console.print(escape(_indent(wire["text"])), highlight=False)
        elif "snippet" in wire:
            marks = [tuple(r) for r in wire.get("highlights", [])]
            console.print(f"    {_bold_ranges(wire['snippet'], marks)}", highlight=False)
        for p in wire.get("passages", []):
            place = f"{p['start_line']}-{p['end_line']}  {p.get('heading_path', '')}".rstrip()
            console.print(f"    [dim]also {escape(place)}[/dim]", highlight=False)
            body = p.get("text") or p.get("snippet")
            if body:
                console.print(escape(_indent(body, "      ")), highlight=False)
        if explain and h.explain:
            console.print(escape(explain_table(h.explain)), highlight=False)
    weak = weak_answer([h.confidence for h in hits])
    if weak:
        console.print(f"[yellow]{escape(weak)}[/yellow]", highlight=False)


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.split("\n"))


def explain_table(e: Any) -> str:
    """The explain trace as a terminal reads it: one row a branch, then each boost,
    adding up to the score (``--json`` keeps every field)."""
    rows = [("branch", "rank", "raw", "normalised", "weight", "adds")]
    for p in e.branches:
        rows.append(
            (p.branch, str(p.rank), f"{p.raw:.4f}", f"{p.normalised:.4f}",
             f"{p.weight:.2f}", f"{p.contribution:+.4f}")
        )  # fmt: skip
    boosts = [
        ("title or alias", e.name_added, ""),
        ("graph", e.graph_added, f"from {e.graph_from}" if e.graph_from else ""),
        ("recency", e.recency_added, f"x{e.recency_multiplier:.2f}"),
        ("rerank", e.rerank_added, ""),
    ]
    for name, added, note in boosts:
        if added:
            rows.append((name, "", "", note, "", f"{added:+.4f}"))
    rows.append((f"= {e.method}", "", "", "", "", f"{e.total:.4f}"))
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    lines = ["    " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    if e.expansions:
        lines.append(f"    widened: {', '.join(e.expansions)}")
    return "\n".join(line.rstrip() for line in lines)


def _bold_ranges(text: str, ranges: Sequence[tuple[int, int]]) -> str:
    """Rich markup: matches in bold (ANSI on a terminal), everything else escaped."""
    from rich.markup import escape

    parts, pos = [], 0
    for s, e in ranges:
        parts += [escape(text[pos:s]), "[bold]", escape(text[s:e]), "[/bold]"]
        pos = e
    parts.append(escape(text[pos:]))
    return "".join(parts)


# --- eval -----------------------------------------------------------------------
def cmd_eval(args: argparse.Namespace) -> int:
    from vaultsearch.app.beir import run_eval

    results = run_eval(
        Path(args.corpus),
        Path(args.queries),
        Path(args.qrels),
        modes=args.mode or ["hybrid"],
        work_dir=Path(args.work_dir) if args.work_dir else None,
        config=args.config,
        limit=args.limit,
    )
    if args.json:
        _print_json(results if len(results) > 1 else next(iter(results.values())))
        return 0
    for mode, r in results.items():
        print(
            f"{mode:>8}: nDCG@10 {r['ndcg@10']:.4f}  Recall@100 {r['recall@100']:.4f}  "
            f"({r['queries']} queries, {r['ms_per_query']:.1f} ms/query)"
        )
    return 0


# --- check, init, watch, mcp ----------------------------------------------------------
def cmd_check(args: argparse.Namespace) -> int:
    vault = _open(args)
    if not vault.layout.all_generations():  # a lost CURRENT or catalog is for check to say
        vault.require_index()
    repaired: dict[str, Any] | None = None
    if args.repair:
        fixed = vault.repair()
        update = vault.index()
        repaired = {
            "derived": fixed.repaired,
            "chunks_embedded": fixed.chunks_embedded + update.chunks_embedded,
            "update": update.to_dict(),
        }
    report = vault.verify()
    if args.json:
        _print_json({**report.to_dict(), "repaired": repaired})
    else:
        counts = ", ".join(f"{k} {v}" for k, v in report.counts.items())
        print(("consistent" if report.ok else "inconsistent") + f" ({counts})")
        for problem in report.problems:
            print(f"  - {problem}")
        if repaired is not None:
            for line in repaired["derived"]:
                print(f"  repaired {line}")
        if not report.ok and not args.repair:
            print("  fix: vaultsearch check --repair")
    return 0 if report.ok else 1


def cmd_init(args: argparse.Namespace) -> int:
    from vaultsearch.config import template_text

    root = Path(args.vault).expanduser()
    if not root.is_dir():
        raise VaultsearchError(
            f"The vault folder {root} does not exist.", fix="create it, or pass an existing folder"
        )
    target = root / ".vaultsearch" / "config.toml"
    if target.exists() and not args.force:
        raise VaultsearchError(
            f"{target} already exists.", fix=f"edit it, or run 'vaultsearch init {root} --force'"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(template_text(), encoding="utf-8")
    print(f"wrote {target}")
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    from vaultsearch._memory import tune_allocator
    from vaultsearch._runtime import reserve_core_for_queries
    from vaultsearch.app.watcher import watch_forever

    tune_allocator()
    reserve_core_for_queries()
    return watch_forever(_open(args))


def cmd_mcp(args: argparse.Namespace) -> int:
    from vaultsearch._memory import tune_allocator
    from vaultsearch._runtime import reserve_core_for_queries
    from vaultsearch.server.mcp.pipe import StdioPipe

    tune_allocator()  # before the first thread
    if args.store_uri:
        from vaultsearch.cli.milvus import serve_store

        return serve_store(args)
    # From here on the opening request (`initialize` or `server/discover`) is answered
    # while the rest loads; not for a vault folder that is missing, whose error must come
    # instead of a handshake.
    early = not args.http and Path(args.vault or ".").expanduser().is_dir()
    pipe = StdioPipe.claim() if early else None
    from vaultsearch.server.mcp.run import run_server

    reserve_core_for_queries()
    return run_server(
        _open(args),
        http=args.http,
        host=args.host,
        port=args.port,
        watch=not args.no_watch,
        allow_hosts=tuple(args.allow_host or ()),
        allow_writes=args.allow_writes,
        pipe=pipe,
    )


def cmd_serve(args: argparse.Namespace) -> int:
    from vaultsearch._memory import tune_allocator
    from vaultsearch.server.http.serve import run_serve

    tune_allocator()
    return run_serve(
        _open(args),
        host=args.host,
        port=args.port,
        open_browser=not args.no_open,
        allow_hosts=tuple(args.allow_host or ()),
    )


# --- config -----------------------------------------------------------------------
def cmd_config(args: argparse.Namespace) -> int:
    from vaultsearch.app.reload import shown_config
    from vaultsearch.config import explain_config
    from vaultsearch.config_layers import env_name

    root = Path(args.vault).expanduser().resolve()
    cfg, origins = explain_config(args.config, root, tuple(args.set or ()))

    def origin(key: str) -> str:
        where = origins.get(key, "default")
        if where == "environment" or where.endswith(".env"):
            return f"{where}: {env_name(*key.split('.', 1))}"
        return where

    rows = [
        {"key": key, "value": value, "from": origin(key)}
        for key, value in shown_config(cfg).items()
    ]
    if args.json:
        _print_json(rows)
        return 0
    width = max(len(r["key"]) for r in rows)
    print("precedence: default < config file < .env < environment < --set")
    for r in rows:
        print(f"{r['key']:<{width}}  {json.dumps(r['value'], ensure_ascii=False)}  ({r['from']})")
    return 0


# --- parser -----------------------------------------------------------------------
def _common(p: argparse.ArgumentParser, vault_positional: bool = True) -> None:
    if vault_positional:
        p.add_argument("vault", nargs="?", default=None, help="the vault folder (default: .)")
        p.add_argument(
            "--vault", dest="vault_flag", metavar="VAULT", help="the vault folder, as a flag"
        )
    p.add_argument("--index-dir", help="where the index lives (default: <vault>/.vaultsearch)")
    p.add_argument(
        "--config", help="a config.toml (default: $VAULTSEARCH_CONFIG, then the vault's)"
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="a setting for this run, e.g. search.keyword_weight=0.5 (repeatable)",
    )


def _http_host(p: argparse.ArgumentParser) -> None:
    """Where an HTTP server listens and which other names clients may call it by."""
    p.add_argument("--host", default="127.0.0.1", help="HTTP host (default: 127.0.0.1)")
    p.add_argument(
        "--allow-host",
        action="append",
        metavar="NAME",
        help="another Host name HTTP clients may use, e.g. behind a proxy (repeatable)",
    )


def build_parser() -> argparse.ArgumentParser:
    from vaultsearch.cli.milvus import add_milvus_commands, store_args

    parser = _Parser(
        prog="vaultsearch", description="Local hybrid search over a folder of Markdown notes."
    )
    parser.add_argument("--version", action="version", version=f"vaultsearch {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("index", help="build or update the index of a vault")
    _common(p)
    p.add_argument(
        "--full", action="store_true", help="re-parse every note and rebuild all indexes"
    )
    p.add_argument(
        "--check", action="store_true", help="exit 0 if current, 1 if an update/rebuild is needed"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.add_argument("--source", metavar="NAME", help="only this source ('vault': the vault's notes)")
    p.add_argument("--all", action="store_true", help="the vault and every source (the default)")
    p.set_defaults(handler=cmd_index)

    p = sub.add_parser("status", help="what the index holds")
    _common(p)
    store_args(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=cmd_status)

    p = sub.add_parser("search", help="search a vault")
    p.add_argument("--vault", default=".", help="the vault folder (default: .)")
    _common(p, vault_positional=False)
    add_search_flags(p)
    p.add_argument("--json", action="store_true", help="JSON output (default when piped)")
    store_args(p)
    p.set_defaults(handler=cmd_search)
    add_milvus_commands(sub, _common, cmd_push, cmd_pull)

    from vaultsearch.cli.sources import add_sources_parser

    add_sources_parser(sub, _common, cmd_sources)

    p = sub.add_parser("eval", help="score retrieval on BEIR-format data")
    p.add_argument("--corpus", required=True, help="corpus.jsonl")
    p.add_argument("--queries", required=True, help="queries.jsonl")
    p.add_argument("--qrels", required=True, help="qrels .tsv")
    from vaultsearch.search.request import MODES

    p.add_argument("--mode", action="append", choices=MODES, help="repeatable")
    p.add_argument("--work-dir", help="where the corpus vault and its index are kept")
    p.add_argument("--config", help="a config.toml for the run")
    p.add_argument("--limit", type=int, help="only the first N judged queries")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=cmd_eval)

    p = sub.add_parser("check", help="verify the indexes against the catalog and the files")
    _common(p)
    p.add_argument("--repair", action="store_true", help="fix differences without re-embedding")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=cmd_check)

    p = sub.add_parser("config", help="every setting's effective value and where it came from")
    _common(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=cmd_config)

    p = sub.add_parser("init", help="write a commented config into VAULT/.vaultsearch/")
    p.add_argument("vault", nargs="?", default=".", help="the vault folder (default: .)")
    p.add_argument("--force", action="store_true", help="overwrite an existing config")
    p.set_defaults(handler=cmd_init)

    p = sub.add_parser("watch", help="keep the index current as files change")
    _common(p)
    p.set_defaults(handler=cmd_watch)

    p = sub.add_parser("mcp", help="serve the vault to agents over MCP (stdio by default)")
    _common(p)
    p.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    _http_host(p)
    p.add_argument("--port", type=int, default=8765, help="HTTP port (default: 8765)")
    p.add_argument("--no-watch", action="store_true", help="do not watch the vault for changes")
    p.add_argument(
        "--allow-writes",
        action="store_true",
        help="offer the tools that write notes, documents and reports (as writes.enabled)",
    )
    store_args(p)
    p.set_defaults(handler=cmd_mcp)

    from vaultsearch.cli.browse import add_browse_commands

    add_browse_commands(sub, _common)
    p = sub.add_parser("serve", help="the Index Console web page and REST API of a vault")
    _common(p)
    _http_host(p)
    p.add_argument("--port", type=int, help="HTTP port (default: the first free from 3456)")
    p.add_argument("--no-open", action="store_true", help="do not open the page in a browser")
    p.set_defaults(handler=cmd_serve)

    return parser


class _Parser(argparse.ArgumentParser):
    """argparse with the closest command or choice named when a word is not one."""

    def error(self, message: str) -> NoReturn:
        m = re.search(r"invalid choice: '(.*?)' \(choose from (.*)\)", message)
        if m:
            choices = re.findall(r"'([^']*)'", m[2]) or [c.strip() for c in m[2].split(",")]
            close = difflib.get_close_matches(m[1], choices, n=1, cutoff=0.6)
            if close:
                message += f"; did you mean '{close[0]}'?"
        super().error(message)


def _unrecognized(parser: argparse.ArgumentParser, command: str, extras: list[str]) -> str:
    """Each unknown flag with the closest real one; loose words after a query are most
    often a query that was not quoted."""
    sub = _subcommands(parser)[command]
    flags = [o for a in sub._actions for o in a.option_strings if o.startswith("--")]
    parts, words = [], []
    value_of_flag = False
    for extra in extras:
        if extra.split("=", 1)[0] in flags:  # given after an action such as 'sources add'
            parts.append(f"{extra} goes before the action: vaultsearch {command} {extra} ...")
            value_of_flag = "=" not in extra
        elif extra.startswith("-"):
            close = difflib.get_close_matches(extra.split("=", 1)[0], flags, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else ""
            parts.append(f"{extra} is not an option of 'vaultsearch {command}'{hint}")
            value_of_flag = "=" not in extra
        elif value_of_flag:
            value_of_flag = False  # most likely the unknown flag's value
        else:
            words.append(extra)
    if words:
        text = f"unexpected word(s) {' '.join(words)!r} for 'vaultsearch {command}'"
        if command == "search":
            text += '; quote a query of several words: vaultsearch search "words in quotes"'
        parts.append(text)
    return "; ".join(parts) + f" (see vaultsearch {command} --help)"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _one_vault(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A vault given as a positional or as --vault, the same way on every command."""
    if not hasattr(args, "vault_flag"):
        return
    if args.vault_flag and args.vault and Path(args.vault_flag) != Path(args.vault):
        parser.error(f"two vaults given: {args.vault} and --vault {args.vault_flag}; give one")
    args.vault = args.vault_flag or args.vault or "."


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a path or query that is not UTF-8 still prints
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        _subcommands(parser)[args.command].error(_unrecognized(parser, args.command, extras))
    _one_vault(parser, args)
    handler: Handler = args.handler
    try:
        with contextlib.ExitStack() as args.closing:
            return handler(args)
    except VaultsearchError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"error: {exc.message}", file=sys.stderr)
        if exc.fix:
            print(f"fix: {exc.fix}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "interrupted: what was committed is kept; run the command again to go on.",
            file=sys.stderr,
        )
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        sentence = environment_error_sentence(exc)
        if sentence is None or args.debug:
            raise
        print(f"error: {sentence}", file=sys.stderr)
        return 2
