"""Real PDF files made with fpdf2, for the PDF parser's tests."""

from __future__ import annotations

from fpdf import FPDF
from fpdf.enums import EncryptionMethod


def make_pdf(
    pages: list[list[str]],
    title: str | None = None,
    user_password: str | None = None,
    method: str = "RC4",
) -> bytes:
    """One PDF page per list of lines; encrypted (``RC4``, ``AES_128``, ``AES_256``)
    when ``user_password`` is given."""
    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    if title is not None:
        pdf.set_title(title)
    if user_password is not None:
        pdf.set_encryption(
            owner_password="owner-secret",
            user_password=user_password,
            encryption_method=EncryptionMethod[method],
        )
    for lines in pages:
        pdf.add_page()
        for line in lines:
            pdf.cell(0, 8, line, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def shared_stream_pdf(
    pages: int,
    megabytes: int,
    own_resources: bool = False,
    text: str = "bomb",
    filler: bytes = b" ",
) -> bytes:
    """A small PDF whose pages all draw one content stream that decodes to ``megabytes``
    MB (``filler`` after a line of ``text``), compressed twice so the file stays a few KB.
    ``own_resources`` gives every page a font dictionary of its own, so nothing tells
    a reader that two pages must give the same text."""
    import io
    import zlib

    from pypdf import PdfWriter
    from pypdf.generic import ArrayObject, DictionaryObject, NameObject, StreamObject

    writer = PdfWriter()
    raw = f"BT /F1 12 Tf 72 712 Td ({text}) Tj ET\n".encode()
    raw += filler * (megabytes * 1_000_000 // len(filler))
    stream = StreamObject()
    stream._data = zlib.compress(zlib.compress(raw, 9), 9)
    stream[NameObject("/Filter")] = ArrayObject([NameObject("/FlateDecode")] * 2)
    contents = writer._add_object(stream)

    def resources(n: int) -> DictionaryObject:
        font = DictionaryObject({
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
            NameObject("/Name"): NameObject(f"/F{n}"),
        })  # fmt: skip
        fonts = DictionaryObject({NameObject("/F1"): writer._add_object(font)})
        return DictionaryObject({NameObject("/Font"): fonts})

    shared = writer._add_object(resources(0))
    for n in range(pages):
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Contents")] = contents
        page[NameObject("/Resources")] = resources(n + 1) if own_resources else shared
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def operator_pdf(pages: int, megabytes: int) -> bytes:
    """Pages sharing a stream of millions of small text operators: under pypdf's
    decoding limits, but a parse of it holds them all in memory at once."""
    return shared_stream_pdf(pages, megabytes, filler=b"[(x) 1 (y)] TJ\n")
