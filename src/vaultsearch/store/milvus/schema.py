"""The collections of one generation, and the rows they hold.

A generation is four collections named ``<prefix>_g<N>_<part>``; the alias ``<prefix>``
names its manifest collection, so switching the alias switches all four in one step.
Every chunk row carries the fields the filters need (denormalised from its note), so a
filtered search is one Milvus query with a boolean expression.

The keyword text is analysed here, by the same Tantivy analyzer the local keyword index
uses (lowercase, ASCII folding, English stems), and stored as space-separated terms:
Milvus's BM25 then only splits on spaces, so keyword search stems exactly like the
local store on any Milvus build (Milvus Lite 3.2 ignores analyzer filters).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Iterable
from typing import Any

from vaultsearch.store.catalog import ChunkRow, NoteRow
from vaultsearch.store.keywords import _analyzer, _with_title

SCHEMA_VERSION = 2
"""2: a note row lists its chunks (``chunks``), the rows a reader may use."""
PARTS = ("chunks", "sentences", "notes", "manifest")
MAX_TEXT = 65_535
"""Milvus's VARCHAR limit, in bytes."""
MAX_LIST = 1024
PAD_DIM = 2
"""Every Milvus collection needs a vector field; notes and manifest carry a dummy."""

FILTER_FIELDS = (
    "path", "path_lower", "rel_path", "folder", "folder_runs", "tag_keys", "meta", "date",
    "source", "kind", "language", "qualified_name", "page",
)  # fmt: skip
HIT_FIELDS = (
    "id", "note_id", "ordinal", "title", "heading_path", "start_line", "end_line",
    "start_char", "end_char", "text", "node_type", "embed_hash", "frontmatter", "tags",
)  # fmt: skip
CHUNK_OUTPUT = tuple(dict.fromkeys((*HIT_FIELDS, *FILTER_FIELDS)))
SHOWN = (
    "id", "note_id", "ordinal", "heading_path", "start_line", "end_line", "start_char",
    "end_char", "text", "embed_hash", "qualified_name", "node_type", "page",
)  # fmt: skip
"""What a hit shows of its chunk; the note's fields come from the notes collection."""


def generation_name(prefix: str, number: int) -> str:
    return f"{prefix}_g{number:06d}"


def collection(generation: str, part: str) -> str:
    return f"{generation}_{part}"


def generation_number(prefix: str, name: str) -> int | None:
    """The N of ``<prefix>_g<N>_<part>``; None for a collection that is not ours."""
    head = f"{prefix}_g"
    if not name.startswith(head):
        return None
    number, _, part = name[len(head) :].partition("_")
    return int(number) if number.isdigit() and part in PARTS else None


@functools.cache
def _stemmed_analyzer(stemming: bool) -> Any:
    return _analyzer(stemming)


def analysed(text: str, stemming: bool = True) -> str:
    """The terms BM25 sees, space-separated, cut at Milvus's length limit."""
    terms = " ".join(_stemmed_analyzer(stemming).analyze(text))
    return _cut(terms)


def _cut(text: str) -> str:
    raw = text.encode("utf-8")
    if len(raw) <= MAX_TEXT:
        return text
    return raw[:MAX_TEXT].decode("utf-8", errors="ignore")


def tag_keys(tags: Iterable[str]) -> list[str]:
    """Each tag and its ancestors, lowercased: ``tag:project`` is then an exact
    ``array_contains`` for ``project/alpha`` as locally (``filters.tag_matches``)."""
    out: set[str] = set()
    for tag in tags:
        parts = str(tag).lower().lstrip("#").strip("/").split("/")
        out.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return sorted(out)[:MAX_LIST]


def folder_runs(path: str) -> list[str]:
    """Every contiguous run of the folder names, so a folder given by name (``b`` or
    ``a/b`` anywhere in the path) is one ``array_contains``."""
    folder = path.rsplit("/", 1)[0] if "/" in path else ""
    parts = folder.split("/") if folder else []
    runs = {"/".join(parts[i:j]) for i in range(len(parts)) for j in range(i + 1, len(parts) + 1)}
    return sorted(runs)[:MAX_LIST]


def meta_values(frontmatter: dict[str, Any]) -> dict[str, list[str]]:
    """Frontmatter values normalised as ``filters._value_matches`` compares them."""
    out = {}
    for key, value in frontmatter.items():
        values = value if isinstance(value, list) else [value]
        out[str(key)] = [
            str(v).lower() if isinstance(v, bool) else str(v).strip().lower() for v in values
        ]
    return out


def note_fields(note: NoteRow) -> dict[str, Any]:
    rel = note.path[len(note.source) + 1 :] if note.source else note.path
    return {
        "note_id": note.id,
        "path": note.path,
        "path_lower": note.path.lower(),
        "rel_path": rel,
        "folder": note.path.rsplit("/", 1)[0] if "/" in note.path else "",
        "folder_runs": folder_runs(note.path),
        "title": note.title,
        "tags": [str(t) for t in note.tags][:MAX_LIST],
        "tag_keys": tag_keys(note.tags),
        "frontmatter": _jsonable(note.frontmatter),
        "meta": meta_values(note.frontmatter),
        "date": float(note.date),
        "source": note.source,
        "kind": note.kind,
        "language": note.language,
    }


