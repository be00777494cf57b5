from __future__ import annotations

from itertools import pairwise

import pytest

from vaultsearch.indexing.chunker import chunk_note
from vaultsearch.models import Chunk, ParsedNote, Section
from vaultsearch.parsers.markdown import MarkdownParser

_PARSER = MarkdownParser()


def note_of(text: str, title: str | None = None) -> ParsedNote:
    note = _PARSER.parse("notes/Doc.md", text)
    if title is None:
        return note
    return ParsedNote(note.path, note.text, title, sections=note.sections)


def check_invariants(note: ParsedNote, chunks: list[Chunk], size: int) -> None:
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    lines = note.text.split("\n")
    for chunk in chunks:
        assert note.text[chunk.start_char : chunk.end_char] == chunk.text
        assert chunk.text == chunk.text.strip() and chunk.text
        assert len(chunk.text) <= size
        chunk_lines = chunk.text.split("\n")
        assert chunk_lines[0] in lines[chunk.start_line - 1]
        assert chunk_lines[-1] in lines[chunk.end_line - 1]
        assert chunk.end_line - chunk.start_line == chunk.text.count("\n")
        owner = [s for s in note.sections if s.start_char <= chunk.start_char < s.end_char]
        assert len(owner) == 1
        assert chunk.end_char <= owner[0].end_char
        assert chunk.heading_path == owner[0].heading_path


def covered(chunks: list[Chunk]) -> set[int]:
    return {i for c in chunks for i in range(c.start_char, c.end_char)}


def long_section(paragraphs: int = 10, sentences: int = 6) -> str:
    body = "\n\n".join(
        " ".join(f"Paragraph {p} sentence {s} says something useful." for s in range(sentences))
        for p in range(paragraphs)
    )
    return f"# Long\n{body}\n"


def test_small_sections_become_one_chunk_each() -> None:
    text = "Preamble text.\n\n# Setup\nInstall it.\n\n## Linux\nUse apt.\n"
    note = note_of(text)
    chunks = chunk_note(note)
    assert [(c.heading_path, c.text) for c in chunks] == [
        ((), "Preamble text."),
        (("Setup",), "# Setup\nInstall it."),
        (("Setup", "Linux"), "## Linux\nUse apt."),
    ]
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 1), (3, 4), (6, 7)]
    check_invariants(note, chunks, 1000)


def test_embed_text_has_title_path_and_text_but_no_ids() -> None:
    note = note_of("Lead.\n# Setup\n## Linux\nUse apt.\n", title="My Doc")
    chunks = chunk_note(note)
    assert chunks[0].embed_text == "My Doc\nLead."
    assert chunks[2].embed_text == "My Doc\nSetup > Linux\n## Linux\nUse apt."
    assert all("notes/Doc.md" not in c.embed_text for c in chunks)


def test_heading_only_section_is_a_chunk_but_blank_sections_are_not() -> None:
    text = "# Empty heading\n\n\n# Next\nbody\n"
    chunks = chunk_note(note_of(text))
    assert [c.text for c in chunks] == ["# Empty heading", "# Next\nbody"]
    blank = ParsedNote("a.md", "x\n   \n\t\n", "a", sections=(Section((), 2, 3, 2, 8),))
    assert chunk_note(blank) == []


def test_chunks_never_cross_sections() -> None:
    text = long_section(6) + "## Child\n" + long_section(4).replace("# Long", "") + "# Other\nend\n"
    note = note_of(text)
    chunks = chunk_note(note, size=300, overlap=60)
    check_invariants(note, chunks, 300)
    assert {c.heading_path for c in chunks} == {("Long",), ("Long", "Child"), ("Other",)}


def test_long_section_is_split_at_paragraphs_with_nothing_lost() -> None:
    note = note_of(long_section(10, 3))
    chunks = chunk_note(note, size=400, overlap=0)
    assert len(chunks) > 2
    check_invariants(note, chunks, 400)
    for chunk in chunks:
        assert chunk.text.endswith("useful.")
        assert chunk.text.startswith(("# Long", "Paragraph"))
    section = note.sections[0]
    non_space = {
        i for i in range(section.start_char, section.end_char) if not note.text[i].isspace()
    }
    assert non_space <= covered(chunks)
    for before, after in pairwise(chunks):
        assert before.end_char < after.start_char
        assert "\n\n" in note.text[before.end_char : after.start_char + 1]


def test_overlap_repeats_the_tail_on_a_word_boundary() -> None:
    note = note_of(long_section(8, 5))
    chunks = chunk_note(note, size=350, overlap=80)
    check_invariants(note, chunks, 350)
    assert len(chunks) > 3
    for before, after in pairwise(chunks):
        shared = before.end_char - after.start_char
        assert 0 < shared <= 80
        assert note.text[after.start_char - 1].isspace()
        assert after.text.startswith(note.text[after.start_char : before.end_char])


