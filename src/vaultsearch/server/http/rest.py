"""The plain HTTP API of the Index Console: status, progress, runs, cancel, search.

The routes are built from a ``ControlContext`` (the vault, its runner and the activity
log) so that the page, ``vaultsearch serve`` and ``mcp --http`` mount the same ones.
Every answer is JSON; every error is ``{"error": "<one sentence>"}``. Requests that
change something must come from this server's own page or from a client that sends no
Origin, so another site open in the browser cannot start a rebuild.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from vaultsearch.app.reload import ConfigFollower, rebuild_keys, shown_config
from vaultsearch.app.searchanswer import lines_reader
from vaultsearch.app.sourceread import indexed_text
from vaultsearch.app.vault import Vault
from vaultsearch.embedding import model_id
from vaultsearch.errors import (
    IndexBusyError,
    IndexMissingError,
    QueryError,
    VaultsearchError,
)
from vaultsearch.indexing.runner import IndexRunner, RunKind, RunSnapshot, shown_run
from vaultsearch.models import Hit
from vaultsearch.search.extractive import Answer, extractive_answer
from vaultsearch.search.request import SearchRequest
from vaultsearch.server.activity import Activity, ActivityLog, follow_runs
from vaultsearch.server.http.chatanswer import AnswerEndpointError, chat_answer
from vaultsearch.server.http.openapi import openapi_spec
from vaultsearch.store.counts import IndexCounts
from vaultsearch.store.manifest import SPEC_VERSION, read_manifest
from vaultsearch.store.milvus.target import store_status

log = logging.getLogger("vaultsearch.rest")
KEEPALIVE_SECONDS = 15.0
STORE_POLL_SECONDS = 1.0
"""How often an event stream looks at the run recorded in the index folder (a small
JSON file) for runs of other processes, which send this one no events."""
Handler = Callable[[Request], Awaitable[Response]]


@dataclass
class ControlContext:
    """What the routes need; one per served vault."""

    vault: Vault
    runner: IndexRunner
    activity: ActivityLog
    config: ConfigFollower | None = None
    """Sees an edited config file at the next /status (None: the config is fixed)."""

    @classmethod
    def for_vault(cls, vault: Vault, activity: ActivityLog | None = None) -> ControlContext:
        log = activity or ActivityLog()
        runner = vault.runner()
        follow_runs(log, runner)
        return cls(vault, runner, log, ConfigFollower(vault))


class BadRequest(Exception):
    """A request this API cannot take; its message is the whole answer."""


def error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def same_origin(request: Request) -> bool:
    """No Origin (curl, scripts), or the Origin of the page this server served."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc == request.headers.get("host")


def _guarded(handler: Handler, changes: bool = False) -> Handler:
    """Turn our errors into one-sentence JSON answers with the right status."""

    async def wrapped(request: Request) -> Response:
        if changes and not same_origin(request):
            return error(
                "Requests from another site may not change the index; "
                "use the page this server serves.",
                403,
            )
        try:
            return await handler(request)
        except BadRequest as exc:
            return error(str(exc), 400)
        except IndexBusyError as exc:
            return error(str(exc), 409)
        except IndexMissingError as exc:
            return error(str(exc), 409)
        except QueryError as exc:
            return error(str(exc), 400)
        except VaultsearchError as exc:
            return error(str(exc), 500)
        except Exception as exc:  # a bug: still one JSON sentence, and the trace in the log
            log.exception("REST %s %s failed", request.method, request.url.path)
            return error(f"The server failed ({type(exc).__name__}: {exc}); see its log.", 500)

    return wrapped


async def _json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BadRequest("The request body is not valid JSON; send a JSON object.") from None
    except RecursionError:  # BodyGuard refuses deep bodies first; routes mounted elsewhere
        raise BadRequest("The request body is nested too deeply; send a flat object.") from None
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.")
    return body


def _unknown(body: dict[str, Any], allowed: tuple[str, ...], what: str) -> None:
    extra = sorted(set(body) - set(allowed))
    if extra:
        raise BadRequest(
            f"{what} has no field {', '.join(map(repr, extra))}; it takes: {', '.join(allowed)}."
        )


