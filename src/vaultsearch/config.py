"""Configuration: typed sections, TOML loading and strict validation.

A wrong key or value is rejected at start, naming the key, the value and what is
allowed, because a silently ignored typo in a search tool shows up much later as
"the results got worse" and nobody connects the two.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, get_type_hints

from vaultsearch.config_layers import (
    DOTENV_NAME,
    Layer,
    env_layer,
    flag_layer,
    merge,
    read_dotenv,
)
from vaultsearch.errors import ConfigError
from vaultsearch.parsermap import DEFAULT_PARSER_MAP, compile_parser_map
from vaultsearch.sourceconfig import SourceConfig, check_unique, read_managed, sources_from_list

DEFAULT_MODEL = "default"
"""Stands for all-MiniLM-L6-v2 as shipped inside vaultsearch (INT8 ONNX for ONNX Runtime)."""
EMBEDDING_BACKENDS = ("auto", "onnx", "huggingface", "openai")

CONFIG_ENV = "VAULTSEARCH_CONFIG"


@dataclass(frozen=True)
class VaultConfig:
    index_dir: str = ""
    """Empty means ``<vault>/.vaultsearch``; relative paths are taken from the vault."""
    exclude: list[str] = field(default_factory=list)
    max_file_size: int = 2_000_000
    clone_dir: str = ""
    """Where git sources are cloned; empty means ``<index_dir>/clones``."""


@dataclass(frozen=True)
class IndexConfig:
    parse_timeout: float = 120.0
    """Seconds one file may take to parse before it is skipped (the parser is stopped)."""
    parse_memory_mb: int = 1024
    """Memory one file's parse may add before it is skipped."""
    vector_index: str = "auto"
    """auto or hnsw = an approximate index beside each vector segment of more than
    ``ann_threshold`` rows (store/ann.py); flat = exact scans only."""
    ann_threshold: int = 50_000
    first_batch: int = 32
    """Files a first build indexes before it publishes its first generation; a run of
    more files embeds its chunks first and its sentences after (two stages)."""
    publish_seconds: float = 20.0
    """Least seconds between two generations a first build publishes after its first."""
    fill_notes: int = 64
    """Notes whose sentences the second stage embeds between two looks at the clock and
    the cancel flag."""


@dataclass(frozen=True)
class ChunkingConfig:
    size: int = 1000
    overlap: int = 100
    max_chunks_per_note: int = 2000


@dataclass(frozen=True)
class EmbeddingConfig:
    model: str = DEFAULT_MODEL
    backend: str = "auto"
    """auto = onnx for the bundled model (and converted folders), else huggingface."""
    sentences: bool = True
    """Embed each chunk's sentences too (the sentence branch of search)."""
    batch_size: int = 16
    device: str = "cpu"
    threads: int = 0
    """0 = every core for `vaultsearch index`, one fewer where queries are served (mcp, watch)."""
    precision: str = "auto"
    """auto = bfloat16 on CPUs with native bf16 (AVX512-BF16/AMX), else float32; the
    huggingface backend only (the onnx backend runs its INT8 model as it is)."""
    cache_dir: str = ""
    """The per-user embedding cache; empty = $XDG_CACHE_HOME/vaultsearch, "off" = none."""
    cache_size_mb: int = 2048
    url: str = ""
    """backend openai: the API base of an OpenAI-compatible server (``.../v1``)."""
    api_key_env: str = ""
    """backend openai: the name of the environment variable holding the API key."""
    timeout: float = 60.0
    """backend openai: seconds to wait for one answer."""
    retries: int = 4
    """backend openai: more tries after a timeout, 429 or 5xx, with exponential backoff."""


@dataclass(frozen=True)
class KeywordConfig:
    stemming: bool = True
    # body_boost weighs the main field, title and chunk text under one BM25. Each other
    # field adds a BM25 score of its own, so the title (already in the main field) only
    # gets a small extra; aliases and descriptions are deliberate names for the note.
    title_boost: float = 0.2
    aliases_boost: float = 1.0
    headings_boost: float = 0.2
    tags_boost: float = 0.5
    meta_boost: float = 0.5
    body_boost: float = 1.0
    frontmatter_fields: list[str] = field(
        default_factory=lambda: ["description", "summary", "desc"]
    )
    """Frontmatter keys whose text is searchable in the ``meta`` field."""


