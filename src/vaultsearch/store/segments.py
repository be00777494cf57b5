"""Vectors as immutable segment files named by a small per-generation list.

A segment (``NAME.ids.npy`` beside ``NAME.rows.npy``) is written once and never
changed, so a new generation hard-links the segments it keeps and writes only a
segment of the rows an update added, and in its list the ids it deleted from older
segments (tombstones): a one-note edit writes kilobytes, not a copy of every vector.
A reader maps the files (``mmap``) and touches their pages only when a search needs
them, so ``status`` or a keyword search holds none of them.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import json
import mmap
import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vaultsearch.errors import IndexCorruptError
from vaultsearch.store.atomic import atomic_write_bytes, atomic_write_json, link_or_copy
from vaultsearch.store.filememo import FileMemo, Identity

_HEADER_LOCK = threading.Lock()
"""numpy reads a ``.npy`` header with ``ast.literal_eval``, and CPython 3.11's compiler
is not safe to enter from two threads at once ("AST constructor recursion depth
mismatch"): a hybrid search maps segments on its keyword thread and its own."""

LIST_VERSION = 1
SEGMENTS_FOLDER = "segments"
TIER = 4
"""Neighbouring segments merge this many at a time, and only when the largest is at most
``TIER`` times the smallest: a merge then at least multiplies by 1.75 the size of the
segment each of its rows is in, so a row is rewritten a logarithmic number of times
however the index grew, and like-sized segments do not pile up. Merging whenever more
than a fixed count were live rewrote the newest large segment at every step of a first
build: quadratic bytes, and its approximate index built again each time. (Whole tiers,
floor(log4(rows)), left steps of a build that straddled a tier boundary unmerged.)"""
MAX_SEGMENTS = 32
"""More live segments than this (only when segments of unlike sizes alternate, which
tiers do not merge) are merged the smallest neighbours first."""
MAX_DEAD = 0.2
"""A segment with more tombstoned rows than this share is rewritten without them."""
_SUFFIXES = (".ids.npy", ".rows.npy")


@dataclass(frozen=True, slots=True)
class Entry:
    """One segment as a generation's list names it."""

    name: str
    rows: int
    dead: tuple[int, ...]
    """Row ids deleted from this segment since it was written (sorted)."""
    sha256: tuple[str, str]
    """Of the ids file and of the rows file: ``check`` finds any changed byte."""
    ann: tuple[str, str] | None = None
    """(kind, sha256) of the approximate index written beside it (``ann.py``), if any."""

    @property
    def live(self) -> int:
        return self.rows - len(self.dead)

    def files(self, folder: Path) -> tuple[Path, Path]:
        return (folder / f"{self.name}{_SUFFIXES[0]}", folder / f"{self.name}{_SUFFIXES[1]}")

    def ann_file(self, folder: Path) -> Path | None:
        return None if self.ann is None else folder / f"{self.name}.{self.ann[0]}.faiss"

    def all_files(self, folder: Path) -> list[Path]:
        ann = self.ann_file(folder)
        return [*self.files(folder), *([] if ann is None else [ann])]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "rows": self.rows,
            "dead": list(self.dead),
            "sha256": list(self.sha256),
        }
        if self.ann is not None:
            out["ann"] = list(self.ann)
        return out


@dataclass(frozen=True, slots=True)
class SegmentList:
    dim: int
    dtype: str
    segments: tuple[Entry, ...]

    def __len__(self) -> int:
        return sum(e.live for e in self.segments)


def folder_of(list_path: Path) -> Path:
    return list_path.parent / SEGMENTS_FOLDER


