"""PDF files by page: one section per page, so a hit can say which page to open.

The text is what pypdf extracts from each page's text layer, pages joined by blank
lines; line numbers refer to that text. A PDF that is encrypted with a password, or
too damaged to open, raises ``FileUnreadableError`` with the reason, which indexing
records as the file's failure (``vaultsearch status`` lists it) instead of crashing.

A file that reaches one of pypdf's safety limits is refused whole: pages can share one
content stream, and a 16 KB file whose 100 pages share a 70 MB stream would otherwise
decode it, and fail, once per page. Pages that share their content and resources are
extracted once for the same reason.
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


_OUTPUT_LIMITS = (
    "zlib_maximum_output_length", "lzw_maximum_output_length", "run_length_maximum_output_length",
    "jbig2_maximum_output_length", "brotli_maximum_output_length",
    "array_based_stream_maximum_output_length", "maximum_declared_stream_length",
    "image_maximum_buffer_size",
)  # fmt: skip
_decode_cap: tuple[int, int] | None = None
"""(MB a stream may decode to, the memory budget in MB) in a parse box."""


def limit_decoding(memory_bytes: int) -> None:
    """Hold every stream pypdf decodes to a quarter of the memory budget (the decoded
    bytes, the parsed operators and the text live side by side), where that is below
    pypdf's own limits, so a stream too big for the budget fails as a limit with a
    reason rather than as an allocation somewhere."""
    global _decode_cap
    import pypdf

    cap = memory_bytes // 4
    overwrite = getattr(pypdf, "overwrite_configuration", None)
    if overwrite is None:  # an older pypdf: no configuration object, only its own limits
        return
    current = pypdf.get_configuration()
    lower = {k: cap for k in _OUTPUT_LIMITS if hasattr(current, k) and getattr(current, k) > cap}
    if lower:
        overwrite(**lower)
        _decode_cap = (cap >> 20, memory_bytes >> 20)


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
    from pypdf.errors import LimitReachedError

    parts: list[str] = []
    sections: list[Section] = []
    warnings: list[str] = []
    seen: dict[tuple[Any, ...], str] = {}
    pos = line = 0
    for number, page in enumerate(pages, start=1):
        key = _shared_key(page)
        try:
            if key is not None and key in seen:
                page_text = seen[key]
            else:
                page_text = _clean(page.extract_text() or "")
        except LimitReachedError as exc:
            raise FileUnreadableError(_over_limit(number, exc)) from None
        except MemoryError:
            raise
        except Exception as exc:  # one bad page must not lose the others
            warnings.append(f"page {number}: text not extracted ({_short(exc)})")
            page_text = ""
        if key is not None:
            seen[key] = page_text
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


def _shared_key(page: Any) -> tuple[Any, ...] | None:
    """What a page's text depends on, when its content is a shared object: the content
    reference(s), the resources (a reference, or the text of a page's own dictionary)
    and the rotation. None when the content is the page's own, as nothing can repeat."""
    from pypdf.generic import ArrayObject, IndirectObject

    try:
        contents = page.raw_get("/Contents")
        if isinstance(contents, IndirectObject):
            refs: tuple[Any, ...] = ((contents.idnum, contents.generation),)
        elif isinstance(contents, ArrayObject) and all(
            isinstance(c, IndirectObject) for c in contents
        ):
            refs = tuple((c.idnum, c.generation) for c in contents)
        else:
            return None
        resources = page.raw_get("/Resources") if "/Resources" in page else None
        res_key = (
            (resources.idnum, resources.generation)
            if isinstance(resources, IndirectObject)
            else repr(resources)
        )
        return (refs, res_key, repr(page.get("/Rotate")))
    except Exception:  # a key only saves work: without one the page is read as usual
        return None


def _over_limit(number: int, exc: BaseException) -> str:
    reason = _short(exc).rstrip(".")
    if _decode_cap is not None:
        cap, budget = _decode_cap
        reason += f"; a stream may decode to {cap} MB under index.parse_memory_mb ({budget} MB)"
    return f"PDF over a parsing limit on page {number} ({reason}); skipped."


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
