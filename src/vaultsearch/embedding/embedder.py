"""``Embedder``: the one object the indexer and the searcher hold, whatever runs the model.

Loading is lazy and happens once per model and process (``shared``), so keyword
search, status and the MCP handshake never import a runtime, and several vaults in
one process pay for one load. The backend is chosen from the configuration by
``locate.backend_name``; its fingerprint is known before it loads.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, ClassVar

from vaultsearch._runtime import embedding_threads
from vaultsearch.config import EmbeddingConfig
from vaultsearch.embedding.contract import EmbeddingBackend, Fingerprint
from vaultsearch.embedding.locate import (
    backend_name,
    fingerprint,
    model_dimension,
    model_id,
    runtime_model_folder,
)
from vaultsearch.errors import ModelLoadError, VaultsearchError

if TYPE_CHECKING:
    import numpy as np

_FIX = "set embedding.model to a local model folder, or to 'default' for the bundled model"
_LIVE: weakref.WeakSet[Embedder] = weakref.WeakSet()


@atexit.register
def _finish_loads() -> None:
    """At exit, let a model load in progress end first: a native runtime can abort the
    process when its libraries are torn down under a thread that is still building the
    model (a server stopped by SIGTERM while it warms up)."""
    for embedder in list(_LIVE):
        embedder._close(timeout=60)
    gc.collect()


class Embedder:
    """Thread-safe and lazily loaded; vectors are unit length, float32."""

    _shared: ClassVar[dict[tuple[object, ...], Embedder]] = {}
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def shared(cls, config: EmbeddingConfig) -> Embedder:
        key = (config, embedding_threads(config.threads))
        with cls._shared_lock:
            if key not in cls._shared:
                cls._shared[key] = cls(config)
            return cls._shared[key]

    def __init__(self, config: EmbeddingConfig) -> None:
        self.config = config
        self.model_id = model_id(config.model)
        self.backend_name = backend_name(config)
        self._backend: EmbeddingBackend | None = None
        self._fingerprint: Fingerprint | None = None
        self._lock = threading.Lock()
        self._dim: int | None = model_dimension(config.model, config.backend)
        self._closed = False
        self._busy = 0
        self._idle = threading.Condition(self._lock)
        _LIVE.add(self)

    @property
    def loaded(self) -> bool:
        return self._backend is not None

    @property
    def threads(self) -> int:
        return embedding_threads(self.config.threads)

    @property
    def fingerprint(self) -> Fingerprint:
        """Known without loading a local model (it is read from files); an endpoint is
        asked for one vector first."""
        if self._fingerprint is None:
            # an endpoint's dimension is known from its first answer only
            dim = self.dimension if self.backend_name == "openai" else None
            self._fingerprint = fingerprint(self.config, dim)
        return self._fingerprint

    @property
    def cache_key(self) -> str:
        """What cached embeddings are stored under: vectors of equal keys are interchangeable."""
        return self.fingerprint.key

    @property
    def dimension(self) -> int:
        if self._dim is None:
            self._dim = self._load().dimension
        return self._dim

    def load_in_background(self) -> None:
        """Start loading on a daemon thread, so a cold process opens its index meanwhile;
        a failure is reported by the call that needs the model, which tries again."""
        if self._backend is not None or self._closed:
            return

        def load() -> None:
            with contextlib.suppress(Exception):
                self._load()

        threading.Thread(target=load, name="vaultsearch-model-load", daemon=True).start()

    def _load(self) -> EmbeddingBackend:
        with self._lock:
            if self._closed:
                raise ModelLoadError("The process is exiting; the model is not loaded.")
            if self._backend is None:
                self._backend = self._open()
                self._dim = self._backend.dimension
            return self._backend

    def _open(self) -> EmbeddingBackend:
        try:
            if self.backend_name == "onnx":
                from vaultsearch.embedding.onnx_backend import OnnxBackend

                return OnnxBackend(
                    runtime_model_folder(self.config),
                    self.model_id,
                    self.fingerprint,
                    threads=self.threads,
                )
            if self.backend_name == "openai":
                from vaultsearch.embedding.openai_backend import OpenAIBackend

                return OpenAIBackend(self.config, self.model_id)
            from vaultsearch.embedding.huggingface import HuggingFaceBackend

            return HuggingFaceBackend(self.config, self.model_id, self.fingerprint, self.threads)
        except VaultsearchError:
            raise
        except Exception as exc:
            raise ModelLoadError(
                f"The embedding model '{self.config.model}' could not be loaded by the "
                f"{self.backend_name} backend "
                f"({type(exc).__name__}: {str(exc).splitlines()[0][:200]}).",
                fix=_FIX,
            ) from exc

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        if not texts:
            import numpy as np

            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._in_use() as backend:
            return backend.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        with self._in_use() as backend:
            return backend.embed_query(text)

    @contextmanager
    def _in_use(self) -> Iterator[EmbeddingBackend]:
        backend = self._load()
        with self._lock:
            if self._closed:
                raise ModelLoadError("The process is exiting; the model is closed.")
            self._busy += 1
        try:
            yield backend
        finally:
            with self._lock:
                self._busy -= 1
                self._idle.notify_all()

    def _close(self, timeout: float) -> None:
        """Wait for running model calls, then free the backend; later calls are refused."""
        if not self._lock.acquire(timeout=timeout):
            return
        try:
            self._closed = True
            self._idle.wait_for(lambda: self._busy == 0, timeout=timeout)
            close = getattr(self._backend, "close", None)
            if self._busy == 0 and callable(close):
                close()
        finally:
            self._lock.release()