def read_list(path: Path) -> SegmentList:
    """The list file; ValueError (naming the file) when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != LIST_VERSION:
            raise ValueError(f"version {data.get('version')!r}")
        entries = tuple(
            Entry(
                str(e["name"]),
                int(e["rows"]),
                tuple(int(i) for i in e["dead"]),
                (str(e["sha256"][0]), str(e["sha256"][1])),
                (str(e["ann"][0]), str(e["ann"][1])) if e.get("ann") else None,
            )
            for e in data["segments"]
        )
        return SegmentList(int(data["dim"]), str(np.dtype(data["dtype"])), entries)
    except (OSError, UnicodeDecodeError, KeyError, TypeError, IndexError, ValueError) as exc:
        raise ValueError(f"{path.name}: not a segment list ({type(exc).__name__}: {exc})") from exc


def write_list(path: Path, segments: SegmentList) -> None:
    atomic_write_json(
        path,
        {
            "version": LIST_VERSION,
            "dim": segments.dim,
            "dtype": segments.dtype,
            "segments": [e.to_dict() for e in segments.segments],
        },
    )


def link_segments(source_list: Path, target_list: Path) -> None:
    """A new generation's copy of a list: the list copied (it is small and rewritten),
    the segment files hard-linked (copied only where a link fails)."""
    if not source_list.is_file():
        return
    shutil.copyfile(source_list, target_list)
    try:
        entries = read_list(source_list).segments
    except ValueError:
        return  # the writer finds it unreadable and builds the index afresh
    source, target = folder_of(source_list), folder_of(target_list)
    target.mkdir(exist_ok=True)
    for entry in entries:
        for src, dst in zip(entry.all_files(source), entry.all_files(target), strict=True):
            if dst.exists() or not src.is_file():
                continue
            link_or_copy(src, dst)


class Segment:
    """One segment's rows, read from its files on first use (mapped, not loaded), or
    held in memory (rows a writer has not written yet)."""

    def __init__(
        self,
        entry: Entry,
        folder: Path | None = None,
        ids: np.ndarray | None = None,
        rows: np.ndarray | None = None,
        ann_index: Any = None,
    ) -> None:
        self.entry = entry
        self._folder = folder
        if ids is not None:
            self.__dict__["ids"] = ids
        if rows is not None:
            self.__dict__["rows"] = rows
        if ann_index is not None:
            self.__dict__["ann_index"] = ann_index

    def _load(self, n: int) -> np.ndarray:
        """The file mapped, once its bytes are found to be the ones written: a search
        reads every page of a segment anyway, and a flipped byte must not rank silently
        (nor a merge copy it into a segment with a fresh digest)."""
        assert self._folder is not None
        path = self.entry.files(self._folder)[n]
        _as_written(path, self.entry.sha256[n])
        with _HEADER_LOCK:
            array = np.load(path, mmap_mode="r", allow_pickle=False)
        if len(array) != self.entry.rows:
            raise ValueError(f"{path.name}: {len(array)} rows, the list says {self.entry.rows}")
        return array

    @functools.cached_property
    def ids(self) -> np.ndarray:
        return self._load(0)

    @functools.cached_property
    def ann_index(self) -> Any:
        """The approximate index beside the rows, read whole on first use."""
        path = None if self._folder is None else self.entry.ann_file(self._folder)
        assert path is not None and self.entry.ann is not None
        _as_written(path, self.entry.ann[1])
        from vaultsearch.store import ann  # FAISS only where a search needs it

        return ann.load(path)

    @functools.cached_property
    def rows(self) -> np.ndarray:
        return self._load(1)

    @functools.cached_property
    def rows_layout(self) -> tuple[int, np.dtype[Any], tuple[int, ...]]:
        """(data offset, dtype, shape) of the rows file, once its bytes are found to be
        the ones written: what ``take_rows`` reads by position."""
        assert self._folder is not None
        path = self.entry.files(self._folder)[1]
        _as_written(path, self.entry.sha256[1])
        shape, fortran, dtype, offset = _npy_header(path)
        if fortran or not shape or shape[0] != self.entry.rows:
            raise ValueError(f"{path.name}: {shape}, the list says {self.entry.rows} rows")
        return offset, dtype, tuple(shape)

    def release_pages(self) -> None:
        """Drop the mapped files' pages from this process (``search/idlepages.py``);
        the arrays stay valid and map them again when read. The float32 copy of
        compact rows (``vectors.float_rows``) goes too: it is the heap's largest
        block, and decoding it again costs the next search a few milliseconds. So does
        the approximate index, whose mapping holds the pages its searches walked
        (``ann.load``): the next search maps it again and copies what is not mapped
        (30 MB for 498,875 rows, against 138 MB held whole)."""
        self.__dict__.pop("decoded", None)
        self.__dict__.pop("half_index", None)
        if self._folder is not None:  # one given in memory could not be read again
            self.__dict__.pop("ann_index", None)
        for name in ("ids", "rows"):
            view = getattr(self.__dict__.get(name), "_mmap", None)
            if isinstance(view, mmap.mmap) and not view.closed:
                view.madvise(mmap.MADV_DONTNEED)

    def take_rows(self, positions: np.ndarray) -> np.ndarray:
        """The rows at these positions, read from the file, not mapped: a re-scorer
        reads a few hundred scattered rows, and the kernel maps a file's pages in large
        folios (three float16 rows of 768 bytes left 6 MB resident here; one search's
        sentences 66 MB of 166 MB, held by an idle server)."""
        positions = np.asarray(positions, dtype=np.int64)
        if self._folder is None or "rows" in self.__dict__:
            return np.asarray(self.rows[positions])
        offset, dtype, shape = self.rows_layout
        width = int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize
        out = np.empty((len(positions), *shape[1:]), dtype=dtype)
        if not len(positions):
            return out
        flat = out.reshape(-1).view(np.uint8).data
        breaks = np.flatnonzero(np.diff(positions) != 1) + 1
        starts = np.r_[0, breaks]
        ends = np.r_[breaks, len(positions)]
        runs = zip(starts.tolist(), ends.tolist(), positions[starts].tolist(), strict=True)
        fd = os.open(self.entry.files(self._folder)[1], os.O_RDONLY | os.O_CLOEXEC)
        try:
            for start, end, first in runs:
                at, size = start * width, (end - start) * width
                if _read_into(fd, flat[at : at + size], offset + first * width) != size:
                    raise ValueError(f"{self.entry.name}: rows file shorter than its header")
        finally:
            os.close(fd)
        return out

    @functools.cached_property
    def live_mask(self) -> np.ndarray | None:
        """Which rows are not tombstoned; None when all are."""
        if not self.entry.dead:
            return None
        return ~np.isin(self.ids, np.asarray(self.entry.dead, dtype=np.int64))

    @functools.cached_property
    def order(self) -> np.ndarray | None:
        """The positions in id order; None when the rows are in id order already (found
        once per id file and process: ``_IN_ORDER``)."""
        ids = self.ids
        path = None if self._folder is None else self.entry.files(self._folder)[0]
        before, known = _IN_ORDER.get(path) if path is not None else (None, None)
        if known or len(ids) < 2:
            return None
        if _ascending(ids):
            if path is not None:
                _IN_ORDER.put(path, True, before)
            return None
        return np.argsort(ids, kind="stable")

    def live_ids(self) -> np.ndarray:
        ids = np.asarray(self.ids)
        return ids if self.live_mask is None else ids[self.live_mask]

    def positions(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(id, position) of each wanted id this segment holds alive."""
        ids = np.asarray(self.ids)
        sorted_ids = ids if self.order is None else ids[self.order]
        at = np.minimum(np.searchsorted(sorted_ids, wanted), max(len(ids) - 1, 0))
        found = sorted_ids[at] == wanted if len(ids) else np.zeros(len(wanted), dtype=bool)
        pos = at[found] if self.order is None else self.order[at[found]]
        ids_found = wanted[found]
        if self.entry.dead:
            # the tombstones of the found ids only: a writer's edit looks up a few ids,
            # and a mask over every row of the segment was work growing with the index
            mask = self.__dict__.get("live_mask")
            alive = (
                mask[pos]
                if mask is not None
                else ~np.isin(ids_found, np.asarray(self.entry.dead, dtype=np.int64))
            )
            pos, ids_found = pos[alive], ids_found[alive]
        return ids_found, pos


