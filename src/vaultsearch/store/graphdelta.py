"""The graph's delta on disk: immutable part files of node records, named by a small
list beside the base (``graph.delta.json``).

An update writes one part of the records it changed and merges neighbouring parts of
like size (``segments.tier_runs``, the vector segments' plan), so a record is rewritten
a logarithmic number of times however many updates follow, and a generation hard-links
the parts it keeps: an edit writes the size of what it changed, not of every change
since the base. The delta is the parts' records applied in order (a later record of a
note replaces an earlier one); a merged part holds exactly that for its run. The list's
CRC-32 is in the state file and each part's in the list, so a changed byte anywhere is
found. An index from before parts kept its records inside the list (``inline``).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vaultsearch.store.atomic import atomic_write_bytes, link_or_copy

DELTA_NAME = "graph.delta.json"
PARTS_FOLDER = "graph-parts"
PREFIX = "graph-"

Record = dict[str, Any] | None
"""One note's node as a delta holds it: its attributes and outgoing edges, or None for
a note that is gone."""


@dataclass(frozen=True, slots=True)
class Part:
    name: str
    records: int
    crc32: int

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "records": self.records, "crc32": self.crc32}


@dataclass(frozen=True, slots=True)
class Listing:
    base: dict[str, Any] = field(default_factory=dict)
    """The base it applies to: its node count and CRC-32."""
    parts: tuple[Part, ...] = ()
    inline: dict[str, Record] = field(default_factory=dict)

    @property
    def records(self) -> int:
        """An upper bound of the notes it records (a note may be in several parts)."""
        return len(self.inline) + sum(p.records for p in self.parts)


def delta_path(graph_path: Path) -> Path:
    return graph_path.with_name(DELTA_NAME)


def parts_folder(graph_path: Path) -> Path:
    return graph_path.with_name(PARTS_FOLDER)


def part_path(graph_path: Path, name: str) -> Path:
    return parts_folder(graph_path) / f"{name}.json"


def read_listing(graph_path: Path) -> Listing:
    """The list beside ``graph_path``; an empty one when there is none (an index from
    before deltas). Raises ValueError (or an OSError) when it is not one."""
    path = delta_path(graph_path)
    if not path.is_file():
        return Listing()
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{DELTA_NAME}: not an object")
    parts = tuple(
        Part(str(p["name"]), int(p["records"]), int(p["crc32"])) for p in data.get("parts", ())
    )
    return Listing(dict(data.get("base", {})), parts, dict(data.get("records", {})))


def write_listing(graph_path: Path, base: dict[str, Any], parts: Iterable[Part]) -> None:
    _write(delta_path(graph_path), {"base": base, "parts": [p.to_dict() for p in parts]})


def write_part(graph_path: Path, name: str, records: dict[str, Record]) -> Part:
    body = _encode({"records": records})
    atomic_write_bytes(part_path(graph_path, name), body)
    return Part(name, len(records), zlib.crc32(body))


def read_part(graph_path: Path, part: Part) -> dict[str, Record]:
    """Its records, once its bytes are found to be the ones written (ValueError else)."""
    path = part_path(graph_path, part.name)
    try:
        body = path.read_bytes()
    except FileNotFoundError:
        raise ValueError(f"{PARTS_FOLDER}/{path.name} is missing") from None
    if zlib.crc32(body) != part.crc32:
        raise ValueError(f"{PARTS_FOLDER}/{path.name} differs from the checksum in {DELTA_NAME}")
    records = json.loads(body.decode("utf-8"))["records"]
    if not isinstance(records, dict) or len(records) != part.records:
        raise ValueError(f"{PARTS_FOLDER}/{path.name} holds other records than its list says")
    return records


Known = dict[tuple[str, int], dict[str, Record]]
"""Parts already read, by (name, CRC-32): a reader that follows a writer reads only the
parts the update wrote."""


def delta_records(
    graph_path: Path,
    listing: Listing,
    known: Known | None = None,
    read: Callable[[Path, Part], dict[str, Record]] = read_part,
) -> dict[str, Record]:
    """The delta: every part's records applied in order. ``known`` is filled with the
    parts read; ``read`` reads one (a reader keeps less of each record)."""
    out = dict(listing.inline)
    for part in listing.parts:
        out.update(_part_records(graph_path, part, known, read))
    return out


def fresh_records(
    graph_path: Path,
    listing: Listing,
    known: Known,
    read: Callable[[Path, Part], dict[str, Record]] = read_part,
) -> dict[str, Record] | None:
    """What the parts ``known`` lacks add to the delta of the parts it holds, when the
    delta is exactly those records applied over that one: the listing holds no inline
    records and every part ``known`` holds comes before every new one. A merged part
    is new and holds every record of the parts it replaced, so those may leave the
    listing. None otherwise (the delta is then read whole). The new parts are read
    and put in ``known``; the records of an unchanged delta are none."""
    if listing.inline:
        return None
    keys = [(p.name, p.crc32) for p in listing.parts]
    held = [k in known for k in keys]
    if any(held[i] and not held[i - 1] for i in range(1, len(held))):
        return None
    out: dict[str, Record] = {}
    for part, was in zip(listing.parts, held, strict=True):
        if not was:
            out.update(_part_records(graph_path, part, known, read))
    listed = set(keys)
    for key in [k for k in known if k not in listed]:
        if not known[key].keys() <= out.keys():
            return None
        del known[key]
    return out


def _part_records(
    graph_path: Path,
    part: Part,
    known: Known | None,
    read: Callable[[Path, Part], dict[str, Record]],
) -> dict[str, Record]:
    key = (part.name, part.crc32)
    records = known.get(key) if known is not None else None
    if records is None:
        records = read(graph_path, part)
        if known is not None:
            known[key] = records
    return records


def merged(graph_path: Path, parts: list[Part], name: str) -> Part:
    """One part holding what the run ``parts`` holds, applied in order."""
    return write_part(graph_path, name, delta_records(graph_path, Listing(parts=tuple(parts))))


def link_parts(source_graph: Path, target_graph: Path) -> None:
    """The list copied (small, rewritten by each update), its parts hard-linked."""
    source = delta_path(source_graph)
    if not source.is_file():
        return
    atomic_write_bytes(delta_path(target_graph), source.read_bytes())
    try:
        parts = read_listing(source_graph).parts
    except (OSError, ValueError, KeyError, TypeError):
        return  # the writer finds it unreadable and builds the graph afresh
    for part in parts:
        src, dst = part_path(source_graph, part.name), part_path(target_graph, part.name)
        if src.is_file() and not dst.exists():
            dst.parent.mkdir(exist_ok=True)
            link_or_copy(src, dst)


def remove_unlisted(graph_path: Path, parts: Iterable[Part]) -> None:
    """Drop the part files the list no longer names (links of merged parts): only in
    the unpublished generation being written."""
    folder = parts_folder(graph_path)
    if not folder.is_dir():
        return
    keep = {f"{p.name}.json" for p in parts}
    for path in folder.iterdir():
        if path.name not in keep:
            path.unlink(missing_ok=True)


def _encode(value: Any) -> bytes:
    text = json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return text.encode("utf-8")


def _write(path: Path, value: Any) -> None:
    atomic_write_bytes(path, _encode(value))