@dataclass(frozen=True)
class SearchConfig:
    fusion: str = "convex"
    """convex: weighted sum of normalised scores; rrf: weighted reciprocal rank fusion."""
    normalisation: str = "tm2c2"
    chunk_share: float = 0.0
    rrf_k: int = 60
    keyword_weight: float = 0.4
    semantic_weight: float = 0.39
    sentence_weight: float = 0.21
    """The best sentence's cosine beside the best chunk's (hybrid and semantic modes)."""
    candidates: int = 100
    max_chunks_per_note: int = 3
    graph_boost: bool = True
    graph_share: float = 0.1
    graph_top: int = 10
    hop_weight: float = 3.0
    """A top note's linked note takes this x the note's score x the link's closeness to
    the query; 0 = off. 3, with ``hop_anchor``, ``hop_below`` and ``hop_local``: what the
    folds chose in ``bench/hop_cv.py --anchor --below --local`` (5-fold CV on the judged
    vault queries)."""
    hop_top: int = 3
    hop_margin: float = 0.0
    hop_anchor: bool = True
    """Judge a top note's link by the sentence it stands in (its share of the query's
    idf, the top note's title words left out) instead of the linked note's own cosine
    (best chunk cosine over the best retrieved one)."""
    hop_below: bool = True
    """A hop gift never lifts a note past the note that gives it."""
    hop_local: bool = True
    """With ``hop_anchor``, only a link inside a chunk that scored the top note counts: a
    link elsewhere in the note is another topic of it, not the passage the query found."""
    hop_residual: bool = False
    """With ``hop_anchor``, a link's sentence counts only the query words the top note's
    name and scoring chunks do not already hold outside that sentence."""
    code_ref_weight: float = 0.2
    """A note of another kind among the ``code_ref_top`` best gives this x its fused score
    to the code file whose definition its matched passage names in backticks (a name
    one ranked file defines); 0 = off. 0.2 and 5: what 4 of 5 folds chose in
    ``bench/code_ref_cv.py`` (5-fold CV on the 40 code queries of ``bench/mixed_code.py``)."""
    code_ref_top: int = 5
    recency: bool = True
    recency_tiers: list[list[float]] = field(default_factory=lambda: [[7, 1.2], [30, 1.1]])
    reranker: str = ""
    """A local cross-encoder (the huggingface extra); setting it turns reranking on."""
    rerank: bool = False
    """Rerank the top notes: by ``rerank_url`` when set, else by ``reranker``."""
    rerank_url: str = ""
    """An OpenAI-compatible API base serving ``POST /rerank`` (Jina/Cohere/TEI shape)."""
    rerank_model: str = ""
    rerank_api_key_env: str = ""
    rerank_top: int = 30
    rerank_weight: float = 1.0
    """1 = the reranker's order alone among the top notes; 0 = the fused order."""
    expand: bool = False
    """LLM query expansion through ``expand_url``: rewrites and a hypothetical answer."""
    expand_url: str = ""
    """An OpenAI-compatible API base serving ``POST /chat/completions``."""
    expand_model: str = ""
    expand_api_key_env: str = ""
    expand_rewrites: int = 3
    expand_weight: float = 0.5
    """Each expanded query's branches weigh this share of the original's."""
    model_timeout: float = 30.0
    """Seconds the rerank and expansion endpoints get per answer (one retry)."""

    @property
    def reranking(self) -> bool:
        return self.rerank or bool(self.reranker)


@dataclass(frozen=True)
class WatchConfig:
    enabled: bool = True
    debounce_ms: int = 500


@dataclass(frozen=True)
class SessionsConfig:
    max_sessions: int = 32
    """Search sessions kept for get_search_results; the least recently used go first."""


