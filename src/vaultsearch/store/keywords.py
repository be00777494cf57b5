"""Keywords: a Tantivy BM25 index with one document per chunk.

Queries are built by us from already-sanitised terms and parsed leniently, so no
text a user types can raise a parser error, and terms are OR-ed: the peer that
required every term scored below a plain BM25.

The main field is ``text``: title and chunk together under one BM25, as a plain
English-stemmed BM25 over title + body has it. Separate short fields (title,
aliases, headings, tags, frontmatter descriptions) add small boosts for known-item
queries; per-field boosts tuned on one data set did not carry over to another.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import tantivy

from vaultsearch.store.fuzzy import Expansion, expand_word
from vaultsearch.store.ties import TIE_FETCH, settle, wider_read

TEXT_FIELDS = ("title", "aliases", "headings", "tags", "meta", "text")
NAME_FIELDS = ("title", "aliases", "tags", "meta")
"""Short fields whose match counts once, by the word's rarity: see ``_name_match``."""
EXPANSION_BOOST = 0.7
"""A guessed word (typo, prefix) counts less than one the user typed."""


@dataclass(frozen=True, slots=True)
class KeywordDoc:
    chunk_id: int
    path: str
    title: str
    aliases: Sequence[str]
    headings: Sequence[str]
    tags: Sequence[str]
    body: str
    meta: str = ""
    """Frontmatter descriptions (``description``, ``summary``, ``desc``, configured keys)."""


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


def _schema(stemming: bool, stored_id: bool = False) -> tantivy.Schema:
    """``chunk_id`` is read from its fast field only (``_chunk_ids``); storing it too
    (``stored_id``, an index built before) made the ``.store`` files 8.1 bytes a chunk
    against 4.0 without it (45,630 chunks). Such an index is opened with its own schema
    (``_open``)."""
    tokenizer = tokenizer_name(stemming)
    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("chunk_id", stored=stored_id, indexed=True, fast=True)
    sb.add_text_field("path", tokenizer_name="raw")
    for name in TEXT_FIELDS:
        sb.add_text_field(name, tokenizer_name=tokenizer)
    return sb.build()


class KeywordIndex:
    def __init__(self, folder: Path | None, stemming: bool = True) -> None:
        """``folder`` None: an empty index in memory (a damaged one's stand-in)."""
        self.folder = folder
        self.stemming = stemming
        self.schema = _schema(stemming)
        if folder is None:
            self.index = tantivy.Index(self.schema)
        else:
            folder.mkdir(parents=True, exist_ok=True)
            self.index, self.schema = _open(folder, stemming)
        self.analyzer = _analyzer(stemming)
        self.index.register_tokenizer(tokenizer_name(stemming), self.analyzer)
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
                    meta=d.meta,
                    text=_with_title(d.title, d.body),
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
        expansions: Sequence[Expansion] = (),
        tie_order: Callable[[Sequence[int]], Sequence[Any]] | None = None,
    ) -> list[tuple[int, float]]:
        """BM25 top-k as (chunk id, score), equal scores in ``tie_order`` (sort keys of
        chunk ids; None: by id). Terms must be pre-split word tokens; ``expansions``
        (see ``expand``) add the index terms a mistyped word stands for."""
        parts = [t.lower() for t in terms]
        parts += ['"' + " ".join(p).lower() + '"' for p in phrases if p]
        if not parts or k <= 0 or (allowed is not None and len(allowed) == 0):
            return []
        weights = {f: (boosts or {}).get(f, 1.0) for f in TEXT_FIELDS}
        searcher = self.index.searcher()
        scored = [f for f in TEXT_FIELDS if f not in NAME_FIELDS and weights[f] > 0]
        query, _errors = self.index.parse_query_lenient(
            " ".join(parts), scored or ["text"], field_boosts=weights
        )
        extra = [
            self._name_match(searcher, field, token, weights[field])
            for field in NAME_FIELDS
            if weights[field] > 0
            for token in dict.fromkeys(t for w in terms for t in self.analyzer.analyze(w))
        ]
        extra += [
            tantivy.Query.boost_query(
                tantivy.Query.term_query(self.schema, "text", e.term), EXPANSION_BOOST
            )
            for e in expansions
        ]
        if extra:
            query = tantivy.Query.boolean_query(
                [(tantivy.Occur.Should, q) for q in (query, *extra)]
            )
        clauses = [(tantivy.Occur.Must, query)]
        if excluded:
            neg, _ = self.index.parse_query_lenient(
                " ".join(t.lower() for t in excluded), list(TEXT_FIELDS)
            )
            clauses.append((tantivy.Occur.MustNot, neg))
        if allowed is not None:
            ids = [int(i) for i in allowed]
            allow_q = tantivy.Query.term_set_query(self.schema, "chunk_id", ids)
            clauses.append((tantivy.Occur.Must, tantivy.Query.const_score_query(allow_q, 0.0)))
        if len(clauses) > 1:
            query = tantivy.Query.boolean_query(clauses)
        return _top(searcher, query, k, tie_order)

    def _name_match(
        self, searcher: tantivy.Searcher, field: str, token: str, weight: float
    ) -> tantivy.Query:
        """A word found in a name-like field (title, alias, tag, description) is worth
        ``weight`` times the word's idf, whatever the field's length: BM25's length norm
        all but erases a match in a field that most notes leave empty (an alias scored
        0.7 against 4.8 for a note that merely repeats one of its words)."""
        docs = max(int(searcher.num_docs), 1)
        df = int(searcher.doc_freq("text", token))
        idf = math.log(1 + (docs - df + 0.5) / (df + 0.5))
        match = tantivy.Query.term_query(self.schema, field, token)
        return tantivy.Query.const_score_query(match, weight * idf)

    def expand(self, words: Sequence[str]) -> list[Expansion]:
        """Index terms standing in for query words that match nothing or almost nothing:
        the words a prefix begins (``canv`` -> canvas) or a typo is close to (``mermiad``
        -> mermaid, at an edit distance allowed by the word's length)."""
        searcher = self.index.searcher()
        out: list[Expansion] = []
        for word in dict.fromkeys(w.lower() for w in words):
            tokens = self.analyzer.analyze(word)
            if len(tokens) != 1:
                continue
            out += expand_word(
                word,
                tokens[0],
                lambda t: int(searcher.doc_freq("text", t)),
                lambda prefix: searcher.terms_with_prefix("text", prefix),
            )
        return out

    def chunks_matching(self, words: Sequence[str]) -> list[int]:
        """Every chunk holding one of the words in any field, as keyword search matches
        them (stemmed): what ``-word`` removes in every mode."""
        if not words:
            return []
        query, _ = self.index.parse_query_lenient(
            " ".join(w.lower() for w in words), list(TEXT_FIELDS)
        )
        searcher = self.index.searcher()
        if searcher.num_docs == 0:
            return []
        hits = searcher.search(query, searcher.num_docs, count=False).hits
        return _chunk_ids(searcher, [addr for _, addr in hits])

    def all_chunk_ids(self) -> list[int]:
        """Every document's chunk id: what ``check`` compares with the catalog."""
        searcher = self.index.searcher()
        if searcher.num_docs == 0:
            return []
        hits = searcher.search(tantivy.Query.all_query(), searcher.num_docs, count=False).hits
        return _chunk_ids(searcher, [addr for _, addr in hits])


