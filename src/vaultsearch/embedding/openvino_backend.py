"""The default backend: a static INT8 OpenVINO model on the CPU.

Measured on a 2-core AVX512-BF16 CPU (docs/benchmarks.md, "Embedding runtime"):
about 1.5x the throughput of torch bf16 at the same retrieval quality, from a
~60 MB runtime instead of torch's ~750 MB. Texts are sorted by length before
batching so that a batch pads to its own longest text, not the call's.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from vaultsearch.embedding.contract import Fingerprint
from vaultsearch.embedding.locate import IR_FILE
from vaultsearch.embedding.lookup import TOKEN_ROWS, cut_token_table
from vaultsearch.embedding.tokens import encode, length_order, load_tokenizer, mean_pool_normalize


def compile_cache_dir() -> Path:
    """OpenVINO's compiled-model cache, per user: a cold CLI search then loads the model
    in ~0.1 CPU-s instead of compiling it in ~0.5 (and holds ~25 MB less); about 12 MB
    per file, the token table being looked up outside the model (``lookup``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vaultsearch" / "openvino"


class OpenVinoBackend:
    def __init__(
        self,
        folder: Path,
        model_id: str,
        fingerprint: Fingerprint,
        threads: int,
        bf16: bool,
        batch_size: int,
    ) -> None:
        import openvino as ov

        self.model_id, self.fingerprint, self.batch_size = model_id, fingerprint, batch_size
        self._tokenizer = load_tokenizer(folder / "tokenizer.json")
        properties = {
            "INFERENCE_NUM_THREADS": threads,
            "INFERENCE_PRECISION_HINT": "bf16" if bf16 else "f32",
            "PERFORMANCE_HINT": "LATENCY",
            "NUM_STREAMS": 1,
        }
        core = ov.Core()
        model = core.read_model(str(folder / IR_FILE))
        tokens = cut_token_table(model)
        self._tokens = tokens and tokens.mapped(compile_cache_dir(), fingerprint.weights)
        try:
            cached = {**properties, "CACHE_DIR": str(compile_cache_dir())}
            self._compiled = core.compile_model(model, "CPU", cached)
        except Exception:  # an unwritable cache folder costs speed, never the search
            self._compiled = core.compile_model(model, "CPU", properties)
        del model  # its weights now live in the compiled model
        self._inputs = {port.get_any_name() for port in self._compiled.inputs}
        self._requests = threading.local()
        self._all_requests: list[Any] = []
        self.dimension = int(self._run(["dimension probe"]).shape[1])

    def _request(self) -> Any:
        """One infer request per thread: a request is not safe to share while it runs."""
        request = getattr(self._requests, "request", None)
        if request is None:
            request = self._requests.request = self._compiled.create_infer_request()
            self._all_requests.append(request)
        return request

    def close(self) -> None:
        """Free the compiled model while the interpreter is whole: left to the exit's
        teardown, OpenVINO's threads can outlive their owners and abort the process."""
        self._all_requests.clear()
        self._requests = threading.local()
        self._compiled = None

    def _run(self, texts: list[str]) -> np.ndarray:
        inputs = encode(self._tokenizer, texts)
        if self._tokens is not None:
            inputs[TOKEN_ROWS] = self._tokens.rows(inputs["input_ids"])
        result = self._request().infer({k: v for k, v in inputs.items() if k in self._inputs})
        return mean_pool_normalize(result[0], inputs["attention_mask"])

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        order = length_order(texts)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            out[rows] = self._run([texts[i] for i in rows])
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self._run([text])[0]