@dataclass(frozen=True)
class ReportsConfig:
    folder: str = "rag-reports"
    """Vault-relative folder for create_rag_report; never indexed."""
    template: str = "basic"
    """The template used when none is named (template://current/schema)."""
    render_timeout: float = 10.0
    """Seconds a report's template may run; it is rendered in a process that is killed."""
    max_output_bytes: int = 1_000_000


@dataclass(frozen=True)
class WritesConfig:
    enabled: bool = False
    """MCP write tools (notes, documents, reports); ``mcp --allow-writes`` also enables them."""
    documents_folder: str = "documents"
    """Vault-relative folder where upsert_documents stores one Markdown file per id."""


@dataclass(frozen=True)
class AnswerConfig:
    endpoint: str = ""
    """An OpenAI-compatible base URL (``.../v1``) that writes answers; empty = extractive."""
    model: str = ""
    timeout: float = 30.0


@dataclass(frozen=True)
class ServerConfig:
    max_body_bytes: int = 4 * 1024 * 1024
    """The largest HTTP request body (REST and ``/mcp``); larger ones get 413 unread."""


@dataclass(frozen=True)
class StoreConfig:
    backend: str = "local"
    """``milvus``: every index run is also pushed to ``uri`` (the local index stays the
    staging area and the source of truth; ``vaultsearch[milvus]``)."""
    uri: str = ""
    """A Milvus Lite file (``team.db``) or a server, ``http(s)://host:19530``."""
    token: str = ""
    """``user:password`` or an API key; ``VAULTSEARCH_MILVUS_TOKEN`` keeps it out of files."""
    collection: str = "vaultsearch"
    """The prefix of the collections, and the alias readers resolve."""


@dataclass(frozen=True)
class Config:
    vault: VaultConfig = field(default_factory=VaultConfig)
    parsers: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_PARSER_MAP))
    index: IndexConfig = field(default_factory=IndexConfig)
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    keyword: KeywordConfig = field(default_factory=KeywordConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    watch: WatchConfig = field(default_factory=WatchConfig)
    sessions: SessionsConfig = field(default_factory=SessionsConfig)
    reports: ReportsConfig = field(default_factory=ReportsConfig)
    writes: WritesConfig = field(default_factory=WritesConfig)
    sources: tuple[SourceConfig, ...] = ()
    """Named sources indexed beside the vault (``[[sources]]`` and sources.toml)."""
    answer: AnswerConfig = field(default_factory=AnswerConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    source: str = "built-in defaults"
    """Where this configuration came from, for status output and error messages."""
    flags: tuple[str, ...] = ()
    """The ``--set section.key=value`` flags it was loaded with, kept for a reload."""

    def excluded(self) -> list[str]:
        """Ignore patterns for the scanner: the user's, plus the reports folder, whose
        generated text would otherwise come back as search hits for its own sources."""
        return [*self.vault.exclude, "/" + self.reports.folder.strip("/") + "/"]

    def with_search(self, **changes: Any) -> Config:
        return replace(self, search=replace(self.search, **changes))


_SECTIONS = (
    "vault", "index", "chunking", "embedding", "keyword", "search", "watch", "sessions", "reports",
    "writes", "answer", "server", "store",
)  # fmt: skip
_TYPE_NAMES = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def _check_scalar(key: str, value: Any, expected: type) -> Any:
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if expected is int and isinstance(value, bool):
        raise ConfigError(f"Config key '{key}' = {value!r} is invalid: expected an integer.")
    if not isinstance(value, expected):
        raise ConfigError(
            f"Config key '{key}' = {value!r} is invalid: expected {_TYPE_NAMES[expected]}."
        )
    return value


def _check_value(key: str, value: Any, annotation: Any) -> Any:
    origin = getattr(annotation, "__origin__", None)
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"Config key '{key}' = {value!r} is invalid: expected a list.")
        (inner,) = annotation.__args__
        return [_check_value(f"{key}[{i}]", v, inner) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"Config key '{key}' = {value!r} is invalid: expected a table.")
        _, inner = annotation.__args__
        return {str(k): _check_value(f"{key}.{k}", v, inner) for k, v in value.items()}
    return _check_scalar(key, value, annotation)


def _build_section(name: str, cls: type, raw: Any) -> Any:
    if not isinstance(raw, dict):
        raise ConfigError(f"Config section '[{name}]' must be a table, got {raw!r}.")
    hints = get_type_hints(cls)
    allowed = [f.name for f in fields(cls)]
    values = {}
    for key, value in raw.items():
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.75)
            hint = f" Did you mean '{name}.{close[0]}'?" if close else ""
            raise ConfigError(
                f"Unknown config key '{name}.{key}' (value {value!r}).{hint} "
                f"Allowed keys in [{name}]: {', '.join(allowed)}."
            )
        values[key] = _check_value(f"{name}.{key}", value, hints[key])
    return cls(**values)


