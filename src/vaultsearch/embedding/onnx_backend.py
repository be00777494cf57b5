"""The default backend: the bundled INT8 ONNX model run by ONNX Runtime on the CPU.

Chosen by measurement (docs/benchmarks.md, "Runtime choice"): a runtime of ~80 MB
installed instead of OpenVINO's ~180 MB, which keeps the default install under
400 MB, with vectors at cosine 0.997 to the original and SciFact nDCG@10 within 0.002
of it (the model's feed-forward outputs stay float32, the rest is INT8).

One text per run, never a padded batch: the model's activations are quantised at run
time with one scale per run, so in a batch a text's vector would depend on the texts
beside it (cosine 0.993 to itself alone), and a cached vector on the batch it was made
in. Alone, a text gets the same vector as a query or as a document, and no work is
spent on padding, which makes single runs the fastest too. Cores are used by running
texts side by side on one session (ONNX Runtime allows concurrent runs), each on one
thread: that scales with the cores where splitting one short run does not.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from vaultsearch.embedding.contract import Fingerprint
from vaultsearch.embedding.locate import ONNX_FILE
from vaultsearch.embedding.tokens import encode, length_order, load_tokenizer, mean_pool_normalize


class OnnxBackend:
    def __init__(self, folder: Path, model_id: str, fingerprint: Fingerprint, threads: int) -> None:
        import onnxruntime as ort

        self.model_id, self.fingerprint, self.threads = model_id, fingerprint, max(1, threads)
        self._tokenizer = load_tokenizer(folder / "tokenizer.json")
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Every run has its own shape, so a planned memory pattern is never reused.
        options.enable_mem_pattern = False
        options.log_severity_level = 3
        self._session = ort.InferenceSession(
            str(folder / ONNX_FILE), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self.dimension = int(self.embed_query("dimension probe").shape[0])

    def embed_query(self, text: str) -> np.ndarray:
        inputs = encode(self._tokenizer, [text])
        feed = {k: v for k, v in inputs.items() if k in self._inputs}
        (tokens,) = self._session.run(["token_embeddings"], feed)
        return mean_pool_normalize(tokens, inputs["attention_mask"])[0]

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        if self.threads == 1 or len(texts) == 1:
            for i, text in enumerate(texts):
                out[i] = self.embed_query(text)
            return out
        longest_first = length_order(texts)[::-1]  # the long ones first: no straggler at the end
        with ThreadPoolExecutor(self.threads, thread_name_prefix="vaultsearch-embed") as pool:
            for i, vector in zip(
                longest_first,
                pool.map(lambda i: self.embed_query(texts[i]), longest_first),
                strict=True,
            ):
                out[i] = vector
        return out
