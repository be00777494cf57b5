"""The project's own judged queries over the shared vaults (bench/judged/*.jsonl).

Loading validates every line, because a silently mis-typed grade or kind would move a
per-kind figure nobody re-derives by hand. ``fold_of`` hashes the query id, so a query
stays in its fold when others are added, and k-fold tuning never sees its test fold.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

JUDGED = Path(__file__).resolve().parent / "judged"
VAULTS = ("vaultofknowledge", "dendron-site")
KINDS = (
    "known_item",
    "paraphrase",
    "question",
    "exact_keyword",
    "multi_hop",
    "deep_section",
    "alias",
    "typo",
    "no_answer",
)
FIELDS = {"id", "vault", "kind", "query", "judgments", "why"}


@dataclass(frozen=True)
class JudgedQuery:
    id: str
    vault: str
    kind: str
    query: str
    judgments: dict[str, int]
    why: str

    @property
    def answered(self) -> bool:
        return any(grade > 0 for grade in self.judgments.values())


def _parse(record: object, where: str) -> JudgedQuery:
    if not isinstance(record, dict) or set(record) != FIELDS:
        raise ValueError(f"{where}: expected exactly the fields {sorted(FIELDS)}")
    for key in ("id", "vault", "kind", "query", "why"):
        if not isinstance(record[key], str) or not record[key].strip():
            raise ValueError(f"{where}: field {key!r} must be a non-empty string")
    if record["vault"] not in VAULTS:
        raise ValueError(f"{where}: unknown vault {record['vault']!r}; one of {VAULTS}")
    if record["kind"] not in KINDS:
        raise ValueError(f"{where}: unknown kind {record['kind']!r}; one of {KINDS}")
    judgments = record["judgments"]
    if not isinstance(judgments, dict) or not all(
        isinstance(path, str) and type(grade) is int and 0 <= grade <= 2
        for path, grade in judgments.items()
    ):
        raise ValueError(f"{where}: judgments must map note paths to grades 0, 1 or 2")
    query = JudgedQuery(judgments=dict(judgments), **{k: record[k] for k in FIELDS - {"judgments"}})
    if (query.kind == "no_answer") == query.answered:
        raise ValueError(
            f"{where}: a no_answer query must have no positive grade and any other kind "
            "at least one"
        )
    return query


def load_judged(vault: str, folder: Path = JUDGED) -> list[JudgedQuery]:
    """The judged queries of one vault, in file order; fails on the first bad line."""
    path = folder / f"{vault}.jsonl"
    queries: list[JudgedQuery] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{where}: invalid JSON: {error.msg}") from None
        query = _parse(record, where)
        if query.id in seen:
            raise ValueError(f"{where}: duplicate query id {query.id!r}")
        if query.vault != vault:
            raise ValueError(f"{where}: query of vault {query.vault!r} in the {vault} file")
        seen.add(query.id)
        queries.append(query)
    return queries


def fold_of(query_id: str, k: int) -> int:
    """A stable fold in range(k) for a query id, independent of file order."""
    if k < 2:
        raise ValueError(f"k-fold needs k >= 2, got {k}")
    return int(hashlib.sha256(query_id.encode("utf-8")).hexdigest(), 16) % k