def _require(ok: bool, key: str, value: Any, allowed: str) -> None:
    if not ok:
        raise ConfigError(f"Config key '{key}' = {value!r} is invalid: {allowed}.")


def _validate(cfg: Config) -> None:
    c, e, s, k = cfg.chunking, cfg.embedding, cfg.search, cfg.keyword
    _require(c.size >= 50, "chunking.size", c.size, "must be at least 50 characters")
    _require(
        0 <= c.overlap < c.size,
        "chunking.overlap",
        c.overlap,
        "must be at least 0 and less than chunking.size",
    )
    _require(
        c.max_chunks_per_note >= 1,
        "chunking.max_chunks_per_note",
        c.max_chunks_per_note,
        "must be at least 1",
    )
    _require(e.batch_size >= 1, "embedding.batch_size", e.batch_size, "must be at least 1")
    _require(e.cache_size_mb >= 0, "embedding.cache_size_mb", e.cache_size_mb, "must be 0 or more")
    _require(bool(e.model.strip()), "embedding.model", e.model, "must not be empty")
    _require(
        e.device in ("cpu", "cuda", "mps"), "embedding.device", e.device, "allowed: cpu, cuda, mps"
    )
    _require(
        e.backend in EMBEDDING_BACKENDS,
        "embedding.backend",
        e.backend,
        "allowed: "
        + ", ".join(EMBEDDING_BACKENDS)
        + ("; OpenVINO's place is taken by onnx" if e.backend == "openvino" else ""),
    )
    _require(
        e.device == "cpu" or e.backend == "huggingface",
        "embedding.device",
        e.device,
        'cuda and mps need embedding.backend = "huggingface"',
    )
    _require(e.threads >= 0, "embedding.threads", e.threads, "must be 0 (auto) or more")
    _require(
        e.precision in ("auto", "float32", "bfloat16"),
        "embedding.precision",
        e.precision,
        "allowed: auto, float32, bfloat16",
    )
    _require(s.rrf_k >= 1, "search.rrf_k", s.rrf_k, "must be at least 1")
    _require(s.fusion in ("convex", "rrf"), "search.fusion", s.fusion, "allowed: convex, rrf")
    _require(
        s.normalisation in ("tm2c2", "minmax"),
        "search.normalisation",
        s.normalisation,
        "allowed: tm2c2, minmax",
    )
    for name in (
        "keyword_weight",
        "semantic_weight",
        "sentence_weight",
        "graph_share",
        "chunk_share",
        "hop_weight",
        "hop_margin",
        "code_ref_weight",
    ):
        v = getattr(s, name)
        _require(v >= 0, f"search.{name}", v, "must be zero or positive")
    for name in (
        "candidates",
        "max_chunks_per_note",
        "graph_top",
        "hop_top",
        "code_ref_top",
        "rerank_top",
    ):
        v = getattr(s, name)
        _require(v >= 1, f"search.{name}", v, "must be at least 1")
    for tier in s.recency_tiers:
        _require(
            len(tier) == 2 and tier[0] > 0 and tier[1] > 0,
            "search.recency_tiers",
            s.recency_tiers,
            "expected a list of [days, multiplier] pairs with positive numbers",
        )
    for name in (
        "title_boost", "aliases_boost", "headings_boost", "tags_boost", "meta_boost", "body_boost"
    ):  # fmt: skip
        v = getattr(k, name)
        _require(v >= 0, f"keyword.{name}", v, "must be zero or positive")
    _require(
        cfg.vault.max_file_size > 0,
        "vault.max_file_size",
        cfg.vault.max_file_size,
        "must be a positive number of bytes",
    )
    _require(
        cfg.index.parse_timeout > 0,
        "index.parse_timeout",
        cfg.index.parse_timeout,
        "must be a positive number of seconds",
    )
    _require(
        cfg.index.parse_memory_mb >= 16,
        "index.parse_memory_mb",
        cfg.index.parse_memory_mb,
        "must be at least 16 (megabytes)",
    )
    _require(
        cfg.index.vector_index in ("auto", "flat", "hnsw"),
        "index.vector_index",
        cfg.index.vector_index,
        'must be "auto", "flat" or "hnsw"',
    )
    _require(
        cfg.index.ann_threshold >= 0,
        "index.ann_threshold",
        cfg.index.ann_threshold,
        "must be zero or a positive number of vectors",
    )
    _require(
        cfg.index.first_batch >= 1,
        "index.first_batch",
        cfg.index.first_batch,
        "must be a positive number of files",
    )
    _require(
        cfg.index.publish_seconds > 0,
        "index.publish_seconds",
        cfg.index.publish_seconds,
        "must be a positive number of seconds",
    )
    _require(
        cfg.index.fill_notes >= 1,
        "index.fill_notes",
        cfg.index.fill_notes,
        "must be a positive number of notes",
    )
    _require(cfg.watch.debounce_ms >= 0, "watch.debounce_ms", cfg.watch.debounce_ms, "must be >= 0")
    _validate_toolbox(cfg)
    _validate_model_routes(e, s)
    a = cfg.answer
    _require(
        a.endpoint == "" or a.endpoint.startswith(("http://", "https://")),
        "answer.endpoint",
        a.endpoint,
        'expected "" (off) or an http:// or https:// URL such as "http://127.0.0.1:8080/v1"',
    )
    _require(a.timeout > 0, "answer.timeout", a.timeout, "must be a positive number of seconds")
    _require(
        cfg.server.max_body_bytes >= 1024,
        "server.max_body_bytes",
        cfg.server.max_body_bytes,
        "must be at least 1024 bytes",
    )
    try:
        compile_parser_map(cfg.parsers)
    except ValueError as exc:
        raise ConfigError(f"Config table '[parsers]' is invalid: {exc}") from None
    _validate_sources(cfg.sources)


