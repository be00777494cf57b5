"""The manifest: what shapes an index, and whether the current code and config agree.

It is deterministic on purpose (no timestamps, no counters: those live in the state
file), so a manifest committed to git says exactly which code and settings built an
index, and CI can key a cache on it.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from pathlib import Path
from typing import Any

from vaultsearch.config import Config
from vaultsearch.embedding import fingerprint, model_dimension, model_id
from vaultsearch.errors import ModelLoadError
from vaultsearch.parsers.sentences import SPLIT_VERSION, changed_kinds
from vaultsearch.store.atomic import atomic_write_bytes, atomic_write_json, json_bytes
from vaultsearch.store.layout import MANIFEST_NAME, STATE_NAME

MANIFEST_DIGEST = "manifest_sha256"
"""The state file's record of its generation's manifest bytes."""

SPEC_VERSION = 4
"""Bumped whenever parsing, chunking or the on-disk format changes what an index holds
(2: generation folders; 3: vectors in segments, which a reader of 2 cannot find; 4:
chunk vectors float16 and sentence vectors int8 in the segments, their only copy)."""


def expected_manifest(config: Config, dimension: int | None = None) -> dict[str, Any]:
    from vaultsearch.store.keywords import TEXT_FIELDS, tokenizer_name  # not for opening a vault

    if dimension is None:
        dimension = model_dimension(config.embedding.model, config.embedding.backend)
    return {
        "spec_version": SPEC_VERSION,
        "embedding": {
            "model": model_id(config.embedding.model),
            "dimension": dimension,
            "fingerprint": _fingerprint(config, dimension),
        },
        # a list, not a table: the first matching glob wins, so order shapes the index
        "parsers": [[glob, name] for glob, name in config.parsers.items()],
        "chunking": {
            "size": config.chunking.size,
            "overlap": config.chunking.overlap,
            "max_chunks_per_note": config.chunking.max_chunks_per_note,
        },
        "sentences": {"embedded": config.embedding.sentences, "split": SPLIT_VERSION},
        "keyword": {
            "tokenizer": tokenizer_name(config.keyword.stemming),
            "fields": list(TEXT_FIELDS),
            "frontmatter_fields": list(config.keyword.frontmatter_fields),
        },
    }


RECORDED_SETTINGS = (
    "embedding.model",
    "embedding.backend",
    "embedding.sentences",
    "parsers",
    "chunking.size",
    "chunking.overlap",
    "chunking.max_chunks_per_note",
    "keyword.stemming",
    "keyword.frontmatter_fields",
)
"""The config keys ``expected_manifest`` records: changing one rebuilds the index
(``parsers`` stands for every ``parsers.<glob>``)."""


def is_recorded(key: str) -> bool:
    """Whether changing this ``section.key`` (or ``parsers.<glob>``) forces a rebuild."""
    return key in RECORDED_SETTINGS or key.startswith("parsers.")


def recorded_dimension(old: dict[str, Any] | None, config: Config) -> int | None:
    """For an endpoint backend, the dimension the index was built with, when it was built
    by the same model over an endpoint too: what the server answers cannot be known
    without asking it, and ``index --check`` asks nothing. A changed model name still
    shows as a change; a server that changed the weights behind one name does not."""
    if config.embedding.backend != "openai" or old is None:
        return None
    embedding = old.get("embedding") or {}
    recorded = embedding.get("fingerprint") or {}
    same = embedding.get("model") == config.embedding.model and (
        isinstance(recorded, dict) and recorded.get("runtime") == "openai-api"
    )
    dim = embedding.get("dimension")
    return dim if same and isinstance(dim, int) else None


def _fingerprint(config: Config, dimension: int | None) -> dict[str, str] | None:
    """Weights, runtime and precision: vectors made otherwise are not interchangeable."""
    try:
        return fingerprint(config.embedding, dimension).to_dict()
    except ModelLoadError:
        return None  # a missing model is reported, with its fix, when it is loaded


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}


def manifest_differences(old: dict[str, Any] | None, new: dict[str, Any]) -> list[str]:
    """Human-readable field changes; empty when the index needs no rebuild."""
    if old is None:
        return ["no manifest: the index has not been built"]
    a, b = _flatten(old), _flatten(new)
    changes = []
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            changes.append(f"{key}: {json.dumps(a.get(key))} -> {json.dumps(b.get(key))}")
    return changes


def rebuild_scope(changes: list[str]) -> set[str]:
    """Which indexes a manifest change invalidates, so a tokenizer change does not re-chunk."""
    scope: set[str] = set()
    for change in changes:
        key = change.split(":", 1)[0]
        if key.startswith("keyword."):
            scope.add("keywords")
        else:
            scope.update({"notes", "vectors", "keywords", "graph"})
    return scope


def resplit_kinds(old: dict[str, Any] | None, changes: list[str]) -> frozenset[str] | None:
    """When the sentence split version is the only change, the note kinds whose units
    it changed (``changed_kinds``): only their sentences are derived again, the rest of
    the index is kept. None when anything else changed (or the old version is unknown)."""
    if old is None or [c.split(":", 1)[0] for c in changes] != ["sentences.split"]:
        return None
    sentences = old.get("sentences")
    return changed_kinds(sentences.get("split") if isinstance(sentences, dict) else None)


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def read_manifest(index_dir: Path) -> dict[str, Any] | None:
    return read_json(index_dir / MANIFEST_NAME)


def write_manifest(index_dir: Path, manifest: dict[str, Any]) -> str:
    """Returns the SHA-256 of the bytes written, for the state file: the manifest stays
    deterministic (git and CI key on it), so its checksum lives beside it."""
    text = json_bytes(manifest)
    atomic_write_bytes(index_dir / MANIFEST_NAME, text)
    return hashlib.sha256(text).hexdigest()


def manifest_problem(path: Path, state: dict[str, Any]) -> str | None:
    """A manifest whose bytes are not the ones its state file recorded (a flipped bit
    that still parses would otherwise read as a changed setting, or as nothing). A
    state file from before the digest records none: nothing to compare."""
    recorded = state.get(MANIFEST_DIGEST)
    if not isinstance(recorded, str):
        return None
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None  # a missing manifest is reported as such
    if digest != recorded:
        return "manifest: its SHA-256 differs from the one the state file recorded"
    return None


def recorded_manifest(root: Path, expected: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The manifest the generation at ``root`` was built with, and what is wrong with its
    file ("" when nothing). A file whose bytes are not the ones its intact state file
    recorded is damaged, not a changed setting: the manifest is deterministic, so when
    ``expected`` has the recorded bytes the settings are the ones that built the index
    and only the file needs writing again; when it has not, they changed (None: rebuild)."""
    old = read_manifest(root)
    state = read_state(root) or {}
    recorded = state.get(MANIFEST_DIGEST)
    if not isinstance(recorded, str) or state.get("checksum") != state_checksum(state):
        return old, ""  # nothing trustworthy to compare with: an older or damaged state
    try:
        if hashlib.sha256((root / MANIFEST_NAME).read_bytes()).hexdigest() == recorded:
            return old, ""
    except OSError:
        pass
    if hashlib.sha256(json_bytes(expected)).hexdigest() == recorded:
        return expected, "manifest: damaged; its settings are the ones in use: written again"
    return None, "manifest: damaged, and the settings are not those that built the index"


def read_state(index_dir: Path) -> dict[str, Any] | None:
    return read_json(index_dir / STATE_NAME)


def state_checksum(state: dict[str, Any]) -> str:
    """The SHA-256 of the state without its own checksum field, so ``check`` finds any
    changed byte in a file that is otherwise only compared by its counts."""
    body = {k: v for k, v in state.items() if k != "checksum"}
    text = json.dumps(body, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_state(index_dir: Path, state: dict[str, Any]) -> None:
    atomic_write_json(index_dir / STATE_NAME, {**state, "checksum": state_checksum(state)})


def file_crc32(path: Path) -> int | None:
    """A published file's CRC-32, recorded in the state file when it is written: what
    finds a flipped byte in a file (a FAISS file, the graph) whose format has no
    checksum of its own, at the cost of one read (~1 GB/s), not a rebuild. Only for a
    generation's own files: the shared catalog is written after the state is."""
    crc = 0
    try:
        with path.open("rb") as fh:
            while block := fh.read(1 << 20):
                crc = zlib.crc32(block, crc)
    except OSError:
        return None
    return crc
