"""The one place pymilvus is imported, and where its errors become one sentence.

pymilvus logs every failed call with a traceback on stderr before raising; its logger
is silenced here because the error that reaches the user is the sentence below.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from vaultsearch.errors import IndexMissingError, VaultsearchError
from vaultsearch.store.milvus.target import TOKEN_ENV, MilvusTarget

CONNECT_TIMEOUT = 20.0


class MilvusStoreError(VaultsearchError):
    """The Milvus engine refused or could not be reached."""


def milvus_module() -> Any:
    # gRPC's C core logs keepalive chatter with Milvus Lite (GOAWAY 'too_many_pings')
    # straight to stderr; every error that matters reaches the user as a sentence
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    try:
        import pymilvus
    except ImportError:
        raise MilvusStoreError(
            "A Milvus store needs the pymilvus package, which is not installed.",
            fix="pip install 'vaultsearch[milvus]'",
        ) from None
    for name in ("pymilvus", "milvus_lite"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    return pymilvus


def connect(target: MilvusTarget, create: bool = False) -> Any:
    """A MilvusClient. A Milvus Lite file is created by a writer (``create``); a reader
    pointed at a file that is not there is told so, rather than given an empty store."""
    pymilvus = milvus_module()
    if target.is_lite:
        path = Path(target.uri)
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
        elif not path.exists():
            raise IndexMissingError(
                f"There is no Milvus Lite store at {target.uri}.",
                fix=f"vaultsearch push VAULT --to {target.uri} creates it, or point "
                "--store-uri at the file or server that holds the index",
            )
        try:
            import milvus_lite  # noqa: F401
        except ImportError:
            raise MilvusStoreError(
                f"{target.uri} is a Milvus Lite file, which needs the milvus-lite package.",
                fix="pip install 'vaultsearch[milvus]', or point --store-uri at a server",
            ) from None
    with engine_errors(target):
        return pymilvus.MilvusClient(uri=target.uri, token=target.token, timeout=CONNECT_TIMEOUT)


@contextmanager
def engine_errors(target: MilvusTarget, collection: str = "") -> Iterator[None]:
    """Every engine error as one sentence naming the store and what to do."""
    try:
        yield
    except VaultsearchError:
        raise
    except Exception as exc:
        module = type(exc).__module__ or ""
        if not module.startswith(("pymilvus", "grpc", "milvus")):
            raise
        raise sentence(exc, target, collection) from None


def sentence(exc: BaseException, target: MilvusTarget, collection: str = "") -> VaultsearchError:
    code = getattr(exc, "code", None)
    text = str(getattr(exc, "message", "") or exc).strip().splitlines()[0][:200]
    status, details = _grpc_status(exc)
    if status in ("UNAUTHENTICATED", "PERMISSION_DENIED"):
        code, text = 1800, details[:200] or status
    elif details:
        text = f"{text}: {details}"[:300]
    low = text.lower()
    where = target.shown()
    if target.is_lite and "open local milvus" in low and Path(target.uri).exists():
        return MilvusStoreError(
            f"The Milvus Lite store {target.uri} cannot be opened: it is open in another "
            "process (Milvus Lite serves one process per file) or is not a Milvus Lite store.",
            fix="stop that process, or put the index on a Milvus server for many clients",
        )
    if "auth" in low or "credential" in low or "permission" in low or code in (1800, 2200):
        return MilvusStoreError(
            f"Milvus at {target.uri} refused the credentials ({text}).",
            fix=f"set a valid token in {TOKEN_ENV} or store.token ('user:password' or an API key)",
        )
    if code == 2 or "connect" in low or "unavailable" in low or "open local milvus" in low:
        return MilvusStoreError(
            f"Milvus at {target.uri} cannot be reached ({text}).",
            fix="start the server (or check the address and port), or use a Milvus Lite "
            "file path as the URI",
        )
    if code == 100 or "not exist" in low or "not found" in low:
        name = f" {collection}" if collection else ""
        return IndexMissingError(
            f"The Milvus store {where} is missing a collection{name} of its index ({text}).",
            fix=f"vaultsearch push VAULT --to {target.uri} --full builds the index anew",
        )
    return MilvusStoreError(f"Milvus at {target.uri} failed: {text}.")


def _grpc_status(exc: BaseException) -> tuple[str, str]:
    """(status name, details) of a gRPC error, or of the one under a pymilvus error: a
    server that refuses the credentials is reported by pymilvus as 'Fail connecting',
    with the real reason (``UNAUTHENTICATED``, 'auth check failure ...') only in its
    cause."""
    seen: BaseException | None = exc
    visited: set[int] = set()  # a chain of contexts can loop
    while seen is not None and id(seen) not in visited:
        visited.add(id(seen))
        code, details = getattr(seen, "code", None), getattr(seen, "details", None)
        if callable(code) and callable(details):
            try:
                return str(getattr(code(), "name", "")), str(details() or "")
            except Exception:
                return "", ""
        seen = seen.__cause__ or seen.__context__
    return "", ""