def test_overlap_prefers_a_sentence_start() -> None:
    sentences = " ".join(f"Sentence number {i} is here." for i in range(60))
    note = note_of(f"# S\n{sentences}\n")
    chunks = chunk_note(note, size=200, overlap=60)
    check_invariants(note, chunks, 200)
    for chunk in chunks[1:]:
        assert chunk.text.startswith("Sentence number")
    for before, after in pairwise(chunks):
        assert after.start_char < before.end_char


def test_long_paragraph_splits_at_sentence_ends() -> None:
    paragraph = " ".join(f"This is sentence {i} of a very long paragraph." for i in range(40))
    note = note_of(f"# P\n{paragraph}\n")
    chunks = chunk_note(note, size=250, overlap=0)
    check_invariants(note, chunks, 250)
    assert all(c.text.endswith("paragraph.") for c in chunks)


def test_monster_sentence_is_cut_hard_at_size() -> None:
    blob = "x" * 2500
    note = note_of(f"# Blob\n{blob}\n")
    chunks = chunk_note(note, size=1000, overlap=0)
    check_invariants(note, chunks, 1000)
    assert "".join(c.text for c in chunks[1:]) == blob
    assert [len(c.text) for c in chunks[1:]] == [1000, 1000, 500]


def test_monster_sentence_with_spaces_is_cut_between_words() -> None:
    words = " ".join(f"word{i}" for i in range(400))
    note = note_of(words)
    chunks = chunk_note(note, size=300, overlap=0)
    check_invariants(note, chunks, 300)
    for chunk in chunks:
        assert chunk.text.split(" ")[-1].startswith("word")
        assert note.text[chunk.end_char : chunk.end_char + 1] in ("", " ")


def test_fenced_code_block_that_fits_is_not_split() -> None:
    code = "```python\n" + "\n".join(f"x{i} = {i}" for i in range(30)) + "\n\n\ny = 2\n```"
    text = "# Code\n" + "Intro sentence. " * 20 + "\n\n" + code + "\n\nAfter the code.\n"
    note = note_of(text)
    chunks = chunk_note(note, size=400, overlap=50)
    check_invariants(note, chunks, 400)
    assert any(code in c.text for c in chunks)


def test_oversized_code_block_is_split_at_lines() -> None:
    code = "```\n" + "\n".join(f"line_{i:03d} = value" for i in range(100)) + "\n```"
    note = note_of("# Code\n" + code + "\n")
    chunks = chunk_note(note, size=300, overlap=0)
    check_invariants(note, chunks, 300)
    for chunk in chunks:
        assert all(ln.startswith(("line_", "```", "# Code")) for ln in chunk.text.split("\n"))


def test_crlf_chunks_have_exact_offsets_and_lines() -> None:
    text = "Intro\r\n\r\n# Win\r\nline one\r\nline two\r\n"
    note = note_of(text)
    chunks = chunk_note(note)
    assert [(c.text, c.start_line, c.end_line) for c in chunks] == [
        ("Intro", 1, 1),
        ("# Win\r\nline one\r\nline two", 3, 5),
    ]


def test_unicode_offsets_are_str_offsets() -> None:
    text = "---\ntitle: Ü\n---\n# Überblick 🚀\n日本語のテキスト。\n"
    note = note_of(text)
    (chunk,) = chunk_note(note)
    assert chunk.text == "# Überblick 🚀\n日本語のテキスト。"
    assert (chunk.start_line, chunk.end_line) == (4, 5)
    assert text[chunk.start_char : chunk.end_char] == chunk.text


def test_frontmatter_is_never_chunked() -> None:
    note = note_of("---\ntitle: Secret Title\ntags: [x]\n---\nBody only.\n")
    assert [c.text for c in chunk_note(note)] == ["Body only."]


def test_empty_note_has_no_chunks() -> None:
    assert chunk_note(note_of("")) == []


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (-5, 0), (100, 100), (100, 150), (100, -1)])
def test_size_and_overlap_are_validated(size: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        chunk_note(note_of("text"), size=size, overlap=overlap)


def test_tiny_size_still_terminates_and_covers_text() -> None:
    note = note_of("# A\nab cd ef gh ij kl mn op qr st uv wx yz\n")
    chunks = chunk_note(note, size=5, overlap=4)
    check_invariants(note, chunks, 5)
    section = note.sections[0]
    non_space = {
        i for i in range(section.start_char, section.end_char) if not note.text[i].isspace()
    }
    assert non_space <= covered(chunks)