def _read_into(fd: int, buffer: memoryview, offset: int) -> int:
    """Read ``len(buffer)`` bytes at ``offset`` straight into ``buffer`` (``preadv``);
    the bytes read. A search reads ~1,600 scattered rows a query at a million chunks
    (the approximate segments' candidates), and a ``pread`` each, copied out of a new
    bytes object, took twice as long."""
    if _PREADV:
        return os.preadv(fd, [buffer], offset)
    data = os.pread(fd, len(buffer), offset)
    buffer[: len(data)] = data
    return len(data)


_PREADV = hasattr(os, "preadv")


def open_segments(list_path: Path) -> tuple[SegmentList, list[Segment]]:
    """The list and its segments, none of their files read yet; a missing segment file
    is an error here (its pages are read later, by the search that needs them)."""
    listing = read_list(list_path)
    folder = folder_of(list_path)
    for entry in listing.segments:
        for path in entry.all_files(folder):
            if not path.is_file():
                raise ValueError(f"{list_path.name}: segment file {path.name} is missing")
    return listing, [Segment(e, folder) for e in listing.segments]


def reuse_mapped(segments: list[Segment], held: list[Segment]) -> list[Segment]:
    """``segments`` (a newer list's) taking from ``held`` (an older reader's) the files
    it already mapped and checked: a segment is named once and its digests are in the
    list, so the same name and digests are the same bytes, whatever tombstones the
    newer list adds. A reader that follows a writer then maps and hashes only the
    segments the update wrote."""
    known = {(s.entry.name, s.entry.sha256, s.entry.ann): s for s in held if s.entry.name}
    out = []
    for seg in segments:
        old = known.get((seg.entry.name, seg.entry.sha256, seg.entry.ann))
        if old is None:
            out.append(seg)
            continue
        new = Segment(seg.entry, seg._folder)
        kept = {"ids", "rows", "ann_index", "order", "rows_layout"}
        if old.entry.dead == seg.entry.dead:
            kept.add("live_mask")
        new.__dict__.update({k: v for k, v in old.__dict__.items() if k in kept})
        out.append(new)
    return out