_URL_EXAMPLE = 'an http:// or https:// API base such as "http://127.0.0.1:11434/v1"'
MODELS_DOC = "docs/Models.md"


def _is_url(value: str) -> bool:
    return value.startswith(("http://", "https://"))


def _validate_model_routes(e: EmbeddingConfig, s: SearchConfig) -> None:
    """The openai backend, the rerank endpoint and query expansion: each needs its URL,
    and reranking needs a route, refused here rather than at the first query."""
    if e.backend == "openai":
        _require(_is_url(e.url), "embedding.url", e.url, f'backend "openai" needs {_URL_EXAMPLE}')
        _require(
            e.model != DEFAULT_MODEL,
            "embedding.model",
            e.model,
            'backend "openai" needs the model name the server knows, e.g. "nomic-embed-text"',
        )
    else:
        _require(e.url == "", "embedding.url", e.url, 'only backend "openai" uses a URL')
    _require(e.timeout > 0, "embedding.timeout", e.timeout, "must be a positive number of seconds")
    _require(e.retries >= 0, "embedding.retries", e.retries, "must be 0 or more")
    for key in ("rerank_url", "expand_url"):
        v = getattr(s, key)
        _require(v == "" or _is_url(v), f"search.{key}", v, f'expected "" (off) or {_URL_EXAMPLE}')
    _require(
        0 <= s.rerank_weight <= 1, "search.rerank_weight", s.rerank_weight, "must be from 0 to 1"
    )
    _require(s.expand_weight >= 0, "search.expand_weight", s.expand_weight, "must be 0 or more")
    _require(
        0 <= s.expand_rewrites <= 10,
        "search.expand_rewrites",
        s.expand_rewrites,
        "must be from 0 to 10",
    )
    _require(
        s.model_timeout > 0,
        "search.model_timeout",
        s.model_timeout,
        "must be a positive number of seconds",
    )
    if s.rerank_url:
        _require(
            bool(s.rerank_model.strip()),
            "search.rerank_model",
            s.rerank_model,
            "must name the reranking model the server at search.rerank_url serves",
        )
    if s.expand:
        _require(
            bool(s.expand_url),
            "search.expand",
            s.expand,
            f"needs search.expand_url, {_URL_EXAMPLE} serving /chat/completions (see {MODELS_DOC})",
        )
    if not s.reranking or s.rerank_url:
        return
    if not s.reranker:
        raise ConfigError(
            "Config key 'search.rerank' = true needs a reranker, and none is configured.",
            fix='set search.rerank_url = "http://127.0.0.1:8080/v1" and search.rerank_model '
            "to a server with /v1/rerank (llama.cpp, vLLM, text-embeddings-inference), or "
            "search.reranker to a local cross-encoder with the huggingface extra "
            f"(pip install 'vaultsearch[huggingface]'); see {MODELS_DOC}",
        )
    import importlib.util

    if importlib.util.find_spec("sentence_transformers") is None:
        raise ConfigError(
            f"Config key 'search.reranker' = {s.reranker!r} needs the huggingface extra, "
            "which is not installed.",
            fix="pip install 'vaultsearch[huggingface]' (a CPU-only torch first, see "
            f"docs/Getting Started.md), or set search.rerank_url to a rerank server; see "
            f"{MODELS_DOC}",
        )


