"""PDF files by page: one section per page, so a hit can say which page to open.

The text is what pypdf extracts from each page's text layer, pages joined by blank
lines; line numbers refer to that text. A PDF that is encrypted with a password, or
too damaged to open, raises ``FileUnreadableError`` with the reason, which indexing
records as the file's failure (``vaultsearch status`` lists it) instead of crashing.
"""

from __future__ import annotations

import io
import logging
from pathlib import PurePosixPath
from typing import Any

from vaultsearch.errors import FileUnreadableError
from vaultsearch.models import ParsedNote, Section

_PAGE_GAP = "\n\n"
_TITLE_CHARS = 120


class PdfParser:
    name = "pdf"
    binary = True

    def parse(self, path: str, text: str) -> ParsedNote:
        """A PDF decoded as text has lost its bytes: refuse rather than index garbage."""
        raise FileUnreadableError(f"{path} is a PDF and is read from its bytes, not as text.")

    def parse_bytes(self, path: str, data: bytes) -> ParsedNote:
        from pypdf import PdfReader

        logging.getLogger("pypdf").setLevel(logging.ERROR)  # its recoveries are noise to users
        try:
            reader = PdfReader(io.BytesIO(data), strict=False)
            if reader.is_encrypted:
                _open_without_password(reader)
            pages = list(reader.pages)
            info = reader.metadata
        except FileUnreadableError:
            raise
        except Exception as exc:  # a damaged file can fail anywhere inside pypdf
            raise FileUnreadableError(f"unreadable PDF ({_short(exc)}).") from None
        return _note(path, pages, info)


def _open_without_password(reader: Any) -> None:
    """Many PDFs carry only an owner password (no printing, no copying) and open in any
    viewer with an empty user password: those are read."""
    from pypdf.errors import DependencyError

    try:
        opened = bool(reader.decrypt(""))
    except DependencyError:
        raise FileUnreadableError(
            "encrypted PDF (AES) that needs the cryptography package to open; "
            "pip install cryptography to index it."
        ) from None
    except Exception as exc:  # an unknown security handler, a damaged key
        raise FileUnreadableError(f"encrypted PDF that cannot be opened ({_short(exc)}).") from None
    if not opened:
        raise FileUnreadableError(
            "encrypted PDF that needs a password; save an unencrypted copy to index it."
        )


def _note(path: str, pages: list[Any], info: Any) -> ParsedNote:
    parts: list[str] = []
    sections: list[Section] = []
    warnings: list[str] = []
    pos = line = 0
    for number, page in enumerate(pages, start=1):
        try:
            page_text = _clean(page.extract_text() or "")
        except Exception as exc:  # one bad page must not lose the others
            warnings.append(f"page {number}: text not extracted ({_short(exc)})")
            page_text = ""
        if parts:
            parts.append(_PAGE_GAP)
            pos += len(_PAGE_GAP)
            line += _PAGE_GAP.count("\n")
        parts.append(page_text)
        lines = page_text.count("\n")
        if page_text.strip():
            sections.append(
                Section((f"Page {number}",), line + 1, line + 1 + lines, pos, pos + len(page_text),
                        node_type="page", page=number)
            )  # fmt: skip
        pos += len(page_text)
        line += lines
    if pages and not sections:
        warnings.append("no text layer (a scanned PDF?): nothing to search")
    text = "".join(parts)
    return ParsedNote(
        path=path,
        text=text,
        title=_title(info, text, path),
        sections=tuple(sections),
        warnings=tuple(warnings),
        kind="pdf",
    )


def _clean(text: str) -> str:
    """Page texts are joined by blank lines: a page's own trailing blank lines, form
    feeds and NULs would blur where one ends."""
    return text.replace("\x00", "").replace("\f", "\n").strip("\n")


def _title(info: Any, text: str, path: str) -> str:
    try:
        title = str(info.title or "").strip() if info is not None else ""
    except Exception:
        title = ""
    if not title:
        title = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return title[:_TITLE_CHARS] or PurePosixPath(path).stem


def _short(exc: BaseException) -> str:
    detail = str(exc).splitlines()[0][:120] if str(exc) else ""
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
