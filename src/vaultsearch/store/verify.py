"""``vaultsearch check``: do the three indexes agree with the catalog and the files?

It compares identities, not just counts: the chunk ids in FAISS and in Tantivy, the
notes in the graph, and the files on disk against what the catalog recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vaultsearch.indexing.changes import describe_plan, plan_changes
from vaultsearch.indexing.manager import IndexManager
from vaultsearch.store.catalog import Catalog
from vaultsearch.store.graph import load_graph
from vaultsearch.store.keywords import KeywordIndex
from vaultsearch.store.layout import IndexLayout
from vaultsearch.store.manifest import read_manifest, read_state
from vaultsearch.store.vectors import VectorIndex


@dataclass
class CheckReport:
    problems: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "problems": self.problems, "counts": self.counts}


def _diff(name: str, have: set[int], want: set[int]) -> list[str]:
    out = []
    if extra := have - want:
        out.append(f"{name}: {len(extra)} entries for chunks the catalog does not have")
    if missing := want - have:
        out.append(f"{name}: {len(missing)} catalog chunks missing")
    return out


def verify_index(manager: IndexManager) -> CheckReport:
    layout: IndexLayout = manager.layout
    report = CheckReport()
    if not layout.exists():
        report.problems.append("no index: the catalog does not exist")
        return report
    catalog = Catalog(layout.catalog, readonly=True)
    try:
        want = {r[0] for r in catalog.db.execute("SELECT id FROM chunks")}
        notes = {r[0] for r in catalog.db.execute("SELECT path FROM notes")}
        report.counts = {"notes": len(notes), "chunks": len(want)}
        state = read_state(layout.root) or {}
        if state.get("generation") != catalog.generation:
            report.problems.append(
                f"state generation {state.get('generation')} != catalog {catalog.generation}"
            )
        if read_manifest(layout.root) is None:
            report.problems.append("manifest missing")
        try:
            vec_ids = VectorIndex.load(layout.vectors).ids().tolist()
            report.counts["vectors"] = len(vec_ids)
            if len(vec_ids) != len(set(vec_ids)):
                report.problems.append("vectors: duplicate ids")
            report.problems += _diff("vectors", set(vec_ids), want)
        except Exception as exc:
            report.problems.append(f"vectors: unreadable ({exc})")
        try:
            kw_ids = KeywordIndex(layout.keywords, manager.config.keyword.stemming).all_chunk_ids()
            report.counts["keyword_docs"] = len(kw_ids)
            if len(kw_ids) != len(set(kw_ids)):
                report.problems.append("keywords: duplicate documents")
            report.problems += _diff("keywords", set(kw_ids), want)
        except Exception as exc:
            report.problems.append(f"keywords: unreadable ({exc})")
        try:
            graph_nodes = set(load_graph(layout.graph).nodes)
            if graph_nodes != notes:
                report.problems.append(
                    f"graph: {len(graph_nodes - notes)} extra and {len(notes - graph_nodes)} "
                    "missing notes"
                )
        except Exception as exc:
            report.problems.append(f"graph: unreadable ({exc})")
        plan = plan_changes(
            manager.scan(),
            catalog.file_states(),
            catalog.failures(),
            manager.config.vault.max_file_size,
        )
        report.problems += [f"files: {d} since the last index run" for d in describe_plan(plan)]
    finally:
        catalog.close()
    return report