def _validate_sources(sources: tuple[SourceConfig, ...]) -> None:
    check_unique(sources)
    for s in sources:
        try:
            compile_parser_map(s.parsers)
        except ValueError as exc:
            raise ConfigError(f"The parsers of source '{s.name}' ({s.origin}): {exc}.") from None


def _validate_toolbox(cfg: Config) -> None:
    n = cfg.sessions.max_sessions
    _require(n >= 1, "sessions.max_sessions", n, "must be at least 1")
    for key, folder in (
        ("reports.folder", cfg.reports.folder),
        ("writes.documents_folder", cfg.writes.documents_folder),
    ):
        parts = folder.replace("\\", "/").strip("/").split("/")
        _require(
            bool(folder.strip()) and not folder.startswith("/") and ".." not in parts,
            key,
            folder,
            "must be a folder inside the vault, e.g. 'rag-reports'",
        )
    st = cfg.store
    _require(
        st.backend in ("local", "milvus"), "store.backend", st.backend, "allowed: local, milvus"
    )
    _require(
        st.backend == "local" or bool(st.uri.strip()),
        "store.uri",
        st.uri,
        'store.backend = "milvus" needs a uri (a .db file or http://host:19530)',
    )
    r = cfg.reports
    _require(r.render_timeout > 0, "reports.render_timeout", r.render_timeout,
             "must be a positive number of seconds")  # fmt: skip
    _require(r.max_output_bytes > 0, "reports.max_output_bytes", r.max_output_bytes,
             "must be a positive number of bytes")  # fmt: skip
    _require(bool(cfg.reports.template.strip()), "reports.template", cfg.reports.template,
             "must name a template, e.g. 'basic'")  # fmt: skip


def template_text() -> str:
    """The commented example config: every key with its default (``vaultsearch init``)."""
    return (Path(__file__).parent / "config.toml.example").read_text(encoding="utf-8")


