"""The OpenAPI 3.1 description of the REST routes (``GET /openapi.json``).

The search request and hit are generated from the models every surface shares
(``search_schemas``); the other routes take plain JSON and are written out here.
``tests/test_rest.py`` checks it names every route and that real answers have the
fields it promises.
"""

from __future__ import annotations

from typing import Any

from vaultsearch import __version__
from vaultsearch.search.request import MODES


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    return out


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_INT = {"type": "integer"}
_STR = {"type": "string"}
_TIME = {"type": "string", "format": "date-time"}
_ERROR = _json(_ref("Error"), "The request was refused; the sentence says why and what to do.")

SCHEMAS: dict[str, Any] = {
    "Error": _obj({"error": _STR}, ["error"]),
    "Status": _obj(
        {
            "vault": _STR,
            "state": {"enum": ["no_index", "needs_update", "up_to_date", "updating", "cancelling"]},
            "files": _obj(
                {
                    k: _INT
                    for k in ("total", "indexed", "not_indexed", "deleted", "failed", "to_retry")
                },
                ["total", "indexed", "not_indexed", "deleted", "failed", "to_retry"],
            ),
            "failed": {
                "type": "array",
                "items": _obj(
                    {
                        "path": _STR,
                        "reason": _STR,
                        "fault": {
                            "enum": ["file", "ours"],
                            "description": "ours: not the file's fault (out of descriptors "
                            "or memory, the parser process lost, our parser's error); "
                            "the next run reads the file again.",
                        },
                        "tries": {**_INT, "description": "Runs that tried it as it is (ours)."},
                    },
                    ["path", "reason", "fault"],
                ),
            },
            "pending_changes": _INT,
            "notes": _INT,
            "chunks": _INT,
            "sentences": _INT,
            "notes_awaiting_sentences": {
                **_INT,
                "description": "Notes searchable by their chunk vectors and keywords whose "
                "sentence vectors a first build's second stage has not added yet.",
            },
            "links": _INT,
            "resolved_links": _INT,
            "broken_links": _INT,
            "reasons": {
                "type": "array",
                "items": _STR,
                "description": "Why the state is not up_to_date, as index --check says it.",
            },
            "last_indexed": _TIME,
            "model": _STR,
            "config": {"type": "object", "description": "Every setting as section.key: value."},
            "rebuild_keys": {"type": "array", "items": _STR},
            "store": {
                "type": "object",
                "description": "Where the index is also served: backend (local or milvus); "
                "for milvus its uri, collection prefix, whether a token is set (never the "
                "token) and this process's last_push.",
            },
        },
        [
            "vault",
            "state",
            "files",
            "failed",
            "pending_changes",
            "notes",
            "chunks",
            "model",
            "config",
            "rebuild_keys",
        ],
    ),
    "Progress": _obj(
        {
            "state": {
                "enum": [
                    "idle",
                    "running",
                    "cancelling",
                    "done",
                    "cancelled",
                    "failed",
                    "interrupted",
                ]
            },
            "kind": {"enum": ["update", "rebuild", "sentences"]},
            "stage": {
                **_INT,
                "description": "The stage of a build the run is in: 1 chunk vectors, keywords "
                "and links (searchable as published), 2 sentence vectors.",
            },
            "by": {**_STR, "description": "The program that runs or ran it (any process)."},
            "pid": _INT,
            "reason": {**_STR, "description": "Why it runs: who asked, or what changed."},
            "note": {**_STR, "description": "What a cancelled, failed or interrupted end left."},
            "counts": {"type": "object", "description": "What the index holds after the run."},
            "percent": {"type": "number", "minimum": 0, "maximum": 100},
            "files_done": _INT,
            "files_total": _INT,
            "chunks_done": _INT,
            "chunks_total": {
                **_INT,
                "description": "Texts (chunks and their sentences) known to need the model; "
                "grows as batches are parsed.",
            },
            "current_file": _STR,
            "started_at": _TIME,
            "finished_at": _TIME,
            "error": _STR,
        },
        ["state", "percent", "files_done", "files_total", "chunks_done", "chunks_total"],
    ),
    "Activity": _obj(
        {
            "entries": {
                "type": "array",
                "items": _obj({"time": _TIME, "event": _STR, "detail": _STR}),
            }
        },
        ["entries"],
    ),
    "SchemaStatus": _obj(
        {
            "spec_version": _INT,
            "index_spec_version": _INT,
            "needs_rebuild": {"type": "boolean"},
            "reasons": {"type": "array", "items": _STR},
        },
        ["spec_version", "needs_rebuild", "reasons"],
    ),
    "Answer": _obj(
        {
            "query": _STR,
            "mode": {"enum": list(MODES)},
            "hits": {"type": "array", "items": _ref("Hit")},
            "degraded": {**_STR, "description": "Set when an index could not be read."},
            "answer": _STR,
            "citations": {
                "type": "array",
                "items": _obj(
                    {"n": _INT, "path": _STR, "start_line": _INT, "end_line": _INT},
                    ["n", "path", "start_line", "end_line"],
                ),
            },
        },
        ["query", "mode", "hits", "answer", "citations"],
    ),
}