# --- reading -----------------------------------------------------------------------------
def status(ctx: ControlContext) -> dict[str, Any]:
    """The /status body (blocking: it scans the vault's files)."""
    vault = ctx.vault
    reloaded = ctx.config.follow() if ctx.config is not None else None
    if reloaded is not None:
        ctx.activity.add("config_reload", reloaded.message())
    # the run first (this process's, or another's from the index folder): a finished
    # run's generation is then seen below
    run = shown_run(ctx.runner)
    counts = vault.file_counts()
    out: dict[str, Any] = {"vault": str(vault.root), "reasons": []}
    if run["state"] == "running":
        state = "updating"
        if run.get("by"):
            why = run.get("reason") or run.get("kind")
            out["reasons"] = [f"{run['by']} (pid {run.get('pid')}) is indexing: {why}"]
    elif run["state"] == "cancelling":
        state = "cancelling"
    elif vault.layout.current() is None:
        state = "no_index"
    elif counts.pending:
        state = "needs_update"
        out["reasons"] = [f"{counts.pending} files new, changed or deleted since the last run"]
    else:  # nothing to read: the full check is cheap now, and sees changed settings
        check = vault.check()
        state = "up_to_date" if check.status == "current" else "needs_update"
        out["reasons"] = check.reasons
    out["state"] = state
    out["files"] = counts.to_dict()
    out["failed"] = counts.failed_items()
    out["pending_changes"] = counts.pending
    try:
        st = vault.status()
    except IndexMissingError:
        st = IndexCounts().to_dict()
    out |= {k: st[k] for k in IndexCounts().to_dict()}
    if st.get("last_indexed"):
        out["last_indexed"] = st["last_indexed"]
    out["model"] = st.get("model") or model_id(vault.config.embedding.model)
    pushed = vault.last_push.to_dict() if vault.last_push is not None else None
    out["store"] = store_status(vault.config, pushed)
    out["config"] = shown_config(vault.config)
    out["rebuild_keys"] = rebuild_keys(vault.config)
    return out


def schema_status(vault: Vault) -> dict[str, Any]:
    current = vault.layout.current()
    manifest = read_manifest(current.root) if current is not None else None
    rebuild = vault.rebuild_check()
    out: dict[str, Any] = {"spec_version": SPEC_VERSION}
    if manifest and isinstance(manifest.get("spec_version"), int):
        out["index_spec_version"] = manifest["spec_version"]
    out["needs_rebuild"] = rebuild is not None
    out["reasons"] = rebuild.reasons if rebuild is not None else []
    return out


def query_documents(ctx: ControlContext, body: dict[str, Any]) -> dict[str, Any]:
    """Every search parameter is taken at the top level or, as older clients send them,
    inside ``filters``; ``explain`` is on unless asked off (the answer cites its parts)."""
    filters = body.get("filters") or {}
    if not isinstance(filters, dict):
        raise BadRequest("'filters' must be a JSON object.")
    top = {k: v for k, v in body.items() if k != "filters"}
    SearchRequest.from_mapping(top, "query_documents")
    SearchRequest.from_mapping(filters, "filters")
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        raise BadRequest("'query' must be a non-empty string.")
    request = SearchRequest.from_mapping({"explain": True, **filters, **top}, "query_documents")
    found = ctx.vault.search_answer(request)
    hits = found.hits
    answer = _answer(ctx, query, hits)
    ctx.activity.add("search", f"{query!r}: {len(hits)} hits")
    return {
        **found.to_dict(lines_reader(ctx.vault)),
        "answer": answer.text,
        "citations": [c.to_dict() for c in answer.citations],
    }


def _answer(ctx: ControlContext, query: str, hits: list[Hit]) -> Answer:
    """The configured endpoint's answer, or the extractive one (also when it fails)."""
    config = ctx.vault.config.answer
    if config.endpoint and hits:
        try:
            return chat_answer(config, query, hits)
        except AnswerEndpointError as exc:
            ctx.activity.add("answer_failed", f"{exc} Answered extractively.")
    return extractive_answer(query, hits, texts=[_passage(ctx.vault, h) for h in hits[:3]])


def _passage(vault: Vault, hit: Hit) -> str | None:
    """The hit's lines as indexed (a heading stays on its own line there, unlike in
    the snippet); None when the file cannot be read now."""
    try:
        lines = indexed_text(vault, hit.path)[1].split("\n")
    except VaultsearchError:
        return None
    return "\n".join(lines[hit.start_line - 1 : hit.end_line]) or None


