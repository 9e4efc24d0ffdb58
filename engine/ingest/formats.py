"""Per-format text extraction (HTML, PDF, DOCX, JSON) and the extension tables.

Each extractor turns one file format into plain text with a markdown-like
structure the chunker understands (``#`` heading lines, blank lines between
blocks, tab-separated table rows). Parsing is left to maintained libraries
(beautifulsoup4 with lxml, pypdf, python-docx, json); a parse failure raises
:class:`FormatError`, which the loader reports as a malformed file. Zip-based
formats are checked against unpacked-size and ratio limits first
(:func:`check_zip`), so a zip bomb is refused before anything is inflated.
"""

from __future__ import annotations

import io
import json
import re
import warnings
import zipfile
from dataclasses import dataclass, field
from typing import Any

MARKDOWN_EXTS = frozenset({".md", ".markdown", ".mdown", ".mkd", ".mdx"})
TEXT_EXTS = frozenset({".txt", ".text", ".log"})
RST_EXTS = frozenset({".rst"})
HTML_EXTS = frozenset({".html", ".htm", ".xhtml"})
JSON_EXTS = frozenset({".json"})
JSONL_EXTS = frozenset({".jsonl", ".ndjson"})
PDF_EXTS = frozenset({".pdf"})
DOCX_EXTS = frozenset({".docx"})

CODE_LANGUAGES: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript",
    ".cjs": "javascript", ".jsx": "javascript", ".ts": "typescript", ".tsx": "typescript",
    ".java": "java", ".go": "go", ".rs": "rust", ".c": "c", ".h": "c", ".cc": "cpp",
    ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".cs": "csharp", ".rb": "ruby",
    ".php": "php", ".swift": "swift", ".kt": "kotlin", ".kts": "kotlin", ".scala": "scala",
    ".sh": "shell", ".bash": "shell", ".zsh": "shell", ".ps1": "powershell", ".sql": "sql",
    ".lua": "lua", ".r": "r", ".pl": "perl", ".pm": "perl", ".hs": "haskell", ".ex": "elixir",
    ".exs": "elixir", ".clj": "clojure", ".dart": "dart", ".vue": "vue", ".svelte": "svelte",
    ".css": "css", ".scss": "scss", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml",
    ".ini": "ini", ".cfg": "ini", ".xml": "xml",
}
CODE_FILENAMES: dict[str, str] = {"makefile": "make", "dockerfile": "dockerfile"}

# Known binary types: rejected as "unsupported" unless the bytes turn out to be text.
BINARY_EXTS = frozenset({
    ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".webp", ".ico", ".tif", ".tiff", ".heic", ".psd",
    ".zip", ".tar", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".rar", ".jar", ".war",
    ".whl", ".egg", ".exe", ".dll", ".so", ".dylib", ".o", ".a", ".lib", ".bin", ".class",
    ".pyc", ".pyo", ".wasm", ".mp3", ".mp4", ".m4a", ".wav", ".flac", ".ogg", ".avi", ".mov",
    ".mkv", ".webm", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".sqlite", ".db", ".iso",
    ".dmg", ".msi", ".deb", ".rpm", ".xls", ".xlsx", ".ppt", ".pptx", ".doc", ".odt", ".ods",
    ".npy", ".npz", ".pkl", ".pt", ".safetensors", ".onnx", ".parquet",
})


class FormatError(Exception):
    """A file of a known format failed to parse (reported as ``malformed``)."""


class UnpackedTooLarge(FormatError):
    """A compressed container would unpack past the limits (a zip bomb, or just too big)."""


# Limits on what a zip-based file (DOCX) may unpack to, checked from its directory
# before any member is inflated. Python's zipfile never inflates a member past the size
# its directory declares, so these bound what is read; the parsed XML then costs about
# 10x its size in lxml and python-docx objects, hence 64 MB for all members together.
# The ratio limit catches bombs early: Word's own XML deflates about 5-20 to 1.
ZIP_MAX_UNPACKED = 64 * 1024 * 1024
ZIP_MAX_RATIO = 100
ZIP_RATIO_FLOOR = 1024 * 1024  # members smaller than this may have any ratio
ZIP_MAX_MEMBERS = 10_000