def _npy_header(path: Path) -> tuple[tuple[int, ...], bool, np.dtype[Any], int]:
    """Shape, Fortran order, dtype and data offset of a ``.npy`` file, read without
    the data (under the lock: numpy parses the header with ``ast.literal_eval``)."""
    before, known = _HEADERS.get(path)
    if known is not None:
        return known
    with path.open("rb") as fh, _HEADER_LOCK:
        major, _ = np.lib.format.read_magic(fh)
        read = (
            np.lib.format.read_array_header_1_0
            if major == 1
            else np.lib.format.read_array_header_2_0
        )
        shape, fortran, dtype = read(fh)
        header = tuple(int(n) for n in shape), bool(fortran), dtype, fh.tell()
    _HEADERS.put(path, header, before)
    return header


def _ascending(ids: np.ndarray) -> bool:
    """Every id greater than the one before: reads the whole file."""
    return bool(np.all(ids[1:] > ids[:-1]))


def npy_shape(path: Path) -> tuple[int, ...]:
    """The shape a ``.npy`` header declares, read without the data."""
    return _npy_header(path)[0]


def npy_bytes(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, np.ascontiguousarray(array), allow_pickle=False)
    return out.getvalue()


def write_segment(folder: Path, name: str, ids: np.ndarray, rows: np.ndarray) -> Entry:
    folder.mkdir(exist_ok=True)
    data = (npy_bytes(ids.astype(np.int64)), npy_bytes(rows))
    entry = Entry(name, len(ids), (), (_sha(data[0]), _sha(data[1])))
    for path, body, digest in zip(entry.files(folder), data, entry.sha256, strict=True):
        atomic_write_bytes(path, body)
        _remember(path, digest)
    if _ascending(ids):
        _IN_ORDER.put(entry.files(folder)[0], True)
    return entry


def write_ann(folder: Path, entry: Entry, kind: str, rows: np.ndarray) -> Entry:
    """The entry with an approximate index of ``rows`` (its rows) written beside it."""
    from vaultsearch.store import ann

    body = ann.build(kind, rows)
    digest = _sha(body)
    entry = dataclasses.replace(entry, ann=(kind, digest))
    path = entry.ann_file(folder)
    assert path is not None
    atomic_write_bytes(path, body)
    _remember(path, digest)
    return entry


