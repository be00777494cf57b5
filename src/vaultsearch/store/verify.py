"""``vaultsearch check``: is every file of the live generation what it should be?

It never writes and takes no lock, so it works on a read-only mount and for another
user. It compares identities, not counts: the catalog's own page check, the chunk
ids and vectors in FAISS against the catalog's, every Tantivy segment's checksums
and a search over it, the graph against one built from the catalog, and the
manifest and state files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vaultsearch.config import Config
from vaultsearch.embedding import Fingerprint, fingerprint, model_dimension, model_id
from vaultsearch.errors import VaultsearchError
from vaultsearch.store.catalog import Catalog
from vaultsearch.store.derived import DERIVED, DerivedSettings
from vaultsearch.store.generations import hold_published
from vaultsearch.store.keywords import tokenizer_name
from vaultsearch.store.layout import Generation, IndexLayout
from vaultsearch.store.manifest import manifest_problem, read_json, state_checksum
from vaultsearch.store.writer import MAX_CHANGES, catalog_problems

_COUNTED = {"vectors": "vectors", "keywords": "keyword_docs"}


@dataclass
class CheckReport:
    problems: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    generation: str | None = None

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "problems": self.problems,
            "counts": self.counts,
            "generation": self.generation,
        }


def settings_of(generation: Generation, config: Config) -> DerivedSettings:
    """What the generation was built with (its manifest), else what the config says."""
    manifest = read_json(generation.manifest) or {}
    embedding = manifest.get("embedding") or {}
    keyword = manifest.get("keyword") or {}
    tokenizer = keyword.get("tokenizer") or tokenizer_name(config.keyword.stemming)
    return DerivedSettings(
        _embedding_key(embedding, config),
        int(
            embedding.get("dimension")
            or model_dimension(config.embedding.model, config.embedding.backend)
            or 384
        ),
        tokenizer == tokenizer_name(True),
        tuple(keyword.get("frontmatter_fields") or config.keyword.frontmatter_fields),
        bool((manifest.get("sentences") or {}).get("embedded", config.embedding.sentences)),
        keyword_boosts(config),
        config.index.vector_index,
        config.index.ann_threshold,
    )


def keyword_boosts(config: Config) -> tuple[tuple[str, float], ...]:
    """The keyword fields' weights a search uses: settings of the search, not the index."""
    k = config.keyword
    return (
        ("title", k.title_boost),
        ("aliases", k.aliases_boost),
        ("headings", k.headings_boost),
        ("tags", k.tags_boost),
        ("meta", k.meta_boost),
        ("text", k.body_boost),
    )


def _embedding_key(embedding: dict[str, Any], config: Config) -> str:
    recorded = embedding.get("fingerprint")
    if isinstance(recorded, dict) and embedding.get("model"):
        try:
            return Fingerprint(str(embedding["model"]), **recorded).key
        except TypeError:
            pass
    try:
        return fingerprint(config.embedding).key
    except VaultsearchError:
        return model_id(config.embedding.model)


def _changes_problem(state: dict[str, Any]) -> str | None:
    """The notes a run lists as changed (``GenerationWriter._changes``), which a reader
    following the writer reloads: a list of paths since an earlier commit, or none."""
    changes = state.get("changes")
    if changes is None:
        return None
    since = changes.get("since") if isinstance(changes, dict) else None
    paths = changes.get("paths") if isinstance(changes, dict) else None
    if (
        not isinstance(since, int)
        or not 0 <= since <= int(state.get("generation") or 0)
        or not isinstance(paths, list)
        or len(paths) > MAX_CHANGES
        or not all(isinstance(p, str) for p in paths)
    ):
        return "state: its list of changed notes is not one a writer makes"
    return None


def verify_store(layout: IndexLayout, config: Config) -> CheckReport:
    report = CheckReport()
    generation = layout.current()
    if generation is None or not generation.root.is_dir():
        on_disk = layout.all_generations()
        report.problems.append(
            f"CURRENT: missing or unreadable, with generation {on_disk[-1].name} on disk"
            if on_disk
            else "no index: no generation has been published"
        )
        return report
    report.problems += catalog_problems(generation)
    if report.problems:
        report.generation = generation.name
        return report  # nothing else can be compared with a catalog that cannot be read
    # the shared catalog in the read transaction showing the held generation's rows: a
    # writer committing meanwhile is then neither reported as damage nor swept away
    held = hold_published(layout)
    if held is None:
        report.problems.append("no index: no generation has been published")
        return report
    hold, catalog = held
    try:
        _compare(report, hold.generation, catalog, config)
    finally:
        catalog.close()
        hold.release()
    return report


def _compare(report: CheckReport, generation: Generation, catalog: Catalog, config: Config) -> None:
    report.generation = generation.name
    manifest = read_json(generation.manifest)
    if manifest is None:
        report.problems.append("manifest: missing or unreadable")
    state = read_json(generation.state)
    settings = settings_of(generation, config)
    report.counts = {"notes": catalog.counted("notes"), "chunks": catalog.counted("chunks")}
    report.problems += catalog.count_problems()
    if state is None:
        report.problems.append("state: missing or unreadable")
    elif state.get("checksum") != state_checksum(state):
        report.problems.append("state: its checksum does not match its content")
    elif state.get("generation") != catalog.generation:
        report.problems.append(
            f"state: commit {state.get('generation')} != catalog {catalog.generation}"
        )
    elif problem := _changes_problem(state) or (
        manifest_problem(generation.manifest, state) if manifest is not None else None
    ):
        report.problems.append(problem)
    for cls in DERIVED:
        part = cls(generation, settings)
        try:
            found = part.check(catalog, state or {})
            report.problems += found
            if not found and part.name in _COUNTED:  # the catalog's ids, each once
                report.counts[_COUNTED[part.name]] = report.counts["chunks"]
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # a Rust panic included: report, never crash
            report.problems.append(f"{part.name}: unreadable ({type(exc).__name__})")
    if state is not None:
        for key in ("notes", "chunks"):
            if state.get(key) != report.counts[key]:
                report.problems.append(f"state: {key} {state.get(key)} != {report.counts[key]}")