def check_zip(data: bytes) -> None:
    """Raise UnpackedTooLarge unless the zip in ``data`` stays within the limits above."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise FormatError("not a zip file") from exc
    if len(infos) > ZIP_MAX_MEMBERS:
        raise UnpackedTooLarge(f"{len(infos)} members in the zip")
    total = 0
    for info in infos:
        total += info.file_size
        ratio = info.file_size / max(1, info.compress_size)
        if info.file_size > ZIP_RATIO_FLOOR and ratio > ZIP_MAX_RATIO:
            raise UnpackedTooLarge(f"a member unpacks {ratio:.0f}x its packed size")
    if total > ZIP_MAX_UNPACKED:
        raise UnpackedTooLarge(f"unpacks to {total} bytes")


@dataclass
class Extracted:
    """Text pulled out of a structured file, with what the loader needs to know."""

    text: str
    title: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


_WS = re.compile(r"\s+")
_BLANK_RUNS = re.compile(r"\n{3,}")


def _squash(text: str) -> str:
    return _WS.sub(" ", text).strip()


# ---------------------------------------------------------------- HTML

_HTML_DROP = ("script", "style", "nav", "noscript", "template", "svg", "iframe", "object",
              "canvas")
_CELL = "\ue000"  # marks a table cell start while text is collected (private use)
_HTML_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_HTML_BLOCKS = frozenset({
    "p", "div", "section", "article", "main", "header", "footer", "aside", "blockquote",
    "ul", "ol", "dl", "table", "figure", "figcaption", "form", "fieldset", "address",
    "details", "summary", "hr", "body", "html",
})
_HTML_LINES = frozenset({"li", "tr", "dt", "dd", "caption"})  # one line each, same block


class _HtmlText:
    """Collects blocks of text from a parsed HTML tree without recursion."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.buf: list[str] = []

    def flush(self) -> None:
        text = "".join(self.buf)
        self.buf = []
        lines: list[str] = []
        for line in text.split("\n"):
            if _CELL in line:
                cells = [_squash(cell) for cell in line.split(_CELL)]
                line = "\t".join(cells[1:] if not cells[0] else cells)
                if not line.strip():
                    continue
            else:
                line = _squash(line)
            if line:
                lines.append(line)
        if lines:
            self.blocks.append("\n".join(lines))

    def run(self, root: Any) -> str:
        from bs4 import Tag
        from bs4.element import NavigableString, PreformattedString

        stack: list[tuple[Any, bool]] = [(root, False)]
        while stack:
            node, leaving = stack.pop()
            if leaving:
                if node.name in _HTML_BLOCKS:
                    self.flush()
                elif node.name in _HTML_LINES:
                    self.buf.append("\n")
                continue
            if isinstance(node, NavigableString):
                if not isinstance(node, PreformattedString):  # comments, doctype, CDATA
                    self.buf.append(str(node))
                continue
            if not isinstance(node, Tag):
                continue
            name = node.name
            if name in _HTML_HEADINGS:
                self.flush()
                title = _squash(node.get_text(" "))
                if title:
                    self.blocks.append("#" * _HTML_HEADINGS[name] + " " + title)
                continue
            if name == "pre":
                self.flush()
                code = node.get_text().strip("\n")
                if code.strip():
                    self.blocks.append(code)
                continue
            if name == "br":
                self.buf.append("\n")
                continue
            if name in ("td", "th"):
                self.buf.append(_CELL)
            if name in _HTML_BLOCKS:
                self.flush()
            elif name in _HTML_LINES:
                self.buf.append("\n- " if name == "li" else "\n")
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node.contents))
        self.flush()
        return "\n\n".join(self.blocks)


