"""Split a parsed note into embedding-sized chunks that never straddle two sections.

Chunks are exact slices of the note text, so a hit can be shown and opened at the
precise lines it came from. Long sections are cut at the most natural boundary that
works: blank lines, then sentence ends, then spaces, and only as a last resort mid-word.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import replace

from vaultsearch.models import Chunk, ParsedNote, Section

_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})")
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+|\n\s*")
_SPACE = re.compile(r"\s+")

Span = tuple[int, int]


def chunk_note(note: ParsedNote, size: int = 1000, overlap: int = 100) -> list[Chunk]:
    """Chunk every section of ``note``; ``size`` and ``overlap`` count characters."""
    if size <= 0:
        raise ValueError(f"chunk size must be > 0, got {size}")
    if not 0 <= overlap < size:
        raise ValueError(f"chunk overlap must be >= 0 and < size ({size}), got {overlap}")
    text = note.text
    line_starts = [0, *(m.end() for m in re.finditer("\n", text))]
    chunks: list[Chunk] = []
    for section in note.sections:
        lo, hi = max(section.start_char, 0), min(section.end_char, len(text))
        for start, end in _split_section(text, lo, hi, size, overlap):
            chunks.append(
                Chunk(
                    ordinal=len(chunks),
                    heading_path=section.heading_path,
                    start_line=bisect_right(line_starts, start),
                    end_line=bisect_right(line_starts, end - 1),
                    start_char=start,
                    end_char=end,
                    text=text[start:end],
                    embed_text=_embed_text(note.title, section.heading_path, text[start:end]),
                    qualified_name=section.qualified_name,
                    node_type=section.node_type,
                    page=section.page,
                )
            )
    return chunks


def chunk_capped(
    note: ParsedNote, size: int, overlap: int, cap: int
) -> tuple[list[Chunk], str | None]:
    """At most ``cap`` chunks, and a warning when the note needed fewer of them.

    A note of 100,000 one-line sections would otherwise cost 100,000 embeddings: its
    sections are first packed together up to ``size``, then the rest is cut off.
    """
    chunks = chunk_note(note, size, overlap)
    if len(chunks) <= cap:
        return chunks, None
    merged = chunk_note(
        replace(note, sections=_packed_sections(note.sections, size)), size, overlap
    )
    warning = (
        f"{len(chunks):,} chunks over chunking.max_chunks_per_note ({cap:,}): "
        f"short sections were merged into {len(merged):,} chunks"
    )
    if len(merged) > cap:
        merged = merged[:cap]
        warning += f"; only the first {cap:,} are indexed"
    return merged, warning


def _packed_sections(sections: tuple[Section, ...], size: int) -> tuple[Section, ...]:
    """Neighbouring sections joined while they fit in ``size``; the first names the group."""
    out: list[Section] = []
    for sec in sections:
        last = out[-1] if out else None
        if last is not None and sec.end_char - last.start_char <= size:
            out[-1] = replace(last, end_line=sec.end_line, end_char=sec.end_char)
        else:
            out.append(sec)
    return tuple(out)


def _embed_text(title: str, heading_path: tuple[str, ...], text: str) -> str:
    """Title and heading path give a short chunk the context the model needs to place it."""
    lines = [title]
    if heading_path:
        lines.append(" > ".join(heading_path))
    lines.append(text)
    return "\n".join(lines)


def _split_section(text: str, start: int, end: int, size: int, overlap: int) -> list[Span]:
    start, end = _trim(text, start, end)
    if start >= end:
        return []
    if end - start <= size:
        return [(start, end)]
    return _pack(text, list(_pieces(text, start, end, size)), size, overlap)


def _trim(text: str, start: int, end: int) -> Span:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _pieces(text: str, start: int, end: int, size: int) -> Iterator[Span]:
    """Atomic, ordered, trimmed spans of at most ``size`` characters."""
    for lo, hi, is_code in _blocks(text, start, end):
        if hi - lo <= size:
            yield lo, hi
            continue
        splitter = re.compile(r"\n") if is_code else _SENTENCE_END
        for s_lo, s_hi in _split_at(text, lo, hi, splitter):
            if s_hi - s_lo <= size:
                yield s_lo, s_hi
            else:
                yield from _hard_split(text, s_lo, s_hi, size)


def _blocks(text: str, start: int, end: int) -> Iterator[tuple[int, int, bool]]:
    """Paragraph-like blocks separated by blank lines; a fenced code block is one block."""
    block_start = -1
    fence = ""
    pos = start
    while pos < end:
        nl = text.find("\n", pos, end)
        line_end = end if nl == -1 else nl
        line = text[pos:line_end].strip()
        if fence:
            if line.startswith(fence) and not line.strip(fence[0]):
                yield (*_trim(text, block_start, line_end), True)
                block_start, fence = -1, ""
        elif match := _FENCE_OPEN.match(text, pos, line_end):
            if block_start >= 0:
                yield (*_trim(text, block_start, pos), False)
            block_start, fence = pos, match[1]
        elif not line:
            if block_start >= 0:
                yield (*_trim(text, block_start, pos), False)
            block_start = -1
        elif block_start < 0:
            block_start = pos
        pos = line_end + 1
    if block_start >= 0:
        yield (*_trim(text, block_start, end), bool(fence))


def _split_at(text: str, start: int, end: int, boundary: re.Pattern[str]) -> Iterator[Span]:
    pos = start
    for match in boundary.finditer(text, start, end):
        lo, hi = _trim(text, pos, match.start())
        if lo < hi:
            yield lo, hi
        pos = match.end()
    lo, hi = _trim(text, pos, end)
    if lo < hi:
        yield lo, hi


def _hard_split(text: str, start: int, end: int, size: int) -> Iterator[Span]:
    """Cut a monster sentence at the last space in the window, or exactly at ``size``."""
    while end - start > size:
        limit = start + size
        cut = max(text.rfind(ch, start + size // 2 + 1, limit + 1) for ch in " \t\n")
        if cut < 0:
            cut = limit
        lo, hi = _trim(text, start, cut)
        if lo < hi:
            yield lo, hi
        start, _ = _trim(text, cut, end)
    if start < end:
        yield start, end


def _pack(text: str, pieces: list[Span], size: int, overlap: int) -> list[Span]:
    out: list[Span] = []
    i = 0
    while i < len(pieces):
        start = pieces[i][0]
        if out and overlap:
            start = _overlap_start(text, out[-1], pieces[i], size, overlap)
        end = pieces[i][1]
        i += 1
        while i < len(pieces) and pieces[i][1] - start <= size:
            end = pieces[i][1]
            i += 1
        out.append((start, end))
    return out


def _overlap_start(text: str, prev: Span, piece: Span, size: int, overlap: int) -> int:
    """Where the next chunk starts so that it repeats the previous chunk's last words.

    The earliest sentence start in the overlap window is preferred, then the earliest word
    start; the window is narrowed so that the chunk still fits with its first piece.
    """
    prev_start, prev_end = prev
    lo = max(prev_end - overlap, prev_start + 1, piece[1] - size)
    if lo >= prev_end:
        return piece[0]
    for pattern in (_SENTENCE_END, _SPACE):
        match = pattern.search(text, lo - 1, prev_end)
        if match is not None and lo <= match.end() < prev_end:
            return match.end()
    return piece[0]
