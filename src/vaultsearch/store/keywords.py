"""Keywords: a Tantivy BM25 index with one document per chunk.

Queries are built by us from already-sanitised terms and parsed leniently, so no
text a user types can raise a parser error, and terms are OR-ed: the peer that
required every term scored below a plain BM25.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
import tantivy

TEXT_FIELDS = ("title", "aliases", "headings", "tags", "body")


@dataclass(frozen=True, slots=True)
class KeywordDoc:
    chunk_id: int
    path: str
    title: str
    aliases: Sequence[str]
    headings: Sequence[str]
    tags: Sequence[str]
    body: str


def tokenizer_name(stemming: bool) -> str:
    return "vs_en_stem" if stemming else "vs_plain"


def _analyzer(stemming: bool) -> tantivy.TextAnalyzer:
    """Lowercase and ASCII-fold (``naive`` finds ``naïve``), English-stem if asked."""
    b = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
    b = b.filter(tantivy.Filter.remove_long(40)).filter(tantivy.Filter.lowercase())
    b = b.filter(tantivy.Filter.ascii_fold())
    if stemming:
        b = b.filter(tantivy.Filter.stemmer("english"))
    return b.build()


def _schema(stemming: bool) -> tantivy.Schema:
    tokenizer = tokenizer_name(stemming)
    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("chunk_id", stored=True, indexed=True, fast=True)
    sb.add_text_field("path", tokenizer_name="raw")
    for name in TEXT_FIELDS:
        sb.add_text_field(name, tokenizer_name=tokenizer)
    return sb.build()


class KeywordIndex:
    def __init__(self, folder: Path, stemming: bool = True) -> None:
        self.folder = folder
        self.stemming = stemming
        self.schema = _schema(stemming)
        folder.mkdir(parents=True, exist_ok=True)
        self.index = tantivy.Index(self.schema, path=str(folder), reuse=True)
        self.index.register_tokenizer(tokenizer_name(stemming), _analyzer(stemming))
        self._writer: tantivy.IndexWriter | None = None

    @classmethod
    def recreate(cls, folder: Path, stemming: bool = True) -> KeywordIndex:
        shutil.rmtree(folder, ignore_errors=True)
        return cls(folder, stemming)

    # --- writing --------------------------------------------------------------
    def _w(self) -> tantivy.IndexWriter:
        if self._writer is None:
            self._writer = self.index.writer(heap_size=64_000_000, num_threads=1)
        return self._writer

    def delete_paths(self, paths: Iterable[str]) -> None:
        w = self._w()
        for p in paths:
            w.delete_documents_by_term("path", p)

    def add(self, docs: Iterable[KeywordDoc]) -> None:
        w = self._w()
        for d in docs:
            w.add_document(
                tantivy.Document(
                    chunk_id=d.chunk_id,
                    path=d.path,
                    title=d.title,
                    aliases=" \n".join(d.aliases),
                    headings=" \n".join(d.headings),
                    tags=" ".join(t.replace("/", " ") + " " + t for t in d.tags),
                    body=d.body,
                )
            )

    def clear(self) -> None:
        self._w().delete_all_documents()

    def commit(self) -> None:
        if self._writer is not None:
            self._writer.commit()
            self._writer.wait_merging_threads()
            self._writer = None
        self.index.reload()

    def rollback(self) -> None:
        if self._writer is not None:
            self._writer.rollback()
            self._writer = None

    # --- reading --------------------------------------------------------------
    def reload(self) -> None:
        self.index.reload()

    def __len__(self) -> int:
        return int(self.index.searcher().num_docs)

    def search(
        self,
        terms: Sequence[str],
        phrases: Sequence[Sequence[str]] = (),
        excluded: Sequence[str] = (),
        boosts: Mapping[str, float] | None = None,
        k: int = 100,
        allowed: np.ndarray | None = None,
    ) -> list[tuple[int, float]]:
        """BM25 top-k as (chunk id, score). Terms must be pre-split word tokens."""
        parts = [t.lower() for t in terms]
        parts += ['"' + " ".join(p).lower() + '"' for p in phrases if p]
        if not parts or k <= 0 or (allowed is not None and len(allowed) == 0):
            return []
        fields = [f for f in TEXT_FIELDS if not boosts or boosts.get(f, 1.0) > 0]
        query, _errors = self.index.parse_query_lenient(
            " ".join(parts), fields, field_boosts=dict(boosts or {})
        )
        clauses = [(tantivy.Occur.Must, query)]
        if excluded:
            neg, _ = self.index.parse_query_lenient(" ".join(t.lower() for t in excluded), fields)
            clauses.append((tantivy.Occur.MustNot, neg))
        if allowed is not None:
            ids = [int(i) for i in allowed]
            allow_q = tantivy.Query.term_set_query(self.schema, "chunk_id", ids)
            clauses.append((tantivy.Occur.Must, tantivy.Query.const_score_query(allow_q, 0.0)))
        if len(clauses) > 1:
            query = tantivy.Query.boolean_query(clauses)
        searcher = self.index.searcher()
        hits = searcher.search(query, k, count=False).hits
        if not hits:
            return []
        ids = _chunk_ids(searcher, [addr for _, addr in hits])
        return [(cid, float(score)) for (score, _), cid in zip(hits, ids, strict=True)]

    def all_chunk_ids(self) -> list[int]:
        """Every document's chunk id: what ``check`` compares with the catalog."""
        searcher = self.index.searcher()
        if searcher.num_docs == 0:
            return []
        hits = searcher.search(tantivy.Query.all_query(), searcher.num_docs, count=False).hits
        return _chunk_ids(searcher, [addr for _, addr in hits])


def _chunk_ids(searcher: tantivy.Searcher, addresses: list[tantivy.DocAddress]) -> list[int]:
    return [int(cast(int, v)) for v in searcher.fast_field_values("chunk_id", addresses)]
