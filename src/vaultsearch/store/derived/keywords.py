"""Tantivy as a derived index: one document per catalog chunk.

Reading needs care: Tantivy takes a lock file, opened for writing, to open an
index, which a read-only mount or another user cannot do; such a reader opens a
private copy of the (immutable) segment files instead. And Tantivy reports a
damaged file by a Rust panic, which pyo3 raises as a BaseException: every call
here turns it into an error that names the repair.

A search reads it as the keyword branch and as the snapshot's ``Lexicon``: every query
is analysed by it (stems, typo expansions, the chunks a ``-word`` removes, idf), so it
is opened even when found damaged, and has no file-less stand-in but an empty index in
memory.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import struct
import tempfile
import weakref
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from vaultsearch.errors import IndexCorruptError
from vaultsearch.store.atomic import follow_umask, link_or_copy
from vaultsearch.store.catalog import Catalog, ChunkRow, NoteRow
from vaultsearch.store.derived.base import Batch, DerivedSettings, Query, Role
from vaultsearch.store.filememo import FileMemo
from vaultsearch.store.fuzzy import Expansion
from vaultsearch.store.identifiers import identifier_words
from vaultsearch.store.keywords import KeywordDoc, KeywordIndex
from vaultsearch.store.layout import Generation

T = TypeVar("T")
_FOOTER_MAGIC = 1337


def guarded(call: Callable[[], T], what: str) -> T:
    """Run a Tantivy call; a Rust panic becomes an error a user can act on."""
    try:
        return call()
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except BaseException as exc:  # pyo3's PanicException is a BaseException
        if isinstance(exc, Exception) and not _is_panic(exc) and not isinstance(exc, ValueError):
            raise
        if refused := _refusal(exc):
            raise refused from exc
        detail = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise IndexCorruptError(
            f"The keyword index is damaged ({what}: {detail}).",
            fix="vaultsearch check --repair",
        ) from exc


_OS_ERROR = re.compile(r"(?:os error |Os \{ code: )(\d+)")
_FULL = (errno.ENOSPC, errno.EDQUOT)


def _refusal(exc: BaseException) -> OSError | None:
    """Tantivy's IO errors arrive as text (``No space left on device (os error 28)``,
    or its Rust form ``Os { code: 28, kind: StorageFull, .. }``): a full disk is the
    machine's refusal, said as such by whoever catches an ``OSError`` (the index is not
    damaged, and ``check --repair`` would run out of space the same way)."""
    text = str(exc)
    codes = {int(c) for c in _OS_ERROR.findall(text)}
    if "No space left on device" in text or "StorageFull" in text:
        codes.add(errno.ENOSPC)
    for code in _FULL:
        if code in codes:
            return OSError(code, os.strerror(code))
    return None


def _is_panic(exc: BaseException) -> bool:
    return type(exc).__name__ == "PanicException"


def stored_keyword_doc(note: NoteRow, chunk: ChunkRow, meta_keys: Sequence[str]) -> KeywordDoc:
    """The keyword document of a chunk in the catalog: the only way documents are made."""
    return KeywordDoc(
        chunk.id, note.path, note.title, note.aliases, chunk.heading_path, note.tags,
        keyword_body(note.kind, chunk.text),
        frontmatter_text(note.frontmatter, meta_keys),
    )  # fmt: skip


def keyword_body(kind: str, text: str) -> str:
    """What the keyword index reads of a chunk: code also by its identifiers' words."""
    if kind != "code":
        return text
    words = identifier_words(text)
    return f"{text}\n{words}" if words else text


def frontmatter_text(frontmatter: Mapping[str, Any], keys: Sequence[str]) -> str:
    """The text of the descriptive frontmatter keys (strings, or lists of strings), keys
    matched without regard to case: ``Description:`` is as common as ``description:``."""
    wanted = {k.lower() for k in keys}
    parts: list[str] = []
    for key, value in frontmatter.items():
        if str(key).lower() not in wanted:
            continue
        values = value if isinstance(value, list) else [value]
        parts += [str(v) for v in values if isinstance(v, str | int | float) and str(v).strip()]
    return " \n".join(parts)


