"""Contextual sentence vectors for issue 27: each chunk's sentence units embedded with
their chunk's context instead of bare, computed from a built catalog.

Today a sentence unit is embedded alone (``indexing/batch.py``), so "These results
suggest it is safe." loses what "it" is, while the chunk vector carries the note's
title and heading path (``chunker._embed_text``). Two ways of giving the sentence its
context back, both with the bundled model and nothing learned:

- ``prefix``: the unit embedded behind the same prefix its chunk's ``embed_text`` has
  (title, heading path): "contextual retrieval", lite. One model run per unit, as now.
- ``late<N>``: late chunking. One run over the chunk's ``embed_text`` (at most N
  tokens); a unit's vector is the mean of the token embeddings of its own span, at unit
  length. The span is found by tokenising the unit alone and finding those ids in the
  ids of the chunk's text (WordPiece splits at whitespace and punctuation, so a unit's
  ids are a run of its chunk's ids); a unit not found, or past the N tokens, keeps its
  bare vector. At 256 tokens (the model's ``max_seq_length``) the run is the chunk
  vector's own run, so the sentence vectors cost no extra model run at all.

A unit text seen in two chunks (a chunk overlap repeats a sentence, or two notes share
one) gets the vector of its first chunk: the index keys sentence vectors by text.
"""

from __future__ import annotations

import copy
import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vaultsearch.embedding import text_hash
from vaultsearch.embedding.tokens import mean_pool_normalize
from vaultsearch.parsers.sentences import unit_texts


@dataclass(frozen=True)
class ChunkRow:
    prefix: str
    """What ``chunker._embed_text`` puts before the chunk's text (title, heading path)."""
    text: str
    kind: str
    embed_hash: str

    @property
    def embed_text(self) -> str:
        return self.prefix + self.text


@dataclass
class Counts:
    chunks: int = 0
    units: int = 0
    duplicate_units: int = 0
    """Unit texts met again in a later chunk (they keep the first chunk's vector)."""
    not_found: int = 0
    """Late: a unit whose ids are not a run of its chunk's ids (bare vector kept)."""
    past_window: int = 0
    """Late: a unit whose span ends past the model window (bare vector kept)."""
    concat_differs: int = 0
    """Late: chunks whose ids, tokenised as prefix + text, differ from the whole's."""
    long_chunks: int = 0
    """Chunks whose ``embed_text`` has more than 256 tokens (the shipped cut)."""
    cpu_s: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)


def read_counts(text: str) -> Counts:
    """Counts as saved (JSON; an older run wrote the dataclass's repr)."""
    if text.startswith("Counts("):
        return eval(text, {"Counts": Counts})  # our own file, written by this script
    return Counts(**json.loads(text))


def chunk_rows(catalog: Path) -> list[ChunkRow]:
    """Every chunk of a built catalog, with the prefix its vector was embedded behind;
    checked against the stored hash of the embedded text, so the prefix is exactly the
    chunker's (a row that does not match would raise)."""
    db = sqlite3.connect(f"file:{catalog}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT n.title, c.heading_path, c.text, n.kind, c.embed_hash FROM chunks c"
            " JOIN notes n ON n.id=c.note_id ORDER BY n.path, c.ordinal"
        ).fetchall()
    finally:
        db.close()
    out = []
    for title, heading_path, text, kind, embed_hash in rows:
        path = json.loads(heading_path)
        prefix = "\n".join([title, " > ".join(path)] if path else [title]) + "\n"
        if text_hash(prefix + text) != embed_hash:
            raise ValueError(f"prefix not the chunker's for a chunk of {title!r}")
        out.append(ChunkRow(prefix, text, kind, embed_hash))
    return out


