"""Turn one file (or a string) into a :class:`LoadedDocument`.

The loader decides the format from the extension, checks the size before
reading, decodes text (UTF-8, UTF-8/16/32 with a BOM, else Windows-1252 /
Latin-1 when the bytes look like text), extracts structured formats through :mod:`engine.ingest.formats`, and
reports every file it will not ingest as :class:`FileRejected` with a stable
reason, so that a folder ingest can count skips by cause. A file name that is
not valid UTF-8 is kept with ``\\xNN`` escapes in its uri and title.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import stat
from pathlib import Path

from engine.errors import (
    REJECT_BINARY,
    REJECT_BLOB,
    REJECT_EMPTY,
    REJECT_MALFORMED,
    REJECT_SPECIAL,
    REJECT_TOO_LARGE,
    REJECT_UNPACKED_TOO_LARGE,
    REJECT_UNREADABLE,
    REJECT_UNSUPPORTED,
    FileRejected,
    InvalidInput,
    NotUtf8,
)
from engine.ingest import formats as fm
from engine.ingest.blobs import blob_kind
from engine.ingest.config import IngestConfig
from engine.pathnames import shown
from engine.tokens import TokenCounter
from engine.types import SOURCE_KINDS, LoadedDocument

DEFAULT_MAX_BYTES = 20_000_000
SNIFF_BYTES = 8192
TEXT_FORMATS = ("text", "markdown", "code", "html", "pdf", "docx", "json", "conversation")
_TITLE_CHARS = 80

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


# Characters that plain text (in any encoding) almost never holds: C0 controls other
# than whitespace, DEL and the C1 range. Random binary bytes are about 1 in 4 such.
_CONTROLS = dict.fromkeys([*(c for c in range(32) if chr(c) not in "\t\n\r\f\v"),
                           *range(0x7F, 0xA0)])
LEGACY_MAX_CONTROL_SHARE = 100  # 1 control character in 100 at most


class _NotText(Exception):
    """The bytes are not text we can decode."""


def decode_text(data: bytes, *, legacy: bool = True) -> str:
    """Decode file bytes; raise ``_NotText`` for binary data.

    A byte-order mark selects UTF-8/16/32; otherwise the data must be free of
    NUL bytes and is read as UTF-8, or (``legacy``) as Windows-1252 / Latin-1
    when it is not UTF-8 and holds almost no control characters. Line ends
    become ``\\n``.
    """
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                text = data.decode(codec)
            except UnicodeDecodeError as exc:
                raise _NotText from exc
            break
    else:
        if b"\x00" in data:
            raise _NotText
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            if not legacy:
                raise _NotText from exc
            text = _legacy_text(data)
    if "\x00" in text:
        raise _NotText
    return normalize_newlines(text)


def _legacy_text(data: bytes) -> str:
    """Bytes that are not UTF-8, read as Windows-1252 (Latin-1 where it has no character);
    ``_NotText`` unless they look like text (at most 1 control character in 100)."""
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    controls = len(text) - len(text.translate(_CONTROLS))
    if controls * LEGACY_MAX_CONTROL_SHARE > len(text):
        raise _NotText
    return text


def normalize_newlines(text: str) -> str:
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _looks_like_text(head: bytes) -> bool:
    """Whether the first bytes of a file of unknown type are text."""
    if any(head.startswith(bom) for bom, _ in _BOMS):
        return True
    if b"\x00" in head:
        return False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        try:
            _legacy_text(head)
        except _NotText:
            return False
    return True


def _read(path: Path, max_bytes: int) -> tuple[bytes, os.stat_result]:
    try:
        st = path.stat()
    except OSError as exc:
        raise FileRejected(shown(path), REJECT_UNREADABLE) from exc
    if stat.S_ISDIR(st.st_mode):
        raise FileRejected(shown(path), REJECT_UNREADABLE)
    if not stat.S_ISREG(st.st_mode):  # a FIFO, socket or device: never opened
        raise FileRejected(shown(path), REJECT_SPECIAL)
    if st.st_size > max_bytes:
        raise FileRejected(shown(path), REJECT_TOO_LARGE)
    try:
        with path.open("rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise FileRejected(shown(path), REJECT_UNREADABLE) from exc
    if len(data) > max_bytes:  # grew after stat
        raise FileRejected(shown(path), REJECT_TOO_LARGE)
    return data, st


# The format families known by extension alone, in the order they are tried.
_FAMILIES = (("markdown", fm.MARKDOWN_EXTS), ("text", fm.TEXT_EXTS), ("rst", fm.RST_EXTS),
             ("html", fm.HTML_EXTS), ("json", fm.JSON_EXTS), ("jsonl", fm.JSONL_EXTS),
             ("pdf", fm.PDF_EXTS), ("docx", fm.DOCX_EXTS))


def _classify(path: Path) -> tuple[str, str | None]:
    """(format family, language) from the file name; family "unknown" means sniff."""
    ext = path.suffix.lower()
    for family, exts in _FAMILIES:
        if ext in exts:
            return family, None
    if ext in fm.CODE_LANGUAGES:
        return "code", fm.CODE_LANGUAGES[ext]
    name = path.name.lower()
    if name in fm.CODE_FILENAMES:
        return "code", fm.CODE_FILENAMES[name]
    if ext in fm.BINARY_EXTS:
        return "binary", None
    return "unknown", None


def _html_text(data: bytes, where: str) -> str:
    """UTF-8 (or a BOM), else the charset the page declares, else Windows-1252."""
    try:
        return decode_text(data, legacy=False)
    except _NotText:
        pass
    from bs4.dammit import EncodingDetector

    if b"\x00" in data:
        raise FileRejected(where, REJECT_BINARY)
    declared = EncodingDetector.find_declared_encoding(data, is_html=True)
    if declared:
        try:
            return normalize_newlines(data.decode(declared))
        except (LookupError, UnicodeDecodeError):
            pass
    try:
        return decode_text(data)
    except _NotText as exc:
        raise FileRejected(where, REJECT_BINARY) from exc


def load_file(path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES,
              blobs: IngestConfig | None = None) -> LoadedDocument:
    """Load one file as text plus metadata, or raise :class:`FileRejected`.

    With ``blobs`` (the ingest config), text that holds data rather than words
    (``engine.ingest.blobs``) is rejected with reason ``blob``, its kind as detail.

    The size is checked by ``stat`` before any byte is read. ``uri`` is the
    resolved absolute path, ``title`` the file name (or the HTML ``<title>``
    / DOCX core title), ``created_at`` the modification time, and ``meta``
    holds ``bytes`` and ``mtime`` (plus ``pages`` for PDF, ``markup`` for RST).
    """
    path = Path(path)
    where = shown(path)
    family, language = _classify(path)
    data, st = _read(path, max_bytes)
    if not data.strip():
        raise FileRejected(where, REJECT_EMPTY)
    title: str | None = None
    meta: dict[str, object] = {"bytes": st.st_size, "mtime": st.st_mtime}
    fmt, kind = "text", "document"
    try:
        if family == "pdf":
            got = fm.extract_pdf(data)
            text, fmt = got.text, "pdf"
            meta.update(got.meta)
        elif family == "docx":
            got = fm.extract_docx(data)
            text, title, fmt = fm.tidy_blank_lines(got.text), got.title, "docx"
        elif family == "html":
            got = fm.extract_html(_html_text(data, where))
            text, title, fmt = fm.tidy_blank_lines(got.text), got.title, "html"
        else:
            if family in ("binary", "unknown") and not _looks_like_text(data[:SNIFF_BYTES]):
                raise FileRejected(where, REJECT_UNSUPPORTED)
            try:
                text = decode_text(data)
            except _NotText as exc:
                reason = REJECT_UNSUPPORTED if family == "binary" else REJECT_BINARY
                raise FileRejected(where, reason) from exc
            if family in ("json", "jsonl"):
                fm.check_json(text, lines=family == "jsonl")
                fmt = "json"
            elif family == "markdown":
                fmt = "markdown"
            elif family == "code":
                fmt, kind = "code", "code"
            elif family == "rst":
                meta["markup"] = "rst"
    except fm.UnpackedTooLarge as exc:
        raise FileRejected(where, REJECT_UNPACKED_TOO_LARGE) from exc
    except fm.FormatError as exc:
        raise FileRejected(where, REJECT_MALFORMED) from exc
    if not text.strip():
        raise FileRejected(where, REJECT_EMPTY)
    if blobs is not None:
        kind_of = blob_kind(path.name, text, blobs, TokenCounter.shared().count)
        if kind_of is not None:
            raise FileRejected(where, REJECT_BLOB, detail=kind_of)
    try:
        uri = shown(path.resolve())
    except OSError:
        uri = shown(path.absolute())
    return LoadedDocument(
        uri=uri, kind=kind, title=title or shown(path.name), text=text, fmt=fmt,
        language=language if fmt == "code" else None, created_at=st.st_mtime, meta=meta,
    )


def load_text(
    text: str,
    *,
    title: str | None = None,
    kind: str = "text",
    uri: str | None = None,
    created_at: float | None = None,
    fmt: str = "text",
    language: str | None = None,
) -> LoadedDocument:
    """Wrap a string given by a caller (pasted text, stdin) as a document.

    ``uri`` defaults to ``text:<sha256 prefix>`` so the same text gets the
    same uri; ``title`` defaults to the first line, shortened. Raises
    :class:`InvalidInput` for non-string or blank text (:class:`NotUtf8` for lone
    surrogates), an unknown ``kind``
    or ``fmt``, or ``fmt="json"`` text that is neither JSON nor JSON Lines.
    """
    if not isinstance(text, str):
        raise InvalidInput("text must be a string")
    if kind not in SOURCE_KINDS:
        raise InvalidInput(f"unknown source kind {kind!r}; expected one of {SOURCE_KINDS}")
    if fmt not in TEXT_FORMATS:
        raise InvalidInput(f"unknown format {fmt!r}; expected one of {TEXT_FORMATS}")
    text = normalize_newlines(text)
    if not text.strip():
        raise InvalidInput("the text is empty (or only blanks): there is nothing to store",
                           field="text")
    if fmt == "json":
        try:
            fm.check_json(text, lines=False)
        except fm.FormatError:
            try:
                fm.check_json(text, lines=True)
            except fm.FormatError as exc:
                raise InvalidInput("text is not valid JSON or JSON Lines") from exc
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise NotUtf8("text holds characters that are not valid Unicode") from exc
    if uri is None:
        uri = "text:" + hashlib.sha256(data).hexdigest()[:16]
    if title is None:
        first = next(line.strip() for line in text.splitlines() if line.strip())
        title = first if len(first) <= _TITLE_CHARS else first[: _TITLE_CHARS - 1] + "…"
    return LoadedDocument(
        uri=uri, kind=kind, title=title, text=text, fmt=fmt,
        language=language if fmt == "code" else None, created_at=created_at,
        meta={"bytes": len(data)},
    )