_VERIFIED: FileMemo[str] = FileMemo()
"""The SHA-256 of the segment files this process wrote or found whole. A segment is
hard-linked, never rewritten, into every later generation: a long-lived writer
(``watch``, ``mcp``) that tombstones rows reads the ids of every segment at every edit,
and hashing them again each time was work growing with the index (48 MB of ids at a
million chunks)."""
_IN_ORDER: FileMemo[bool] = FileMemo()
"""Id files this process found in id order (``Segment.order``): checking it reads every
id, 8 bytes a row of every segment at every edit of a long-lived writer."""
_HEADERS: FileMemo[tuple[tuple[int, ...], bool, np.dtype[Any], int]] = FileMemo()
"""``.npy`` headers read (``_npy_header``): a reader following a writer looks at every
segment file's shape at each generation it opens."""


def _remember(path: Path, digest: str, before: Identity | None = None) -> None:
    _VERIFIED.put(path, digest, before)


def _as_written(path: Path, digest: str) -> None:
    before, known = _VERIFIED.get(path)
    if known == digest:
        return
    if file_sha256(path) != digest:
        raise IndexCorruptError(
            f"The vector index is damaged ({path.name} differs from the file written).",
            fix="vaultsearch check --repair",
        )
    if before is not None:  # not remembered when it changed while hashed
        _remember(path, digest, before)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: Path) -> str:
    """Through a mapping of its own, so the pages are the page cache's, not this
    process's heap."""
    with path.open("rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return _sha(b"")
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as view:
            return hashlib.sha256(view).hexdigest()


def remove_unlisted(folder: Path, prefix: str, listing: SegmentList) -> None:
    """Drop this index's segment files the list no longer names (hard links of merged
    segments): only ever in the unpublished generation that is being written."""
    if not folder.is_dir():
        return
    keep = {p.name for e in listing.segments for p in e.all_files(folder)}
    for path in folder.iterdir():
        if path.name.startswith(f"{prefix}-") and path.name not in keep:
            path.unlink(missing_ok=True)


def tier(rows: int) -> int:
    """floor(log_TIER(rows)): about how many times a merge can have rewritten a row."""
    level = 0
    while rows >= TIER:
        rows //= TIER
        level += 1
    return level


def merge_plan(entries: list[Entry]) -> list[list[int]]:
    """Runs of neighbouring segments to write as one (order kept: a search breaks ties
    by position, as one flat index did): ``TIER`` neighbours of like size at a time,
    oldest first, until no such run is left. A run of one is rewritten only when its
    dead share passed ``MAX_DEAD``; fully dead segments are dropped."""
    kept = [i for i, e in enumerate(entries) if e.live > 0]
    return [[kept[i] for i in g] for g in tier_runs([entries[i].live for i in kept])]


def tier_runs(counts: list[int]) -> list[list[int]]:
    """``merge_plan`` over bare sizes (the graph's delta parts merge by it too): runs of
    neighbouring positions, each run one part after the merge."""
    groups = [[i] for i in range(len(counts))]
    while True:
        sizes = [sum(counts[i] for i in g) for g in groups]
        j = next(
            (
                j
                for j in range(len(groups) - TIER + 1)
                if max(sizes[j : j + TIER]) <= TIER * min(sizes[j : j + TIER])
            ),
            None,
        )
        if j is None:
            break
        groups[j : j + TIER] = [[i for g in groups[j : j + TIER] for i in g]]
    while len(groups) > MAX_SEGMENTS:
        sizes = [sum(counts[i] for i in g) for g in groups]
        j = min(range(len(groups) - 1), key=lambda j: sizes[j] + sizes[j + 1])
        groups[j : j + 2] = [groups[j] + groups[j + 1]]
    return groups


def needs_write(entry: Entry) -> bool:
    return entry.rows > 0 and len(entry.dead) > MAX_DEAD * entry.rows
