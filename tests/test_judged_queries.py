"""The judged vault queries in bench/judged/: well-formed, and every judged note exists."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from judged_set import KINDS, VAULTS, fold_of, load_judged  # noqa: E402

SHARED_VAULTS = ROOT.parent / "shared" / "data" / "vaults"


@pytest.mark.parametrize("vault", VAULTS)
def test_each_vault_file_loads_and_covers_every_kind(vault: str) -> None:
    queries = load_judged(vault)
    kinds = Counter(q.kind for q in queries)
    assert set(kinds) == set(KINDS)
    assert len(queries) >= 60
    for query in queries:
        assert query.id.strip() == query.id and " " not in query.id
        if query.kind != "no_answer":
            assert 2 in query.judgments.values(), f"{query.id} has no grade-2 note"


def test_enough_queries_in_all_and_enough_without_answer() -> None:
    queries = [q for vault in VAULTS for q in load_judged(vault)]
    assert len(queries) >= 140
    assert sum(1 for q in queries if q.kind == "no_answer") >= 15
    assert len({q.id for q in queries}) == len(queries)
    assert len({(q.vault, q.query.casefold()) for q in queries}) == len(queries)


@pytest.mark.parametrize("vault", VAULTS)
def test_every_judged_note_exists_in_the_shared_vault(vault: str) -> None:
    root = SHARED_VAULTS / vault
    if not root.is_dir():
        pytest.skip(f"{root} is not here (the shared data sits beside the repo)")
    missing = [
        f"{q.id}: {path}"
        for q in load_judged(vault)
        for path in q.judgments
        if not (root / path).is_file() or any(p.startswith(".") for p in Path(path).parts)
    ]
    assert missing == []


def test_folds_are_stable_and_spread() -> None:
    ids = [q.id for vault in VAULTS for q in load_judged(vault)]
    assert [fold_of(i, 5) for i in ids] == [fold_of(i, 5) for i in ids]
    assert fold_of("vok-typo-01", 5) == fold_of("vok-typo-01", 5) in range(5)
    sizes = Counter(fold_of(i, 5) for i in ids)
    assert set(sizes) == set(range(5))
    assert min(sizes.values()) >= len(ids) // 10
    with pytest.raises(ValueError):
        fold_of("vok-typo-01", 1)


def _write(tmp_path: Path, *records: object) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    (tmp_path / "dendron-site.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


GOOD = {
    "id": "ds-x-01",
    "vault": "dendron-site",
    "kind": "question",
    "query": "how do I publish?",
    "judgments": {"dendron.topic.publish.md": 2},
    "why": "the publish page",
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": "fuzzy"}, "unknown kind"),
        ({"vault": "elsewhere"}, "unknown vault"),
        ({"judgments": {"a.md": 3}}, "grades 0, 1 or 2"),
        ({"judgments": {"a.md": True}}, "grades 0, 1 or 2"),
        ({"judgments": {"a.md": 0}}, "at least one"),
        ({"kind": "no_answer"}, "no positive grade"),
        ({"query": " "}, "non-empty string"),
        ({"extra": 1}, "exactly the fields"),
    ],
)
def test_a_malformed_line_is_refused_with_its_line_number(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    folder = _write(tmp_path, GOOD, {**GOOD, "id": "ds-x-02", **change})
    with pytest.raises(ValueError, match=rf"dendron-site\.jsonl:2: .*{message}"):
        load_judged("dendron-site", folder)


def test_duplicate_ids_and_broken_json_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="duplicate query id"):
        load_judged("dendron-site", _write(tmp_path, GOOD, GOOD))
    with pytest.raises(ValueError, match=r":2: invalid JSON"):
        load_judged("dendron-site", _write(tmp_path, GOOD, "{not json"))
    folder = _write(tmp_path, GOOD)
    (folder / "vaultofknowledge.jsonl").write_text(json.dumps(GOOD) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="in the vaultofknowledge file"):
        load_judged("vaultofknowledge", folder)