def stored_vectors(catalog: Path, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
    db = sqlite3.connect(f"file:{catalog}?mode=ro", uri=True)
    try:
        out = {}
        wanted = sorted(set(hashes))
        for s in range(0, len(wanted), 900):
            part = wanted[s : s + 900]
            marks = ",".join("?" * len(part))
            sql = (
                f"SELECT text_hash, vector FROM embeddings WHERE model=? AND text_hash IN ({marks})"
            )
            for h, v in db.execute(sql, [model, *part]):
                out[h] = np.frombuffer(v, dtype=np.float32)
        return out
    finally:
        db.close()


def units_of(rows: Sequence[ChunkRow]) -> Iterator[tuple[int, str]]:
    for i, r in enumerate(rows):
        for u in unit_texts(r.text, r.kind):
            yield i, u


def prefixed(rows: Sequence[ChunkRow], embed: object, counts: Counts) -> dict[str, np.ndarray]:
    """Each unit embedded behind its chunk's prefix, one run per unit as the index runs
    them (``embed``: ``Embedder.embed_texts``)."""
    texts: dict[str, str] = {}
    for i, u in units_of(rows):
        counts.units += 1
        if u in texts:
            counts.duplicate_units += 1
            continue
        texts[u] = rows[i].prefix + u
    counts.chunks = len(rows)
    keys = list(texts)
    t0 = time.process_time()
    vectors = np.concatenate(
        [embed([texts[k] for k in keys[s : s + 256]]) for s in range(0, len(keys), 256)]  # type: ignore[operator]
    )
    counts.cpu_s += time.process_time() - t0
    return dict(zip(keys, vectors, strict=True))


class LateChunker:
    """Token embeddings of a chunk's one run, pooled per unit span."""

    def __init__(self, backend: object, window: int) -> None:
        self.session = backend._session  # type: ignore[attr-defined]
        self.tok = copy.copy(backend._tokenizer)  # type: ignore[attr-defined]
        self.tok.max_tokens = 1_000_000  # uncut: spans past the window are seen as such
        self.window = window
        self.names = {i.name for i in self.session.get_inputs()}

    def ids(self, text: str) -> list[int]:
        return self.tok.encode(text)[1:-1]

    def run(self, ids: list[int]) -> np.ndarray:
        row = np.array([[self.tok.cls, *ids[: self.window - 2], self.tok.sep]], dtype=np.int64)
        feed = {"input_ids": row, "attention_mask": np.ones_like(row)}
        (tokens,) = self.session.run(
            ["token_embeddings"], {k: v for k, v in feed.items() if k in self.names}
        )
        return tokens[0]

    def chunk(self, row: ChunkRow, counts: Counts) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(the chunk vector of this run, each found unit's pooled vector)."""
        head, body = self.ids(row.prefix), self.ids(row.text)
        whole = self.ids(row.embed_text)
        if head + body != whole:
            counts.concat_differs += 1
        counts.long_chunks += len(whole) + 2 > 256
        tokens = self.run(whole)
        chunk_vec = mean_pool_normalize(tokens[None], np.ones((1, len(tokens)), np.int64))[0]
        out: dict[str, np.ndarray] = {}
        at = 0
        for u in unit_texts(row.text, row.kind):
            span = self.ids(u)
            start = _find(whole, span, len(head) + at)
            if start < 0:
                start = _find(whole, span, len(head))
            if start < 0 or not span:
                counts.not_found += 1
                continue
            at = start + len(span) - len(head)
            lo, hi = 1 + start, 1 + start + len(span)  # +1: [CLS]
            if hi > len(tokens) - 1:
                counts.past_window += 1
                continue
            out[u] = mean_pool_normalize(tokens[None, lo:hi], np.ones((1, hi - lo), np.int64))[0]
        return chunk_vec, out


def late(
    rows: Sequence[ChunkRow], backend: object, window: int, counts: Counts
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(chunk vectors by embed_text hash, unit vectors by unit text) of one run per chunk."""
    lc = LateChunker(backend, window)
    chunks: dict[str, np.ndarray] = {}
    units: dict[str, np.ndarray] = {}
    t0 = time.process_time()
    for row in rows:
        vec, found = lc.chunk(row, counts)
        chunks.setdefault(row.embed_hash, vec)
        for u, v in found.items():
            units.setdefault(u, v)
    counts.cpu_s += time.process_time() - t0
    counts.chunks = len(rows)
    seen: set[str] = set()
    for _, u in units_of(rows):
        counts.units += 1
        counts.duplicate_units += u in seen
        seen.add(u)
    return chunks, units


def _find(seq: list[int], sub: list[int], start: int) -> int:
    if not sub:
        return -1
    first, n = sub[0], len(sub)
    i = start
    while True:
        try:
            i = seq.index(first, i)
        except ValueError:
            return -1
        if seq[i : i + n] == sub:
            return i
        i += 1


def save(path: Path, vectors: dict[str, np.ndarray]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = list(vectors)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, keys=np.array(keys, dtype=object), vectors=np.stack([vectors[k] for k in keys]))
    tmp.replace(path)


def load(path: Path) -> dict[str, np.ndarray]:
    data = np.load(path, allow_pickle=True)
    return dict(zip(data["keys"].tolist(), data["vectors"], strict=True))


def bare_vectors(catalog: Path, model: str, generation: Path | None) -> dict[str, np.ndarray]:
    """{unit text: its shipped bare vector}: float32 from a kept catalog that holds them
    (the judged vaults'), else decoded from the generation's int8 sentence segments (the
    SciFact build's catalog holds none; a decoded row is within int8 rounding of it)."""
    from vaultsearch.store.catalog import Catalog
    from vaultsearch.store.vectors import decode

    rows = chunk_rows(catalog)
    texts = {text_hash(u): u for _, u in units_of(rows)}
    stored = stored_vectors(catalog, model, list(texts))
    if len(stored) == len(texts) or generation is None:
        return {texts[h]: v for h, v in stored.items()}
    cat = Catalog(catalog, readonly=True)
    try:
        chunk_ids = [r[0] for r in cat.db.execute("SELECT id FROM chunks")]
        sids, hashes = cat.sentence_units(chunk_ids)
    finally:
        cat.db.close()
    row_of: dict[int, np.ndarray] = {}
    manifest = json.loads((generation / "sentences.json").read_text())
    for seg in manifest["segments"]:
        ids = np.load(generation / "segments" / f"{seg['name']}.ids.npy")
        vecs = decode(np.load(generation / "segments" / f"{seg['name']}.rows.npy"))
        dead = set(seg["dead"])
        row_of.update((int(i), v) for i, v in zip(ids, vecs, strict=True) if int(i) not in dead)
    out = {}
    for sid, h in zip(sids.tolist(), hashes, strict=True):
        if h in texts and texts[h] not in out and sid in row_of:
            out[texts[h]] = row_of[sid]
    return out
