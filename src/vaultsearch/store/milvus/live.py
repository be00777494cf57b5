"""Which generation the alias names, and its manifest: what a reader resolves first."""

from __future__ import annotations

from typing import Any

from vaultsearch.errors import IndexIncompatibleError, IndexMissingError
from vaultsearch.store.milvus.schema import PARTS, SCHEMA_VERSION, collection
from vaultsearch.store.milvus.target import MilvusTarget

_MANIFEST = "_manifest"


def current_generation(client: Any, prefix: str) -> str | None:
    """The generation the alias ``prefix`` names, None before the first build."""
    if prefix not in client.list_aliases().get("aliases", []):
        return None
    name = str(client.describe_alias(alias=prefix)["collection_name"])
    return name[: -len(_MANIFEST)] if name.endswith(_MANIFEST) else None


def load(client: Any, generation: str, parts: tuple[str, ...] = PARTS) -> None:
    """A collection must be loaded before it answers; a server keeps it loaded, a
    Milvus Lite file starts with all of them released. Once per client: a load call
    is a round trip that every query would otherwise pay."""
    loaded: set[str] = client.__dict__.setdefault("_vaultsearch_loaded", set())
    for part in parts:
        name = collection(generation, part)
        if name not in loaded:
            client.load_collection(name)
            loaded.add(name)


def read_manifest(
    client: Any, target: MilvusTarget, generation: str | None = None
) -> dict[str, Any] | None:
    """``generation``: the one the alias names, when the caller has just resolved it."""
    generation = generation or current_generation(client, target.prefix)
    if generation is None:
        return None
    load(client, generation, ("manifest",))
    rows = client.query(
        collection(generation, "manifest"), filter="id == 1", output_fields=["manifest"]
    )
    return dict(rows[0]["manifest"]) if rows else None


def live_manifest(client: Any, target: MilvusTarget) -> dict[str, Any]:
    """The live generation's manifest, refusing one this code cannot read."""
    generation = current_generation(client, target.prefix)
    manifest = read_manifest(client, target, generation) if generation else None
    if generation is None or manifest is None:
        raise IndexMissingError(
            f"The Milvus store {target.shown()} holds no index yet.",
            fix=f"vaultsearch push VAULT --to {target.uri}",
        )
    version = manifest.get("schema_version")
    if version != SCHEMA_VERSION:
        raise IndexIncompatibleError(
            f"The Milvus store {target.shown()} has schema version {version}, and this "
            f"vaultsearch reads version {SCHEMA_VERSION}.",
            fix=f"push the index again with this version (vaultsearch push VAULT --to "
            f"{target.uri} --full), or use the vaultsearch that wrote it",
        )
    manifest["generation"] = generation
    return manifest