def search_schemas() -> dict[str, Any]:
    """The search request and hit, generated from the models every surface shares:
    ``SearchRequest`` (also MCP's input schema) and the hit of ``SearchAnswer``."""
    from vaultsearch.server.tools.lean import compact_schema
    from vaultsearch.server.tools.schemas import SearchHit
    from vaultsearch.server.tools.searchargs import request_schema

    request = request_schema()
    props = request["properties"]
    filters = {k: v for k, v in props.items() if k not in ("query", "top_k")}
    body = {
        **request,
        "properties": {**props, "filters": {**_obj(filters), "description": "Older clients "
                       "send the parameters here; the top level takes them all."}},
    }  # fmt: skip
    hit = compact_schema(SearchHit.model_json_schema())
    return {"SearchRequest": body, "Hit": hit}


def _get(summary: str, schema: str, **extra: Any) -> dict[str, Any]:
    return {
        "get": {"summary": summary, "responses": {"200": _json(_ref(schema), summary)}, **extra}
    }


def openapi_spec() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "vaultsearch Index Console",
            "version": __version__,
            "description": "Status, progress and control of a vault's search index, and "
            "search with an extractive answer. POST requests from a browser must come "
            "from this server's own page; off loopback every request needs the bearer token.",
        },
        "components": {
            "schemas": {**SCHEMAS, **search_schemas()},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "paths": {
            "/health": {
                "get": {
                    "summary": "The server answers.",
                    "responses": {"200": _json(_obj({"status": {"const": "ok"}}), "Alive.")},
                }
            },
            "/status": _get("Files, index state, counts and configuration.", "Status"),
            "/progress": _get("The index run in progress, or the last one.", "Progress"),
            "/events": {
                "get": {
                    "summary": "Server-sent events: 'progress' (the /progress body) at each "
                    "change, 'activity' (one entry) for each activity.",
                    "responses": {
                        "200": {
                            "description": "An endless event stream.",
                            "content": {"text/event-stream": {"schema": _STR}},
                        }
                    },
                }
            },
            "/activity": _get(
                "Recent activity, newest first.",
                "Activity",
                parameters=[
                    {
                        "name": "limit",
                        "in": "query",
                        "schema": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50},
                    }
                ],
            ),
            "/schema-status": _get(
                "Whether the index's format and settings match this version.", "SchemaStatus"
            ),
            "/rebuild-index": {
                "post": {
                    "summary": "Start an update (reindex_all false) or a full rebuild.",
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": _obj({"reindex_all": {"type": "boolean"}})
                            }
                        }
                    },
                    "responses": {
                        "202": _json(
                            _obj(
                                {
                                    "started": {"const": True},
                                    "kind": {"enum": ["update", "rebuild"]},
                                }
                            ),
                            "Started in the background; follow /progress or /events.",
                        ),
                        "409": _ERROR,
                        "400": _ERROR,
                        "403": _ERROR,
                    },
                }
            },
            "/cancel-indexing": {
                "post": {
                    "summary": "Stop the run in progress after its current model call.",
                    "responses": {
                        "200": _json(
                            _obj({"cancelling": {"type": "boolean"}, "reason": _STR}),
                            "Whether a run is being stopped.",
                        ),
                        "403": _ERROR,
                    },
                }
            },
            "/query_documents": {
                "post": {
                    "summary": "Search, with an extractive answer citing the hits.",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": _ref("SearchRequest")}},
                    },
                    "responses": {
                        "200": _json(_ref("Answer"), "Hits and the answer."),
                        "400": _ERROR,
                        "403": _ERROR,
                        "409": _ERROR,
                    },
                }
            },
            "/openapi.json": {
                "get": {
                    "summary": "This description.",
                    "responses": {"200": {"description": "OpenAPI 3.1"}},
                }
            },
        },
    }
