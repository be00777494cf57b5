"""Retrieval quality on BEIR-format benchmarks, for ``vaultsearch eval``.

The metrics follow the BEIR / pytrec_eval definitions exactly, so a number printed by
``vaultsearch eval`` can be put next to a published BEIR table without footnotes. The
loaders fail loudly on the first malformed line: a silently skipped judgment shifts the
score by a fraction nobody would notice, and the comparison would be quietly wrong.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

StrPath = str | os.PathLike[str]

QRELS_HEADER = ("query-id", "corpus-id", "score")
WINDOWS_RESERVED = frozenset(
    ["CON", "PRN", "AUX", "NUL"] + [f"{port}{n}" for port in ("COM", "LPT") for n in range(1, 10)]
)
MAX_NOTE_STEM = 200
"""Leaves room under the usual 255-byte file name limit for the suffix and a hash."""


def _jsonl_objects(path: StrPath) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(path, encoding="utf-8-sig") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{line_number}: invalid JSON: {error.msg}") from None
            if not isinstance(value, dict):
                raise ValueError(f"{path}:{line_number}: expected a JSON object")
            yield line_number, value


def _field(
    record: Mapping[str, Any], key: str, path: StrPath, line: int, default: str | None = None
) -> str:
    value = record.get(key, default)
    if value is None:
        raise ValueError(f"{path}:{line}: missing field {key!r}")
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"{path}:{line}: field {key!r} must be a string")
    return str(value)


def load_corpus(path: StrPath) -> dict[str, tuple[str, str]]:
    """Read a BEIR ``corpus.jsonl`` into doc id -> (title, text).

    A missing title is common in BEIR corpora and means "no title"; a missing id or
    text means the file is not what the caller thinks it is.
    """
    corpus: dict[str, tuple[str, str]] = {}
    for line, record in _jsonl_objects(path):
        doc_id = _field(record, "_id", path, line)
        if doc_id in corpus:
            raise ValueError(f"{path}:{line}: duplicate document id {doc_id!r}")
        title = _field(record, "title", path, line, default="")
        corpus[doc_id] = (title, _field(record, "text", path, line))
    return corpus


def load_queries(path: StrPath) -> dict[str, str]:
    """Read a BEIR ``queries.jsonl`` into query id -> text."""
    queries: dict[str, str] = {}
    for line, record in _jsonl_objects(path):
        query_id = _field(record, "_id", path, line)
        if query_id in queries:
            raise ValueError(f"{path}:{line}: duplicate query id {query_id!r}")
        queries[query_id] = _field(record, "text", path, line)
    return queries


def load_qrels(path: StrPath) -> dict[str, dict[str, int]]:
    """Read a BEIR qrels TSV into query id -> {doc id: relevance}.

    Only an exact BEIR header is skipped, so a header-less file loses no judgment.
    """
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8-sig") as handle:
        for line_number, line in enumerate(handle, start=1):
            fields = line.rstrip("\r\n").split("\t")
            if line_number == 1 and tuple(f.strip().lower() for f in fields) == QRELS_HEADER:
                continue
            if not line.strip():
                continue
            query_id, doc_id, score = _qrels_fields(fields, path, line_number)
            judged = qrels.setdefault(query_id, {})
            if doc_id in judged:
                raise ValueError(
                    f"{path}:{line_number}: duplicate judgment for query {query_id!r}, "
                    f"document {doc_id!r}"
                )
            judged[doc_id] = score
    return qrels


def _qrels_fields(fields: list[str], path: StrPath, line: int) -> tuple[str, str, int]:
    if len(fields) != 3:
        raise ValueError(
            f"{path}:{line}: expected 3 tab-separated fields "
            f"(query-id, corpus-id, score), got {len(fields)}"
        )
    query_id, doc_id, score = (f.strip() for f in fields)
    if not query_id or not doc_id:
        raise ValueError(f"{path}:{line}: empty query or document id")
    try:
        return query_id, doc_id, int(score)
    except ValueError:
        raise ValueError(f"{path}:{line}: score {score!r} is not an integer") from None


def _unique_top_k(ranked_ids: Sequence[str], k: int) -> list[str]:
    """A run is a ranking of documents, so a repeated id must not earn gain twice."""
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    seen: set[str] = set()
    top: list[str] = []
    for doc_id in ranked_ids:
        if doc_id not in seen:
            seen.add(doc_id)
            top.append(doc_id)
            if len(top) == k:
                break
    return top


def _dcg(gains: Sequence[int]) -> float:
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1))


def ndcg_at_k(ranked_ids: Sequence[str], relevant: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k as trec_eval's ``ndcg_cut``: linear gain, ideal from all judged docs.

    Non-positive judgments give no gain, as in trec_eval; a query without any relevant
    document scores 0 rather than being undefined.
    """
    gains = [max(relevant.get(doc_id, 0), 0) for doc_id in _unique_top_k(ranked_ids, k)]
    ideal = sorted((rel for rel in relevant.values() if rel > 0), reverse=True)[:k]
    ideal_dcg = _dcg(ideal)
    return _dcg(gains) / ideal_dcg if ideal_dcg > 0 else 0.0


