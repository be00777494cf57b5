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
