"""The PDF parser on real PDFs made by fpdf2: pages, titles, encrypted and broken files."""

from __future__ import annotations

import importlib.util

import pytest

from tests.pdfs import make_pdf, shared_stream_pdf
from vaultsearch.config import IndexConfig
from vaultsearch.errors import FileUnreadableError
from vaultsearch.indexing.chunker import chunk_note
from vaultsearch.indexing.parsebox import ParseBox
from vaultsearch.parsers.pdf import PdfParser

ENERGY = [
    ["Solar panels", "Photovoltaic cells turn sunlight into electric power."],
    [],
    ["Wind turbines", "Long blades spin a generator in the wind."],
]


def test_one_section_per_page_with_its_number() -> None:
    note = PdfParser().parse_bytes("library/energy.pdf", make_pdf(ENERGY, title="Energy Guide"))
    assert (note.kind, note.title, note.warnings) == ("pdf", "Energy Guide", ())
    assert [(s.page, s.heading_path, s.node_type) for s in note.sections] == [
        (1, ("Page 1",), "page"),
        (3, ("Page 3",), "page"),  # the empty page 2 has nothing to search
    ]
    first, third = (note.text[s.start_char : s.end_char] for s in note.sections)
    assert first == "Solar panels\nPhotovoltaic cells turn sunlight into electric power."
    assert third == "Wind turbines\nLong blades spin a generator in the wind."
    lines = note.text.split("\n")
    assert lines[note.sections[1].start_line - 1] == "Wind turbines"
    assert lines[note.sections[1].end_line - 1] == "Long blades spin a generator in the wind."
    chunks = chunk_note(note)
    assert [c.page for c in chunks] == [1, 3]
    assert chunks[1].embed_text.startswith("Energy Guide\nPage 3\nWind turbines")


def test_title_falls_back_to_the_first_line() -> None:
    note = PdfParser().parse_bytes("a/report.pdf", make_pdf([["  Quarterly Report  ", "Numbers."]]))
    assert note.title == "Quarterly Report"


_AES = pytest.mark.skipif(
    importlib.util.find_spec("cryptography") is None,
    reason="AES needs the cryptography package (in the dev extra)",
)
METHODS = ["RC4", pytest.param("AES_128", marks=_AES), pytest.param("AES_256", marks=_AES)]


@pytest.mark.parametrize("method", METHODS)
def test_a_pdf_with_only_an_owner_password_is_read(method: str) -> None:
    data = make_pdf([["Restricted printing, open reading."]], user_password="", method=method)
    note = PdfParser().parse_bytes("owner.pdf", data)
    assert "open reading" in note.text


@pytest.mark.parametrize("method", METHODS)
def test_a_pdf_that_needs_a_password_is_refused_with_the_reason(method: str) -> None:
    data = make_pdf([["Top secret plans."]], user_password="letmein", method=method)
    with pytest.raises(FileUnreadableError, match="encrypted PDF that needs a password"):
        PdfParser().parse_bytes("secret.pdf", data)


@pytest.mark.parametrize(
    "data",
    [
        make_pdf(ENERGY)[:600],
        b"%PDF-1.7\n" + b"\x00\xff garbage " * 50,
        b"not a pdf at all",
        b"",
    ],
    ids=["truncated", "garbage", "text", "empty"],
)
def test_a_damaged_pdf_is_refused_with_the_reason(data: bytes) -> None:
    with pytest.raises(FileUnreadableError, match="unreadable PDF"):
        PdfParser().parse_bytes("broken.pdf", data)


def test_a_pdf_without_text_is_indexed_empty_with_a_warning() -> None:
    note = PdfParser().parse_bytes("scan.pdf", make_pdf([[], []]))
    assert note.sections == ()
    assert note.warnings == ("no text layer (a scanned PDF?): nothing to search",)


def test_decoded_text_is_refused() -> None:
    with pytest.raises(FileUnreadableError, match="read from its bytes"):
        PdfParser().parse("x.pdf", "%PDF-1.4 ...")


@pytest.mark.parametrize("own_resources", [False, True], ids=["shared", "own-resources"])
def test_pages_sharing_one_content_stream_each_have_its_text(own_resources: bool) -> None:
    """Pages that share content and resources are extracted once; the text of each is
    still its own section, and pages with their own resources are read one by one."""
    data = shared_stream_pdf(12 if own_resources else 40, 1, own_resources, "Shared words")
    note = PdfParser().parse_bytes("shared.pdf", data)
    pages = 12 if own_resources else 40
    assert [s.page for s in note.sections] == list(range(1, pages + 1))
    assert {note.text[s.start_char : s.end_char] for s in note.sections} == {"Shared words"}
    assert note.warnings == ()


def test_a_pdf_over_a_pypdf_limit_is_refused_whole() -> None:
    """One failing page of a shared stream would fail again on every page: the file
    is refused at the first, with the limit in the reason."""
    import pypdf

    limited = pypdf.apply_configuration(zlib_maximum_output_length=1_000_000)
    refused = pytest.raises(FileUnreadableError, match=r"over a parsing limit on page 1 \(Limit")
    with limited, refused:
        PdfParser().parse_bytes("bomb.pdf", shared_stream_pdf(200, 3))


def test_the_memory_budget_caps_what_a_stream_may_decode_to() -> None:
    """In the parse box, a stream is held to a quarter of index.parse_memory_mb: a 16 KB
    file whose 100 pages share a 70 MB stream is refused at once, naming the budget."""
    bomb = shared_stream_pdf(100, 70)
    assert len(bomb) < 20_000
    with ParseBox(IndexConfig(parse_memory_mb=64, parse_timeout=600)) as box:
        with pytest.raises(
            FileUnreadableError, match=r"to 16 MB under index.parse_memory_mb \(64 MB\)"
        ):
            box.parse(PdfParser(), "bomb.pdf", "", bomb)
        note = box.parse(PdfParser(), "energy.pdf", "", make_pdf(ENERGY))
    assert "Photovoltaic" in note.text


def test_a_parse_over_the_memory_budget_is_stopped_and_the_box_goes_on() -> None:
    """Under the decoding cap, but millions of operators: the parse box's address-space
    limit ends it with a MemoryError, the file is refused naming the budget, and a
    fresh child parses the next file."""
    from tests.pdfs import operator_pdf

    with ParseBox(IndexConfig(parse_memory_mb=64, parse_timeout=600)) as box:
        with pytest.raises(FileUnreadableError, match=r"more memory than index.parse_memory_mb"):
            box.parse(PdfParser(), "ops.pdf", "", operator_pdf(3, 15))
        note = box.parse(PdfParser(), "energy.pdf", "", make_pdf(ENERGY))
        assert box.started == 2
    assert "Photovoltaic" in note.text
