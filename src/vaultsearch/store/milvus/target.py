"""Where a Milvus store is: URI, token and collection prefix, checked once."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vaultsearch.errors import ConfigError

if TYPE_CHECKING:
    from vaultsearch.config import Config

TOKEN_ENV = "VAULTSEARCH_MILVUS_TOKEN"
DEFAULT_PREFIX = "vaultsearch"
_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")


@dataclass(frozen=True, slots=True)
class MilvusTarget:
    uri: str
    """A Milvus Lite file (``team.db``) or a server, ``http(s)://host:19530``."""
    token: str = ""
    prefix: str = DEFAULT_PREFIX

    @classmethod
    def build(cls, uri: str, token: str = "", prefix: str = "") -> MilvusTarget:
        """The token from the argument, else ``VAULTSEARCH_MILVUS_TOKEN``: a secret that
        need not be written into a config file or a command line."""
        uri = uri.strip()
        if not uri:
            raise ConfigError(
                "No Milvus URI was given.",
                fix="pass --store-uri URI or set store.uri (a .db file or http://host:19530)",
            )
        prefix = prefix or DEFAULT_PREFIX
        if not _PREFIX.fullmatch(prefix):
            raise ConfigError(
                f"The Milvus collection prefix {prefix!r} is not a valid collection name.",
                fix="use letters, digits and underscores, starting with a letter, "
                "e.g. store.collection = 'handbook'",
            )
        if not uri.startswith(("http://", "https://", "tcp://", "unix:")):
            uri = os.path.abspath(os.path.expanduser(uri))
        return cls(uri, token or os.environ.get(TOKEN_ENV, ""), prefix)

    @classmethod
    def from_config(
        cls, config: Config, uri: str | None = None, prefix: str | None = None
    ) -> MilvusTarget:
        s = config.store
        return cls.build(uri or s.uri, s.token, prefix or s.collection)

    @property
    def is_lite(self) -> bool:
        return not self.uri.startswith(("http://", "https://", "tcp://"))

    def shown(self) -> str:
        """For messages and status: never the token."""
        return f"{self.shown_uri()} (collections {self.prefix}_*)"

    def shown_uri(self) -> str:
        """The URI without a ``user:password@`` a user may have written into it."""
        scheme, sep, rest = self.uri.partition("://")
        if not sep or "@" not in rest.split("/", 1)[0]:
            return self.uri
        return f"{scheme}://{rest.split('@', 1)[1]}"


def store_status(config: Config, pushed: dict[str, Any] | None = None) -> dict[str, Any]:
    """Where the index is also served, as a status page shows it: the backend, and for
    Milvus its URI and collection prefix, whether a token is set (never the token),
    and what this process last pushed (``PushSummary.to_dict``)."""
    s = config.store
    if s.backend != "milvus":
        return {"backend": s.backend}
    out: dict[str, Any] = {"backend": "milvus", "uri": "", "collection": s.collection}
    try:
        target = MilvusTarget.from_config(config)
    except ConfigError as exc:
        out["error"] = exc.message
    else:
        out |= {"uri": target.shown_uri(), "token": "(set)" if target.token else "(not set)"}
    if pushed:
        keys = ("generation", "chunks", "notes", "embedded", "seconds")
        out["last_push"] = {k: pushed[k] for k in keys if k in pushed}
    return out
