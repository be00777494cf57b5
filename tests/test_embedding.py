"""The embedding seam: the shipped INT8 model against the original weights, both
backends through one contract, fingerprints that force a rebuild and a cache that
makes switching back free."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import write_files
from vaultsearch import Vault
from vaultsearch.cli.main import main
from vaultsearch.config import EmbeddingConfig
from vaultsearch.embedding import Embedder, fingerprint
from vaultsearch.errors import ModelLoadError
from vaultsearch.store.layout import IndexLayout
from vaultsearch.store.manifest import MANIFEST_DIGEST, read_state, write_state

ROOT = Path(__file__).resolve().parents[1]
HAS_HF = all(
    importlib.util.find_spec(m) is not None
    for m in ("torch", "sentence_transformers", "llama_index.embeddings.huggingface")
)
needs_hf = pytest.mark.skipif(
    not HAS_HF,
    reason="the huggingface extra (torch, llama-index) is not installed: "
    "pip install 'vaultsearch[huggingface]' to compare against the original model",
)

NOTES = {
    "rivers.md": "# Rivers\n\nThe Danube flows through ten countries into the Black Sea.\n",
    "owls.md": "# Owls\n\nBarn owls hunt at night by sound; see [[rivers]].\n",
    "tax.md": "# Taxes\n\nFile the quarterly VAT return before the end of the month.\n",
}


def sample_passages(limit: int = 96) -> list[str]:
    """A fixed sample: paragraphs of the user documentation, short and long alike."""
    passages: list[str] = []
    for path in sorted((ROOT / "docs").rglob("*.md")):
        passages += [p for p in path.read_text(encoding="utf-8").split("\n\n") if len(p) > 60]
    step = max(1, len(passages) // limit)
    return passages[::step][:limit]


def test_default_backend_is_onnx_runtime_without_torch(embedder: Embedder) -> None:
    assert embedder.backend_name == "onnx"
    assert embedder.fingerprint.runtime == "onnxruntime"
    vectors = embedder.embed_texts(["owls hunt at night", "a" * 5000, ""])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    # a batch pads its texts; the padding must not change a text's vector
    alone = embedder.embed_query("owls hunt at night")
    assert float(alone @ vectors[0]) > 0.999


@needs_hf
def test_converted_model_agrees_with_the_original() -> None:
    texts = sample_passages()
    converted = Embedder(EmbeddingConfig()).embed_texts(texts)
    original = Embedder(EmbeddingConfig(backend="huggingface", precision="float32"))
    assert original.fingerprint.runtime == "torch"
    reference = original.embed_texts(texts)
    cosines = (converted * reference).sum(axis=1)
    assert cosines.mean() >= 0.99, cosines.mean()
    sim_a, sim_b = converted @ converted.T, reference @ reference.T
    np.fill_diagonal(sim_a, -2)
    np.fill_diagonal(sim_b, -2)
    same_neighbour = (sim_a.argmax(axis=1) == sim_b.argmax(axis=1)).mean()
    assert same_neighbour >= 0.8, same_neighbour


def test_fingerprints_name_runtime_and_weights() -> None:
    onnx = fingerprint(EmbeddingConfig())
    assert onnx.runtime == "onnxruntime" and onnx.precision == "int8-dynamic-ffn-fp32"
    record = json.loads((ROOT / "src/vaultsearch/embedding/model/conversion.json").read_text())
    assert record["weights_sha256"].startswith(onnx.weights)
    if HAS_HF:
        hf = fingerprint(EmbeddingConfig(backend="huggingface"))
        assert hf.runtime == "torch" and hf.key != onnx.key and hf.model == onnx.model


def test_missing_extra_is_one_sentence_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    before = set(sys.modules)
    monkeypatch.setitem(sys.modules, "torch", None)  # what an install without the extra sees
    embedder = Embedder(EmbeddingConfig(backend="huggingface"))
    try:
        with pytest.raises(ModelLoadError) as err:
            embedder.embed_query("x")
    finally:
        # modules imported without torch (transformers decides once whether torch is
        # there) would break a later Hugging Face load in this process
        for name in set(sys.modules) - before:
            del sys.modules[name]
    assert "needs the huggingface extra" in str(err.value)
    assert err.value.fix and "vaultsearch[huggingface]" in err.value.fix


def test_onnx_backend_refuses_a_hugging_face_folder(tmp_path: Path) -> None:
    folder = tmp_path / "hf-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    with pytest.raises(ModelLoadError) as err:
        Embedder(EmbeddingConfig(model=str(folder), backend="onnx")).embed_query("x")
    assert "not an ONNX model folder" in str(err.value)
    assert err.value.fix and 'backend = "huggingface"' in err.value.fix


def test_a_search_refused_for_another_model_starts_no_model_load(
    tmp_path: Path, embedder: Embedder
) -> None:
    """A load begun for a search that then fails would run on after the call, holding
    memory and a core for a model the search cannot use."""
    import shutil
    import threading

    from vaultsearch.embedding.locate import RUNTIME_MODEL_DIR
    from vaultsearch.errors import VaultsearchError

    root = write_files(tmp_path / "vault", dict(NOTES))
    with Vault.open(root, index_dir=tmp_path / "index") as vault:
        vault.index()
    shutil.copytree(RUNTIME_MODEL_DIR, tmp_path / "model-copy")
    config = tmp_path / "other.toml"
    config.write_text(f'[embedding]\nmodel = "{tmp_path / "model-copy"}"\n')
    with Vault.open(root, index_dir=tmp_path / "index", config=config) as vault:
        with pytest.raises(VaultsearchError, match="built with the embedding model"):
            vault.search("owls at night")
        loading = [t for t in threading.enumerate() if t.name == "vaultsearch-model-load"]
        assert not vault.embedder.loaded and not loading


def test_a_background_load_serves_the_next_call(embedder: Embedder) -> None:
    fresh = Embedder(EmbeddingConfig())
    fresh.load_in_background()
    vector = fresh.embed_query("owls at night")  # waits for the load, or loads itself
    assert fresh.loaded
    assert float(vector @ embedder.embed_query("owls at night")) > 0.999


def test_a_failed_background_load_is_reported_by_the_call_that_needs_it(tmp_path: Path) -> None:
    broken = Embedder(EmbeddingConfig(model=str(tmp_path / "missing"), backend="onnx"))
    broken.load_in_background()
    with pytest.raises(ModelLoadError) as err:
        broken.embed_query("x")
    assert "does not exist" in str(err.value) and not broken.loaded


def test_threads_every_core_unless_serving() -> None:
    code = (
        "import os, vaultsearch._runtime as r\n"
        "n = len(os.sched_getaffinity(0))\n"
        "a = r.embedding_threads(0); r.reserve_core_for_queries(); b = r.embedding_threads(0)\n"
        "print(n, a, b, r.embedding_threads(3))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    n, every, serving, fixed = map(int, out.stdout.split())
    assert every == n and serving == max(1, n - 1) and fixed == 3


@needs_hf
def test_switching_runtime_rebuilds_and_switching_back_reuses_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], embedder: Embedder
) -> None:
    root = write_files(tmp_path / "vault", dict(NOTES))
    index_dir = tmp_path / "index"
    hf_config = tmp_path / "hf.toml"
    hf_config.write_text('[embedding]\nbackend = "huggingface"\n')
    common = ["--index-dir", str(index_dir), "--quiet"]
    assert main(["index", str(root), *common]) == 0
    capsys.readouterr()

    code = main(
        ["index", str(root), "--check", "--index-dir", str(index_dir), "--config", str(hf_config)]
    )
    out = capsys.readouterr().out
    assert code == 1 and "rebuild needed" in out
    assert 'embedding.fingerprint.runtime: "onnxruntime" -> "torch"' in out

    with Vault.open(root, index_dir=index_dir, config=hf_config) as vault:
        assert vault.index().chunks_embedded == 3
        assert vault.search("owls at night", top_k=1)[0].path == "owls.md"
    with Vault.open(root, index_dir=index_dir) as vault:
        summary = vault.index()
        assert summary.rebuild_reasons and summary.chunks_embedded == 0
        assert vault.search("owls at night", top_k=1)[0].path == "owls.md"


def test_an_index_made_by_the_former_openvino_default_is_rebuilt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], embedder: Embedder
) -> None:
    """Indexes built before ONNX Runtime became the default carry OpenVINO's fingerprint
    in their manifest: `index --check` names the change and `index` rebuilds to the new
    fingerprint (the vectors stored under it, made by this runtime, are reused)."""
    root = write_files(tmp_path / "vault", dict(NOTES))
    index_dir = tmp_path / "index"
    config = tmp_path / "nocache.toml"
    config.write_text('[embedding]\ncache_dir = "off"\n')
    with Vault.open(root, index_dir=index_dir, config=config) as vault:
        vault.index()
    manifests = list(index_dir.rglob("index.manifest.json"))  # the live generation's and its copy
    assert manifests
    for manifest in manifests:
        data = json.loads(manifest.read_text())
        data["embedding"]["fingerprint"] = {
            "weights": "9f25a4d77bb280bd",
            "runtime": "openvino",
            "precision": "int8-static",
        }
        manifest.write_text(json.dumps(data, indent=2, sort_keys=True))
    live = IndexLayout(index_dir).live  # such an index's state recorded no manifest digest
    state = read_state(live.root) or {}
    write_state(
        live.root, {k: v for k, v in state.items() if k not in (MANIFEST_DIGEST, "checksum")}
    )
    argv = ["index", str(root), "--check", "--index-dir", str(index_dir), "--config", str(config)]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert 'embedding.fingerprint.runtime: "openvino" -> "onnxruntime"' in out
    with Vault.open(root, index_dir=index_dir, config=config) as vault:
        summary = vault.index()
        assert summary.rebuild_reasons
        assert vault.check().status == "current"
        assert vault.search("owls at night", top_k=1)[0].path == "owls.md"