# --- routes ------------------------------------------------------------------------------
def rest_routes(ctx: ControlContext) -> list[BaseRoute]:
    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def get_status(request: Request) -> Response:
        return JSONResponse(await anyio.to_thread.run_sync(status, ctx))

    async def progress(request: Request) -> Response:
        return JSONResponse(shown_run(ctx.runner))

    async def activity(request: Request) -> Response:
        raw = request.query_params.get("limit", "50")
        if not raw.isdigit() or not 1 <= int(raw) <= 500:
            raise BadRequest("'limit' must be an integer from 1 to 500.")
        entries = ctx.activity.recent(int(raw))
        return JSONResponse({"entries": [e.to_dict() for e in entries]})

    async def get_schema_status(request: Request) -> Response:
        return JSONResponse(await anyio.to_thread.run_sync(schema_status, ctx.vault))

    async def rebuild(request: Request) -> Response:
        body = await _json_body(request)
        _unknown(body, ("reindex_all",), "rebuild-index")
        full = body.get("reindex_all", False)
        if not isinstance(full, bool):
            raise BadRequest("'reindex_all' must be true or false.")
        kind: RunKind = "rebuild" if full else "update"
        ctx.runner.start(kind, reason="asked on the Index Console page")
        return JSONResponse({"started": True, "kind": kind}, status_code=202)

    async def cancel(request: Request) -> Response:
        if ctx.runner.cancel():
            return JSONResponse({"cancelling": True})
        return JSONResponse({"cancelling": False, "reason": "nothing is running"})

    async def search(request: Request) -> Response:
        body = await _json_body(request)
        return JSONResponse(await anyio.to_thread.run_sync(query_documents, ctx, body))

    async def openapi(request: Request) -> Response:
        return JSONResponse(openapi_spec())

    async def events(request: Request) -> Response:
        return StreamingResponse(
            _event_stream(ctx),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    handlers = {
        "/health": _guarded(health),
        "/status": _guarded(get_status),
        "/progress": _guarded(progress),
        "/events": events,
        "/activity": _guarded(activity),
        "/schema-status": _guarded(get_schema_status),
        "/rebuild-index": _guarded(rebuild, changes=True),
        "/cancel-indexing": _guarded(cancel, changes=True),
        "/query_documents": _guarded(search, changes=True),
        "/openapi.json": openapi,
    }
    documented = openapi_spec()["paths"]
    if documented.keys() != handlers.keys():  # one table would hide a route from the docs
        raise RuntimeError(f"REST routes without a description: {documented.keys() ^ handlers}")
    return [
        Route(path, handler, methods=[m.upper() for m in documented[path]])
        for path, handler in handlers.items()
    ]


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


async def _event_stream(ctx: ControlContext) -> AsyncIterator[str]:
    """The current progress at once, then every change of it and every activity entry;
    a comment line now and then keeps proxies from closing a quiet stream."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()

    def put(item: tuple[str, dict[str, Any]]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is gone: the client has left
            loop.call_soon_threadsafe(queue.put_nowait, item)

    def on_run(event: str, snap: RunSnapshot) -> None:
        put(("progress", snap.to_dict()))

    def on_activity(entry: Activity) -> None:
        put(("activity", entry.to_dict()))

    stop_run = ctx.runner.subscribe(on_run)
    stop_activity = ctx.activity.subscribe(on_activity)
    try:
        last = shown_run(ctx.runner)
        yield _sse("progress", last)
        quiet = 0.0
        while True:
            try:
                kind, data = await asyncio.wait_for(queue.get(), STORE_POLL_SECONDS)
            except TimeoutError:  # a run of another process is seen in the index folder
                kind, data = "progress", shown_run(ctx.runner)
                if data == last:
                    quiet += STORE_POLL_SECONDS
                    if quiet >= KEEPALIVE_SECONDS:
                        quiet = 0.0
                        yield ": keep-alive\n\n"
                    continue
            quiet = 0.0
            if kind == "progress":
                if data == last:
                    continue
                last = data
            yield _sse(kind, data)
    finally:
        stop_run()
        stop_activity()


def rest_app(ctx: ControlContext, token: str | None = None) -> Any:
    """The routes alone as an ASGI app (tests, and embedding in another server); with
    ``token``, every request must carry it as a bearer token."""
    from vaultsearch.server.http.bodyguard import BodyGuard

    app: Any = BodyGuard(
        Starlette(routes=rest_routes(ctx)), lambda: ctx.vault.config.server.max_body_bytes
    )
    if token is not None:
        from vaultsearch.server.http.guard import BearerAuth

        app = BearerAuth(app, token)
    return app