def extract_html(markup: str) -> Extracted:
    """Visible text of an HTML page, headings as ``#`` lines, title from ``<title>``."""
    from bs4 import BeautifulSoup

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            soup = BeautifulSoup(markup, "lxml")
            title_tag = soup.find("title")
            title = _squash(title_tag.get_text()) if title_tag is not None else ""
            for tag in soup.find_all(_HTML_DROP):
                tag.decompose()
            head = soup.find("head")
            if head is not None:
                head.decompose()
            text = _HtmlText().run(soup)
    except Exception as exc:  # the parser is lenient; anything raised means broken input
        raise FormatError("html parse failed") from exc
    return Extracted(text=text, title=title or None)


# ---------------------------------------------------------------- PDF

def extract_pdf(data: bytes) -> Extracted:
    """Text of each page joined with blank lines; page start offsets in meta["pages"]."""
    from pypdf import PasswordType, PdfReader

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
                raise FormatError("pdf needs a password")
            pages, failed = [], 0
            for page in reader.pages:
                try:
                    pages.append(page.extract_text() or "")
                except Exception:  # noqa: BLE001  (one broken page must not lose the rest)
                    pages.append("")
                    failed += 1
            if pages and failed == len(pages):
                raise FormatError("no page of the pdf could be read")
    except FormatError:
        raise
    except Exception as exc:
        raise FormatError("pdf parse failed") from exc
    parts: list[str] = []
    starts: list[int] = []
    pos = 0
    for raw in pages:
        text = raw.replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n").strip()
        starts.append(pos)
        parts.append(text)
        pos += len(text) + 2
    return Extracted(text="\n\n".join(parts),
                     meta={"pages": starts, "page_count": len(pages)})


# ---------------------------------------------------------------- DOCX

def extract_docx(data: bytes) -> Extracted:
    """Paragraphs and tables in document order; ``Heading N`` styles become ``#`` lines."""
    import docx
    from docx.table import Table

    check_zip(data)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            document = docx.Document(io.BytesIO(data))
            blocks: list[str] = []
            for item in document.iter_inner_content():
                if isinstance(item, Table):
                    table = _docx_table(item)
                    if table:
                        blocks.append(table)
                    continue
                block = _docx_paragraph(item)
                if block:
                    blocks.append(block)
            title = _squash(document.core_properties.title or "") or None
    except Exception as exc:
        raise FormatError("docx parse failed") from exc
    return Extracted(text="\n\n".join(blocks), title=title)


_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)


def _docx_paragraph(paragraph: Any) -> str:
    text = paragraph.text.replace("\r", "\n").strip()
    if not text:
        return ""
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    match = _HEADING_STYLE.match(style.strip())
    if match:
        return "#" * min(6, max(1, int(match.group(1)))) + " " + _squash(text)
    if style.strip().lower() == "title":
        return "# " + _squash(text)
    if style.lower().startswith("list"):
        return "- " + text
    return text


def _docx_table(table: Any) -> str:
    rows: list[str] = []
    for row in table.rows:
        cells: list[str] = []
        last = None
        for cell in row.cells:
            if cell._tc is last:  # a merged cell repeats; keep it once
                continue
            last = cell._tc
            cells.append(_squash(cell.text))
        if any(cells):
            rows.append("\t".join(cells))
    return "\n".join(rows)


# ---------------------------------------------------------------- JSON

def check_json(text: str, *, lines: bool) -> None:
    """Raise FormatError unless ``text`` is JSON (or JSON Lines when ``lines``)."""
    try:
        if lines:
            for line in text.splitlines():
                if line.strip():
                    json.loads(line)
        else:
            json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise FormatError("json parse failed") from exc


def tidy_blank_lines(text: str) -> str:
    """Collapse runs of blank lines left by extraction."""
    return _BLANK_RUNS.sub("\n\n", text).strip()
