"""The plain-Python WordPiece tokenizer against the `tokenizers` package it replaces in
the default install: the same ids for the same tokenizer.json, on real notes and on
text built to hit every rule (control characters, accents, CJK, punctuation, special
tokens, over-long words, truncation)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from vaultsearch.embedding.locate import RUNTIME_MODEL_DIR
from vaultsearch.embedding.tokens import MAX_TOKENS, encode, load_tokenizer

ROOT = Path(__file__).resolve().parents[1]
VAULTS = ROOT.parent / "shared" / "data" / "vaults"
TOKENIZER = RUNTIME_MODEL_DIR / "tokenizer.json"
TABLE_DIFFERENCES = {"\u0d00"}
"""Characters Python's Unicode tables call nonspacing marks (stripped as accents) and
the original's older tables do not (kept, then unknown): the one kind of difference
found in 13,860 passages of the docs, the sample vaults and SciFact."""

HOSTILE = [
    "[CLS] hello [SEP] world[MASK]x [PAD][UNK]",
    "Ünïcödé naïve café 東京タワー 한국어 ﬁ ½ ① Ⅻ ㍿",
    "\x00a\x0bb\x0cc\x85d\u2028e\u00a0f\u200bg\ufffdh\x7fi\x1fj",
    "İstanbul ΣΊΣΥΦΟΣ straße ΟΔΥΣΣΕΥΣ",
    "a" * 150,
    "x" * 100 + " " + "y" * 101,
    "emoji 😀👍🏽 ok",
    "tab\tnew\nline\r\n  spaces   ",
    "$100+ <a>|b~c^d`e",
    "—–‐ «quotes» „x“ ¿qué? ¡sí! …",
    "\u0301\u0300 combining at the start",
    "",
    "   ",
    "word " * 400,
]


def passages() -> list[str]:
    """Docs, and a sample of the shared vaults when present, cut as chunks roughly are."""
    files = sorted((ROOT / "docs").rglob("*.md"))
    for vault in sorted(VAULTS.glob("*")):
        files += sorted(vault.rglob("*.md"))[::7]
    texts = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        texts += [text[i : i + 1000] for i in range(0, len(text), 1000)]
    return texts


def test_known_ids_of_bert_uncased() -> None:
    tok = load_tokenizer(TOKENIZER)
    assert tok.encode("Hello, World!") == [101, 7592, 1010, 2088, 999, 102]
    assert tok.encode("") == [101, 102]
    long = tok.encode("word " * 1000)
    assert len(long) == MAX_TOKENS and long[0] == 101 and long[-1] == 102


def test_batches_pad_with_zeros_and_mask_them() -> None:
    batch = encode(load_tokenizer(TOKENIZER), ["owls", "owls hunt at night"])
    assert batch["input_ids"].shape == batch["attention_mask"].shape == (2, 6)
    assert batch["attention_mask"][0].tolist() == [1, 1, 1, 0, 0, 0]
    assert batch["input_ids"][0, 3:].tolist() == [0, 0, 0]


@pytest.mark.skipif(
    importlib.util.find_spec("tokenizers") is None,
    reason="the `tokenizers` package (huggingface extra) is not installed to compare against",
)
def test_same_ids_as_the_tokenizers_package() -> None:
    from tokenizers import Tokenizer

    reference = Tokenizer.from_file(str(TOKENIZER))
    reference.enable_truncation(MAX_TOKENS)
    reference.no_padding()
    ours = load_tokenizer(TOKENIZER)
    texts = [*passages(), *HOSTILE]
    expected = [e.ids for e in reference.encode_batch(texts)]
    differ = [t for t, e in zip(texts, expected, strict=True) if ours.encode(t) != e]
    unexplained = [t[:60] for t in differ if not TABLE_DIFFERENCES & set(t)]
    assert not unexplained, f"{len(unexplained)} of {len(texts)} differ, e.g. {unexplained[:3]}"


def test_a_foreign_tokenizer_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text('{"model": {"type": "BPE", "vocab": {}}, "normalizer": null}')
    with pytest.raises(ValueError, match="not a BERT WordPiece tokenizer"):
        load_tokenizer(path)