def recall_at_k(ranked_ids: Sequence[str], relevant: Mapping[str, int], k: int = 100) -> float:
    """Recall@k as trec_eval's ``recall``: judged-but-irrelevant docs are not targets."""
    targets = {doc_id for doc_id, rel in relevant.items() if rel > 0}
    if not targets:
        return 0.0
    found = sum(1 for doc_id in _unique_top_k(ranked_ids, k) if doc_id in targets)
    return found / len(targets)


def mrr_at_k(ranked_ids: Sequence[str], relevant: Mapping[str, int], k: int = 10) -> float:
    """Reciprocal rank of the first relevant document within the top k, as trec_eval's
    ``recip_rank`` cut at k: any positive grade counts, a miss scores 0.

    nDCG rewards a good whole list; MRR answers the vault user's question of how far
    down the one note they wanted sits.
    """
    for rank, doc_id in enumerate(_unique_top_k(ranked_ids, k), start=1):
        if relevant.get(doc_id, 0) > 0:
            return 1.0 / rank
    return 0.0


def evaluate(
    run: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]]
) -> dict[str, float]:
    """Mean nDCG@10 and Recall@100 over the judged queries.

    A judged query the system did not answer counts as 0, so dropping hard queries
    cannot raise the score.
    """
    judged = [query_id for query_id, rels in qrels.items() if rels]
    if not judged:
        return {"ndcg@10": 0.0, "recall@100": 0.0, "queries": 0}
    ndcg = sum(ndcg_at_k(run.get(q, []), qrels[q], k=10) for q in judged)
    recall = sum(recall_at_k(run.get(q, []), qrels[q], k=100) for q in judged)
    return {
        "ndcg@10": ndcg / len(judged),
        "recall@100": recall / len(judged),
        "queries": len(judged),
    }


def note_filename(doc_id: str) -> str:
    """A file name for a BEIR document that is safe on every OS and in wikilinks.

    Percent-encoding keeps it reversible (``unquote`` of the stem) for all ordinary ids;
    only very long ids are cut and tagged with a hash, which still keeps them distinct.
    """
    if not doc_id:
        raise ValueError("document id must not be empty")
    stem = quote(doc_id, safe="-_")
    if stem.startswith(".") or stem.split(".")[0].upper() in WINDOWS_RESERVED:
        stem = f"%{ord(stem[0]):02X}{stem[1:]}"
    if len(stem) > MAX_NOTE_STEM:
        digest = hashlib.sha1(doc_id.encode("utf-8")).hexdigest()[:12]
        stem = f"{stem[: MAX_NOTE_STEM - 13]}~{digest}"
    return f"{stem}.md"


def _note_text(title: str, text: str) -> str:
    heading = " ".join(title.split())
    return f"# {heading}\n\n{text}\n" if heading else f"{text}\n"


def write_corpus_as_vault(corpus: Mapping[str, tuple[str, str]], folder: StrPath) -> dict[str, str]:
    """Write each document as a note so the real indexing pipeline can be evaluated.

    Returns note path -> doc id, which is the only reliable way back from a search hit
    to a document: ids that differ only by case would overwrite each other on macOS and
    Windows, so the second one gets a hash-tagged name instead.
    """
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    mapping: dict[str, str] = {}
    taken: set[str] = set()
    for doc_id, (title, text) in corpus.items():
        name = note_filename(doc_id)
        if name.casefold() in taken:
            digest = hashlib.sha1(doc_id.encode("utf-8")).hexdigest()[:12]
            name = f"{name[:-3]}~{digest}.md"
            if name.casefold() in taken:
                raise ValueError(f"cannot find a distinct note name for document {doc_id!r}")
        taken.add(name.casefold())
        (root / name).write_text(_note_text(title, text), encoding="utf-8", newline="\n")
        mapping[name] = doc_id
    return mapping
