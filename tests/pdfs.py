"""Real PDF files made with fpdf2, for the PDF parser's tests."""

from __future__ import annotations

from fpdf import FPDF


def make_pdf(
    pages: list[list[str]], title: str | None = None, user_password: str | None = None
) -> bytes:
    """One PDF page per list of lines; encrypted (RC4) when ``user_password`` is given."""
    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    if title is not None:
        pdf.set_title(title)
    if user_password is not None:
        pdf.set_encryption(owner_password="owner-secret", user_password=user_password)
    for lines in pages:
        pdf.add_page()
        for line in lines:
            pdf.cell(0, 8, line, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())