def _open(folder: Path, stemming: bool) -> tuple[tantivy.Index, tantivy.Schema]:
    """The index in ``folder`` (created when there is none) and its schema: this one, or
    the one from before ``chunk_id`` stopped being stored, whose index is read and
    written as it is until a rebuild (``recreate``) writes the current one. Any other
    schema (another tokenizer) is not opened: Tantivy's error stands."""
    schema = _schema(stemming)
    try:
        return tantivy.Index(schema, path=str(folder), reuse=True), schema
    except ValueError as exc:
        if "schema does not match" not in str(exc):
            raise
    older = _schema(stemming, stored_id=True)
    return tantivy.Index(older, path=str(folder), reuse=True), older


def _with_title(title: str, body: str) -> str:
    """Title and body as one text; a first chunk that opens with the title (its H1) is
    not given the title twice."""
    head = body.lstrip("# \t\n")[: len(title)]
    return body if not title or head.casefold() == title.casefold() else f"{title} \n{body}"


def _top(
    searcher: tantivy.Searcher,
    query: tantivy.Query,
    k: int,
    tie_order: Callable[[Sequence[int]], Sequence[Any]] | None = None,
) -> list[tuple[int, float]]:
    """The top ``k`` (chunk id, score), best first, equal scores by chunk id; the hits
    tied at the k-th score are chosen in ``tie_order``. Tantivy keeps, of the documents
    tied at the k-th score, those of the lowest addresses, and a document's address is
    where it was written: a repair or a rebuild writes the same chunks in another order,
    and the top k changed with it. So twice ``k`` hits are read, and while the last one
    read still ties the k-th score, four times as many (up to ``TIE_FETCH`` past ``k``):
    the tie is then cut by the vault's own order (a search's ``tie_order`` is the note's
    path, then the chunk id; a rebuilt catalog numbers the chunks of every note edited
    since the first build anew). Only the tie at the cut is put in that order: the order
    of equal scores within the top k changes no fusion (ranks are tied ranks). At a
    million chunks (the vault replicated 110 times) every top 100 ends inside a note's
    110 copies, 10 of them past the cut: reading 200 hits and sorting them cost 1.78 ms
    CPU a search against 1.62 for Tantivy's top 100, the paths of the 110 tied 0.45 ms
    more (a second search would have doubled the first)."""
    want: int | None = 2 * k
    while want is not None:
        hits = searcher.search(query, want, count=False).hits
        want = wider_read([score for score, _ in hits], k, want, k + TIE_FETCH)
    if not hits:
        return []
    ids = np.array(_chunk_ids(searcher, [addr for _, addr in hits]), dtype=np.int64)
    scores = np.array([score for score, _ in hits], dtype=np.float64)
    order = np.lexsort((ids, -scores))
    settle(order, ids, scores, k, tie_order)
    return [(int(ids[i]), float(scores[i])) for i in order[:k]]


def _chunk_ids(searcher: tantivy.Searcher, addresses: list[tantivy.DocAddress]) -> list[int]:
    return [int(cast(int, v)) for v in searcher.fast_field_values("chunk_id", addresses)]