def chunk_row(chunk: ChunkRow, note: dict[str, Any], stemming: bool) -> dict[str, Any]:
    """A chunk's row without its vector; ``digest`` says whether the stored row is it."""
    row = {
        "id": chunk.id,
        **note,
        "ordinal": chunk.ordinal,
        "heading_path": json.dumps(list(chunk.heading_path), ensure_ascii=False),
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "start_char": chunk.start_char,
        "end_char": chunk.end_char,
        "text": _cut(chunk.text),
        "terms": analysed(_with_title(note["title"], chunk.text), stemming),
        "embed_hash": chunk.embed_hash,
        "qualified_name": chunk.qualified_name,
        "node_type": chunk.node_type,
        "page": chunk.page,
    }
    row["digest"] = digest(row)
    return row


def note_row(
    note: NoteRow, neighbours: list[str], first_chunk: int, chunks: Iterable[int]
) -> dict[str, Any]:
    """``chunks``: the ids of the note's chunks as the catalog holds them now, as runs.
    A reader uses only the chunk rows its note's row lists, so this one row is the
    step that switches a note from its old chunks to its new ones."""
    fields = note_fields(note)
    row = {
        "id": note.id,
        "path": note.path,
        "first_chunk": first_chunk,
        "chunks": id_runs(chunks),
        "neighbours": neighbours,
        "note": {
            k: fields[k]
            for k in ("path", "title", "tags", "frontmatter", "date", "source", "kind", "language")
        },
        "pad": [1.0, 0.0],
    }
    row["digest"] = digest(row)
    return row


def id_runs(ids: Iterable[int]) -> list[list[int]]:
    """Ids as ``[first, last]`` runs: a note's chunks are inserted together, so their
    ids are one run or a few, whatever their number."""
    runs: list[list[int]] = []
    for i in sorted(set(ids)):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return runs


def run_ids(runs: Iterable[Iterable[int]]) -> list[int]:
    return [i for first, last in runs for i in range(int(first), int(last) + 1)]


def digest(row: dict[str, Any]) -> str:
    body = {k: v for k, v in row.items() if k not in ("digest", "pad")}
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


def create_generation(client: Any, generation: str, dim: int) -> None:
    """The four empty collections of a generation, with their indexes (FLAT inner
    product for the vectors: exact, as the local store; BM25 over ``terms``)."""
    from vaultsearch.store.milvus.client import milvus_module

    m = milvus_module()
    dt = m.DataType
    for part, build in _BUILDERS.items():
        schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
        build(schema, dt, dim)
        if part == "chunks":
            schema.add_function(
                m.Function(
                    name="bm25",
                    function_type=m.FunctionType.BM25,
                    input_field_names=["terms"],
                    output_field_names=["sparse"],
                )
            )
        params = client.prepare_index_params()
        vector = "pad" if part in ("notes", "manifest") else "dense"
        params.add_index(vector, index_type="FLAT", metric_type="IP")
        if part == "chunks":
            params.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        client.create_collection(
            collection(generation, part),
            schema=schema,
            index_params=params,
            consistency_level="Strong",
        )


def _chunks(s: Any, dt: Any, dim: int) -> None:
    s.add_field("id", dt.INT64, is_primary=True)
    s.add_field("note_id", dt.INT64)
    s.add_field("ordinal", dt.INT64)
    for name in ("path", "path_lower", "rel_path", "folder", "title", "heading_path"):
        s.add_field(name, dt.VARCHAR, max_length=MAX_TEXT)
    for name in ("source", "kind", "language", "qualified_name", "node_type", "embed_hash"):
        s.add_field(name, dt.VARCHAR, max_length=4096)
    s.add_field("digest", dt.VARCHAR, max_length=64)
    for name in ("folder_runs", "tag_keys", "tags"):
        s.add_field(name, dt.ARRAY, element_type=dt.VARCHAR, max_capacity=MAX_LIST, max_length=1024)
    s.add_field("frontmatter", dt.JSON)
    s.add_field("meta", dt.JSON)
    s.add_field("date", dt.DOUBLE)
    for name in ("start_line", "end_line", "start_char", "end_char", "page"):
        s.add_field(name, dt.INT64)
    s.add_field("text", dt.VARCHAR, max_length=MAX_TEXT)
    s.add_field(
        "terms",
        dt.VARCHAR,
        max_length=MAX_TEXT,
        enable_analyzer=True,
        enable_match=True,
        analyzer_params={"tokenizer": "standard"},
    )
    s.add_field("dense", dt.FLOAT_VECTOR, dim=dim)
    s.add_field("sparse", dt.SPARSE_FLOAT_VECTOR)


def _sentences(s: Any, dt: Any, dim: int) -> None:
    s.add_field("id", dt.INT64, is_primary=True)
    s.add_field("chunk_id", dt.INT64)
    s.add_field("dense", dt.FLOAT_VECTOR, dim=dim)


def _notes(s: Any, dt: Any, dim: int) -> None:
    s.add_field("id", dt.INT64, is_primary=True)
    s.add_field("path", dt.VARCHAR, max_length=MAX_TEXT)
    s.add_field("first_chunk", dt.INT64)
    s.add_field("chunks", dt.JSON)
    s.add_field("neighbours", dt.JSON)
    s.add_field("note", dt.JSON)
    s.add_field("digest", dt.VARCHAR, max_length=64)
    s.add_field("pad", dt.FLOAT_VECTOR, dim=PAD_DIM)


def _manifest(s: Any, dt: Any, dim: int) -> None:
    s.add_field("id", dt.INT64, is_primary=True)
    s.add_field("manifest", dt.JSON)
    s.add_field("pad", dt.FLOAT_VECTOR, dim=PAD_DIM)


_BUILDERS: dict[str, Callable[[Any, Any, int], None]] = {
    "chunks": _chunks,
    "sentences": _sentences,
    "notes": _notes,
    "manifest": _manifest,
}
