"""BERT's uncased WordPiece tokenizer in plain Python, read from the model's tokenizer.json.

Why not the `tokenizers` package: it pulls huggingface_hub, hf-xet, fsspec and more,
about 35 MB of the default install, which the 400 MB goal cannot spare; the model needs
only this one algorithm. The ids are those of `tokenizers` for the same file
(tests/test_wordpiece.py compares them on the docs, the sample vaults and hostile text;
they differ only on characters whose Unicode category the two tables disagree on, such
as U+0D00, which appeared once in 13,860 passages): BertNormalizer (drop control
characters, whitespace to spaces, spaces around CJK ideographs, strip accents,
lowercase), BertPreTokenizer (split on whitespace and on each punctuation character),
greedy longest-match WordPiece with ``##`` continuations, ``[CLS] … [SEP]``, cut to
``max_tokens``."""

from __future__ import annotations

import json
import re
import string
import unicodedata
from pathlib import Path

_ASCII_PUNCT = frozenset(string.punctuation)
_CJK = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
_WHITE_SPACE = frozenset(
    "\t\n\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
"""Unicode White_Space less the control characters, which are dropped before (as the
original does: a vertical tab or NEL is removed, not turned into a space)."""
_ASCII_CONTROL = {i: None for i in (*range(32), 127)} | {9: " ", 10: " ", 13: " "}
_CACHE_LIMIT = 200_000


def _is_cjk(code: int) -> bool:
    return any(lo <= code <= hi for lo, hi in _CJK)


def _normalize_char(ch: str) -> str:
    """One character through BertNormalizer's clean-text and CJK steps."""
    if ch in _WHITE_SPACE:
        return " "
    if ch == "\ufffd" or unicodedata.category(ch)[0] == "C":
        return ""
    return f" {ch} " if _is_cjk(ord(ch)) else ch


def _is_punct(ch: str) -> bool:
    return ch in _ASCII_PUNCT or unicodedata.category(ch)[0] == "P"


class WordPiece:
    def __init__(self, vocab: dict[str, int], special: list[str], max_tokens: int) -> None:
        self.vocab, self.max_tokens = vocab, max_tokens
        self.unk, self.cls, self.sep = vocab["[UNK]"], vocab["[CLS]"], vocab["[SEP]"]
        self._special = re.compile("|".join(map(re.escape, special))) if special else None
        self._words: dict[str, list[int]] = {}
        self._chars: dict[str, str] = {}

    @classmethod
    def from_file(cls, path: Path, max_tokens: int) -> WordPiece:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        model = data["model"]
        if model.get("type") != "WordPiece" or data.get("normalizer", {}).get("type") != (
            "BertNormalizer"
        ):
            raise ValueError(f"{path} is not a BERT WordPiece tokenizer")
        special = sorted(
            (t["content"] for t in data.get("added_tokens", []) if t.get("special")),
            key=len,
            reverse=True,
        )
        return cls(dict(model["vocab"]), special, max_tokens)

    def normalize(self, text: str) -> str:
        if text.isascii():
            return text.translate(_ASCII_CONTROL).lower()
        out = []
        chars = self._chars
        for ch in text:
            done = chars.get(ch)
            if done is None:
                done = chars[ch] = _normalize_char(ch)
            out.append(done)
        decomposed = unicodedata.normalize("NFD", "".join(out))
        kept = "".join(c for c in decomposed if unicodedata.category(c) != "Mn")
        # the original lowercases character by character: no word-final sigma
        return kept.replace("Σ", "σ").lower()

    def _word_ids(self, word: str) -> list[int]:
        """Greedy longest match, as the original: one unknown piece makes the word [UNK]."""
        if len(word) > 100:
            return [self.unk]
        ids, start, vocab = [], 0, self.vocab
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                found = vocab.get(piece)
                if found is not None:
                    ids.append(found)
                    break
                end -= 1
            else:
                return [self.unk]
            start = end
        return ids

    def _ids(self, text: str, out: list[int], room: int) -> None:
        words = self._words
        for chunk in self.normalize(text).split(" "):
            if not chunk:
                continue
            pieces = words.get(chunk)
            if pieces is None:
                pieces = self._split_punct(chunk)
                if len(words) >= _CACHE_LIMIT:
                    words.clear()
                words[chunk] = pieces
            out.extend(pieces)
            if len(out) >= room:
                return

    def _split_punct(self, chunk: str) -> list[int]:
        if chunk.isalnum():
            return self._word_ids(chunk)
        ids: list[int] = []
        word = ""
        for ch in chunk:
            if _is_punct(ch):
                if word:
                    ids += self._word_ids(word)
                    word = ""
                ids += self._word_ids(ch)
            else:
                word += ch
        if word:
            ids += self._word_ids(word)
        return ids

    def encode(self, text: str) -> list[int]:
        room = self.max_tokens - 2
        ids: list[int] = []
        pos = 0
        for match in self._special.finditer(text) if self._special else ():
            self._ids(text[pos : match.start()], ids, room)
            ids.append(self.vocab[match.group()])
            pos = match.end()
        self._ids(text[pos:], ids, room)
        return [self.cls, *ids[:room], self.sep]