def docs_for_paths(
    catalog: Catalog, paths: list[str], meta_keys: Sequence[str]
) -> list[KeywordDoc]:
    docs = []
    for path in dict.fromkeys(paths):
        note = catalog.note_by_path(path)
        if note is not None:
            docs += [stored_keyword_doc(note, c, meta_keys) for c in catalog.chunks_of(note.id)]
    return docs


def all_docs(catalog: Catalog, meta_keys: Sequence[str]) -> list[KeywordDoc]:
    notes = {n.id: n for n in catalog.notes()}
    return [stored_keyword_doc(notes[c.note_id], c, meta_keys) for c in catalog.chunks()]


def segment_problems(folder: Path, once: bool = False) -> list[str]:
    """Tantivy's own checksums: every segment file ends in a footer with the CRC32 of
    its body, so any flipped byte anywhere is found without a query touching it.
    ``once``: skip the files this process already found sound (a reader opening each
    new generation; ``check`` reads every file)."""
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        segments = [s["segment_id"].replace("-", "") for s in meta["segments"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [f"keywords: meta.json unreadable ({type(exc).__name__})"]
    problems = []
    try:
        managed = set(json.loads((folder / ".managed.json").read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        managed = set()
    # the folder listed once: a glob per segment, twice, listed it 2 x segments times
    # (most of the keywords' check of a reader following an edit at a million chunks)
    of_segment: dict[str, list[Path]] = {seg: [] for seg in segments}
    for name in sorted(os.listdir(folder)):
        stem, dot, _ = name.partition(".")
        if dot and stem in of_segment:
            of_segment[stem].append(folder / name)
    live = {"meta.json"} | {f.name for files in of_segment.values() for f in files}
    if not live <= managed:
        problems.append("keywords: .managed.json does not list the index's files")
    for seg in segments:
        files = of_segment[seg]
        if not any(f.suffix == ".term" for f in files) or not any(
            f.suffix == ".store" for f in files
        ):
            problems.append(f"keywords: segment {seg[:8]} is missing files")
        for f in files:
            if not (_footer_ok_once(f) if once else _footer_ok(f)):
                problems.append(f"keywords: {f.name} fails its checksum")
    return problems


_SOUND: FileMemo[bool] = FileMemo()
"""Segment files this process found sound. Tantivy never rewrites one, and an update
hard-links them into the next generation, so a long-lived reader reads each file once,
not at every generation it opens; a replaced or rewritten file has another identity."""


def _footer_ok_once(path: Path) -> bool:
    before, sound = _SOUND.get(path)
    if before is None:
        return False
    if sound:
        return True
    ok = _footer_ok(path)
    if ok:
        _SOUND.put(path, True, before)
    return ok


def _meta_digest(folder: Path) -> str | None:
    """meta.json has no checksum of its own; the state file keeps its digest."""
    try:
        return hashlib.sha256((folder / "meta.json").read_bytes()).hexdigest()
    except OSError:
        return None


def _footer_ok(path: Path) -> bool:
    """Read in blocks, not whole: a cold reader checks every segment file once, and the
    largest (the doc store) would otherwise be its peak of memory."""
    try:
        with path.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < 8:
                return False
            fh.seek(size - 8)
            length, magic = struct.unpack("<II", fh.read(8))
            if magic != _FOOTER_MAGIC or length + 8 > size:
                return False
            body = size - 8 - length
            fh.seek(body)
            footer = json.loads(fh.read(length))
            fh.seek(0)
            crc, left = 0, body
            while left > 0 and (block := fh.read(min(left, 1 << 20))):
                crc, left = zlib.crc32(block, crc), left - len(block)
        return left == 0 and crc == int(footer["crc"])
    except (OSError, ValueError, KeyError, TypeError, struct.error):
        return False


def open_for_reading(folder: Path, stemming: bool) -> KeywordIndex:
    """The index in place, or, where Tantivy cannot take its lock (read-only mount,
    another user), a private copy of its files, deleted with the returned index."""
    if not (folder / "meta.json").is_file():
        raise FileNotFoundError(folder / "meta.json")
    try:
        return guarded(lambda: KeywordIndex(folder, stemming), "open")
    except IndexCorruptError as exc:
        in_place = exc  # damage, or a lock Tantivy cannot take here: the copy tells which
    copy = Path(tempfile.mkdtemp(prefix="vaultsearch-keywords-"))
    try:
        for f in folder.iterdir():
            if f.is_file() and not f.name.endswith(".lock"):
                shutil.copyfile(f, copy / f.name)
        index = guarded(lambda: KeywordIndex(copy, stemming), "open")
    except BaseException:
        shutil.rmtree(copy, ignore_errors=True)
        raise in_place from None
    weakref.finalize(index, shutil.rmtree, copy, True)
    return index


class KeywordPart:
    name = "keywords"
    role: Role = "branch"
    branch = "keyword"
    modes = frozenset({"hybrid", "keyword"})
    label = "the keyword index"
    count_key: str | None = "keyword_docs"
    completes = False
    analyses = True

    def __init__(self, generation: Generation, settings: DerivedSettings) -> None:
        self.folder = self.location(generation)
        self.stemming = settings.stemming
        self.meta_keys = settings.meta_keys
        self.boosts = dict(settings.boosts)
        self.index: KeywordIndex | None = None

    @staticmethod
    def location(generation: Generation) -> Path:
        return generation.root / "keywords"

    @classmethod
    def written(cls, generation: Generation) -> bool:
        return (cls.location(generation) / "meta.json").is_file()

    @classmethod
    def carry(cls, source: Generation, target: Generation) -> None:
        """Segment files are never rewritten: linked; the JSON files a commit rewrites
        are copied."""
        src, dst = cls.location(source), cls.location(target)
        if not src.is_dir():
            return
        dst.mkdir()
        for f in src.iterdir():
            if not f.is_file() or f.name.endswith(".lock"):
                continue
            if f.name.endswith(".json"):
                shutil.copyfile(f, dst / f.name)
                continue
            link_or_copy(f, dst / f.name)

    @staticmethod
    def status(reader: Any) -> dict[str, int]:
        return {"keyword_docs": len(reader)}

    def counts(self, state: dict[str, Any]) -> dict[str, int]:
        """Tantivy's own count: opening the index maps its files and reads its meta."""
        return self.status(self.reader())

    def _index(self) -> KeywordIndex:
        assert self.index is not None, "open() first"
        return self.index

    def open(self, fresh: bool) -> None:
        if fresh:
            self.index = guarded(
                lambda: KeywordIndex.recreate(self.folder, self.stemming), "create"
            )
            return
        if (
            self.folder.is_dir()
            and segment_problems(self.folder, once=True)
            and (self.folder / "meta.json").is_file()
        ):
            raise IndexCorruptError(
                "The keyword index is damaged.", fix="vaultsearch check --repair"
            )
        self.index = guarded(lambda: KeywordIndex(self.folder, self.stemming), "open")

    def level_with(self, catalog: Catalog) -> bool:
        index = self._index()
        have = guarded(index.all_chunk_ids, "read")
        want = catalog.chunk_ids()
        if len(have) == len(want) and set(have) == set(want):
            return False
        index.clear()  # emptied and refilled in one commit: readers see old or new
        index.add(all_docs(catalog, self.meta_keys))
        guarded(index.commit, "commit")
        return True

    def apply(self, batch: Batch) -> None:
        index = self._index()
        index.delete_paths(batch.changed_paths)
        index.add(docs_for_paths(batch.catalog, list(batch.changed_paths), self.meta_keys))

    def commit(self, catalog: Catalog) -> dict[str, Any]:
        index = self._index()
        guarded(index.commit, "commit")
        follow_umask(self.folder)
        return {"keyword_docs": len(index), "keyword_meta_sha256": _meta_digest(self.folder)}

    def check(self, catalog: Catalog, recorded: dict[str, Any]) -> list[str]:
        problems = segment_problems(self.folder)
        if problems:
            return problems
        if recorded.get("keyword_meta_sha256") != _meta_digest(self.folder):
            problems.append("keywords: meta.json differs from the one the writer committed")
        try:
            index = open_for_reading(self.folder, self.stemming)
            ids = guarded(index.all_chunk_ids, "read")
            guarded(lambda: index.search(["the", "a", "note"], k=10), "search")
        except Exception as exc:
            return [f"keywords: unreadable ({str(exc)[:160]})"]
        if len(ids) != len(set(ids)):
            problems.append("keywords: duplicate documents")
        want, have = set(catalog.chunk_ids()), set(ids)
        if extra := have - want:
            problems.append(f"keywords: {len(extra)} entries for chunks the catalog does not have")
        if missing := want - have:
            problems.append(f"keywords: {len(missing)} catalog chunks missing")
        return problems

    def damage(self, state: dict[str, Any]) -> str | None:
        """At open: the one file Tantivy has no checksum for against the state file, and
        the segments' own checksums, each file once per process (a flipped byte in a
        ``.idx`` or ``.fieldnorm`` file changed answers without a panic)."""
        recorded = state.get("keyword_meta_sha256")
        if recorded is not None and recorded != _meta_digest(self.folder):
            return "keywords/meta.json differs from the one the writer committed"
        problems = segment_problems(self.folder, once=True) if recorded is not None else []
        return problems[0].removeprefix("keywords: ") if problems else None

    def reader(self, previous: Any = None) -> GuardedReader:
        """A new searcher whatever ``previous`` (Tantivy maps each segment file once per
        open; its own cache is per index)."""
        index = open_for_reading(self.folder, self.stemming)
        guarded(lambda: index.index.config_reader("manual"), "open")
        return GuardedReader(index, self.boosts)

    @classmethod
    def empty(cls, settings: DerivedSettings) -> GuardedReader:
        return GuardedReader(KeywordIndex(None, settings.stemming), dict(settings.boosts))


class GuardedReader:
    """A KeywordIndex for searching whose every call turns a Rust panic into an error
    naming the repair: a damaged segment must fail one query, not kill the server."""

    def __init__(self, index: KeywordIndex, boosts: dict[str, float] | None = None) -> None:
        self._index = index
        self.boosts = boosts or {}

    def search(self, query: Query, k: int, allowed: Any = None) -> list[tuple[int, float]]:
        boosts = self.boosts if query.boosts is None else query.boosts
        return guarded(
            lambda: self._index.search(
                query.terms,
                query.phrases,
                query.excluded,
                boosts,
                k,
                allowed,
                query.expansions,
                query.tie_order,
            ),
            "search",
        )

    def expand(self, words: Sequence[str]) -> list[Expansion]:
        return guarded(lambda: self._index.expand(words), "expand")

    def chunks_matching(self, words: Sequence[str]) -> list[int]:
        return guarded(lambda: self._index.chunks_matching(words), "search")

    def doc_freq(self, term: str) -> tuple[int, int]:
        searcher = self._index.index.searcher()
        return int(searcher.doc_freq("text", term)), int(searcher.num_docs)

    def most_begun(self, prefix: str) -> tuple[str, int]:
        """The index term beginning with ``prefix`` that most chunks hold, with their
        count; ``("", 0)`` when none does."""
        found = guarded(
            lambda: self._index.index.searcher().terms_with_prefix("text", prefix, limit=1),
            "expand",
        )
        return (str(found[0][0]), int(found[0][1])) if found else ("", 0)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._index, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            return guarded(lambda: attr(*args, **kwargs), name)

        return call

    def __len__(self) -> int:
        return guarded(lambda: len(self._index), "count")