def config_from_dict(raw: dict[str, Any], source: str = "<dict>") -> Config:
    """Build a validated Config from parsed TOML; the single entry for every source."""
    kwargs: dict[str, Any] = {"source": source}
    section_types = {f.name: get_type_hints(Config)[f.name] for f in fields(Config)}
    for name, value in raw.items():
        if name == "parsers":
            kwargs["parsers"] = _check_value("parsers", value, dict[str, str])
        elif name == "sources":
            kwargs["sources"] = sources_from_list(value, source)
        elif name in _SECTIONS:
            kwargs[name] = _build_section(name, section_types[name], value)
        else:
            allowed = ", ".join(("parsers", *_SECTIONS, "sources"))
            raise ConfigError(f"Unknown config section '{name}'; allowed sections: {allowed}.")
    cfg = Config(**kwargs)
    _validate(cfg)
    return cfg


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"Config file {path} does not exist.", fix="vaultsearch init VAULT"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Config file {path} is not valid TOML: {exc}.") from None


def load_config_file(path: Path) -> Config:
    return config_from_dict(_read_toml(path), source=str(path))


def find_config_path(explicit: str | os.PathLike[str] | None, vault: Path | None) -> Path | None:
    """The lookup order: --config, then $VAULTSEARCH_CONFIG, then the vault's own file."""
    if explicit:
        return Path(explicit)
    env = os.environ.get(CONFIG_ENV)
    if env:
        return Path(env)
    if vault is not None:
        candidate = vault / ".vaultsearch" / "config.toml"
        if candidate.is_file():
            return candidate
    return None


def section_types() -> dict[str, type]:
    hints = get_type_hints(Config)
    return {name: hints[name] for name in _SECTIONS}


def dotenv_path(config_file: Path | None, vault: Path | None) -> Path | None:
    """The ``.env`` beside the config file in use, else in the vault's index folder."""
    if config_file is not None:
        return config_file.parent / DOTENV_NAME
    return vault / ".vaultsearch" / DOTENV_NAME if vault is not None else None


def layers(
    config_file: Path | None, vault: Path | None, flags: tuple[str, ...] = ()
) -> list[Layer]:
    """What is written over the file, lowest first: ``.env``, environment, flags."""
    sections = section_types()
    out = []
    dotenv = dotenv_path(config_file, vault)
    if dotenv is not None and dotenv.is_file():
        out.append(env_layer(read_dotenv(dotenv), sections, str(dotenv)))
    out.append(env_layer(os.environ, sections, "environment"))
    if flags:
        out.append(flag_layer(flags, sections))
    return out


def explain_config(
    explicit: str | os.PathLike[str] | None = None,
    vault: Path | None = None,
    flags: tuple[str, ...] = (),
) -> tuple[Config, dict[str, str]]:
    """The effective config, and for every key set anywhere the place that set it last."""
    path = find_config_path(explicit, vault)
    raw = _read_toml(path) if path else {}
    merged, origins = merge(raw, layers(path, vault, flags))
    file_keys = {
        f"{section}.{key}": str(path)
        for section, values in raw.items()
        if isinstance(values, dict) and section in _SECTIONS
        for key in values
    }
    cfg = config_from_dict(merged, source=str(path) if path else "built-in defaults")
    cfg = replace(cfg, flags=tuple(flags))
    managed = read_managed(vault) if vault is not None else ()
    if managed:
        cfg = with_sources(cfg, cfg.sources + managed)
    return cfg, {**file_keys, **origins}


def load_config(
    explicit: str | os.PathLike[str] | Config | None = None,
    vault: Path | None = None,
    flags: tuple[str, ...] = (),
) -> Config:
    if isinstance(explicit, Config):
        return explicit
    return explain_config(explicit, vault, flags)[0]


def with_sources(cfg: Config, sources: tuple[SourceConfig, ...]) -> Config:
    """``cfg`` with another list of sources, validated as a loaded config is."""
    _validate_sources(sources)
    return replace(cfg, sources=sources)
