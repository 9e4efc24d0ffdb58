"""Loading files of every supported format, and every reason a file is rejected."""

from __future__ import annotations

import os
from pathlib import Path

import docx
import pytest
from pypdf import PdfWriter

from engine.errors import (
    REJECT_BINARY,
    REJECT_EMPTY,
    REJECT_MALFORMED,
    REJECT_TOO_LARGE,
    REJECT_UNREADABLE,
    REJECT_UNSUPPORTED,
    FileRejected,
    InvalidInput,
    NotUtf8,
)
from engine.ingest.loaders import DEFAULT_MAX_BYTES, load_file, load_text
from tests.engine.ingest.pdfgen import make_pdf

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "ingest"


def _reason(path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    with pytest.raises(FileRejected) as info:
        load_file(path, max_bytes=max_bytes)
    assert info.value.path == str(path)
    assert str(path) in str(info.value)
    return info.value.reason


def test_markdown_file() -> None:
    path = FIXTURES / "guide.md"
    doc = load_file(path)
    assert doc.fmt == "markdown" and doc.kind == "document" and doc.language is None
    assert doc.text == path.read_text(encoding="utf-8")
    assert doc.title == "guide.md"
    assert doc.uri == str(path.resolve())
    st = path.stat()
    assert doc.created_at == st.st_mtime
    assert doc.meta["bytes"] == st.st_size and doc.meta["mtime"] == st.st_mtime


def test_plain_text_and_csv_by_sniffing() -> None:
    doc = load_file(FIXTURES / "notes.txt")
    assert doc.fmt == "text" and "日本語" in doc.text and "🙂" in doc.text
    csv = load_file(FIXTURES / "table.csv")  # unknown extension, text content
    assert csv.fmt == "text" and csv.text.startswith("name,value")


def test_rst_is_text_with_markup_flag() -> None:
    doc = load_file(FIXTURES / "manual.rst")
    assert doc.fmt == "text" and doc.meta["markup"] == "rst"


@pytest.mark.parametrize(("name", "language"), [("shapes.py", "python"), ("server.go", "go")])
def test_code_files(name: str, language: str) -> None:
    doc = load_file(FIXTURES / name)
    assert (doc.fmt, doc.kind, doc.language) == ("code", "code", language)


def test_html_keeps_structure_and_drops_chrome() -> None:
    doc = load_file(FIXTURES / "page.html")
    assert doc.fmt == "html" and doc.title == "Example page"
    text = doc.text
    assert "# Main title" in text.splitlines() and "## Details" in text.splitlines()
    assert "First paragraph with bold and a link." in text
    assert "- one item\n- two items" in text
    assert "name\tvalue\nalpha\t1" in text
    assert "  keep   this\n    spacing" in text
    for hidden in ("do not index", "color: red", "Home", "a comment", "enable scripts"):
        assert hidden not in text


def test_html_latin1_with_declared_charset(tmp_path: Path) -> None:
    path = tmp_path / "old.html"
    path.write_bytes(b'<html><head><meta charset="iso-8859-1"><title>Caf\xe9</title></head>'
                     b"<body><p>cr\xe8me br\xfbl\xe9e</p></body></html>")
    doc = load_file(path)
    assert doc.title == "Café" and "crème brûlée" in doc.text


def test_json_and_jsonl() -> None:
    doc = load_file(FIXTURES / "records.json")
    assert doc.fmt == "json" and '"tags"' in doc.text
    lines = load_file(FIXTURES / "events.jsonl")
    assert lines.fmt == "json" and '"second"' in lines.text


def test_utf16_with_bom() -> None:
    doc = load_file(FIXTURES / "utf16.txt")
    assert doc.text == "Hi from UTF-16\n"


def test_crlf_becomes_lf(tmp_path: Path) -> None:
    path = tmp_path / "dos.txt"
    path.write_bytes(b"\xef\xbb\xbfone\r\ntwo\rthree\r\n")
    assert load_file(path).text == "one\ntwo\nthree\n"


def test_pdf_pages(tmp_path: Path) -> None:
    path = tmp_path / "report.pdf"
    path.write_bytes(make_pdf([["First page (one).", "Second line."], ["Page two."]]))
    doc = load_file(path)
    assert doc.fmt == "pdf" and doc.kind == "document" and doc.title == "report.pdf"
    assert doc.meta["page_count"] == 2
    first, second = doc.meta["pages"]
    assert first == 0 and doc.text[second:].startswith("Page two.")
    assert "First page (one)." in doc.text[:second]


def test_pdf_encrypted_with_empty_user_password_still_loads(tmp_path: Path) -> None:
    plain = tmp_path / "plain.pdf"
    plain.write_bytes(make_pdf([["Readable by anyone."]]))
    writer = PdfWriter(clone_from=plain)
    writer.encrypt(user_password="", owner_password="owner", algorithm="AES-128")
    path = tmp_path / "owner-only.pdf"
    writer.write(path)
    assert "Readable by anyone." in load_file(path).text


def test_docx_headings_and_tables(tmp_path: Path) -> None:
    document = docx.Document()
    document.core_properties.title = "Quarterly notes"
    document.add_heading("Overview", level=1)
    document.add_paragraph("The first paragraph.")
    document.add_heading("Details", level=2)
    document.add_paragraph("An item", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "name", "value"
    table.cell(1, 0).text, table.cell(1, 1).text = "alpha", "1"
    document.add_paragraph("")
    document.add_paragraph("After the table.")
    path = tmp_path / "notes.docx"
    document.save(str(path))
    doc = load_file(path)
    assert doc.fmt == "docx" and doc.title == "Quarterly notes"
    assert doc.text == ("# Overview\n\nThe first paragraph.\n\n## Details\n\n- An item\n\n"
                        "name\tvalue\nalpha\t1\n\nAfter the table.")


def test_docx_title_falls_back_to_file_name(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_paragraph("Body only.")
    path = tmp_path / "plain.docx"
    document.save(str(path))
    assert load_file(path).title == "plain.docx"


# ------------------------------------------------------------------ rejections


def test_reject_missing_file(tmp_path: Path) -> None:
    assert _reason(tmp_path / "nope.txt") == REJECT_UNREADABLE


def test_reject_directory(tmp_path: Path) -> None:
    assert _reason(tmp_path) == REJECT_UNREADABLE


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads anything")
def test_reject_permission_denied(tmp_path: Path) -> None:
    path = tmp_path / "secret.txt"
    path.write_text("hidden", encoding="utf-8")
    path.chmod(0)
    try:
        assert _reason(path) == REJECT_UNREADABLE
    finally:
        path.chmod(0o600)


def test_reject_too_large_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    path = tmp_path / "big.txt"
    path.write_text("a" * 101, encoding="utf-8")

    def no_open(*args: object, **kwargs: object) -> None:
        raise AssertionError("the file was opened")

    monkeypatch.setattr(Path, "open", no_open)
    assert _reason(path, max_bytes=100) == REJECT_TOO_LARGE


def test_size_limit_is_inclusive(tmp_path: Path) -> None:
    path = tmp_path / "fits.txt"
    path.write_text("a" * 100, encoding="utf-8")
    assert load_file(path, max_bytes=100).text == "a" * 100


def test_reject_binary_text_formats() -> None:
    assert _reason(FIXTURES / "nul.txt") == REJECT_BINARY


def test_latin1_text_is_decoded(tmp_path: Path) -> None:
    assert load_file(FIXTURES / "latin1.txt").text == "café crème, encoded as Latin-1\n"
    path = tmp_path / "notes.weird"  # an unknown extension is sniffed the same way
    path.write_bytes("Grüße aus Köln, 20 € – “quoted”\n".encode("cp1252"))
    assert load_file(path).text == "Grüße aus Köln, 20 € – “quoted”\n"
    noise = tmp_path / "noise.txt"  # no NUL, not UTF-8, full of control bytes: binary
    noise.write_bytes(bytes(range(1, 256)) * 4)
    assert _reason(noise) == REJECT_BINARY


def test_reject_binary_markdown(tmp_path: Path) -> None:
    path = tmp_path / "bad.md"
    path.write_bytes(b"# title\n\xff\xfe\x00garbage")
    assert _reason(path) == REJECT_BINARY


@pytest.mark.parametrize("name", ["pixel.png", "program.weird"])
def test_reject_unsupported(name: str) -> None:
    assert _reason(FIXTURES / name) == REJECT_UNSUPPORTED


def test_known_binary_extension_with_text_content_loads(tmp_path: Path) -> None:
    path = tmp_path / "really-text.bin"
    path.write_text("just words", encoding="utf-8")
    assert load_file(path).text == "just words"


@pytest.mark.parametrize("content", [b"", b"   \n\t\n", b"\xef\xbb\xbf  \n"])
def test_reject_empty(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "empty.md"
    path.write_bytes(content)
    assert _reason(path) == REJECT_EMPTY


def test_reject_empty_fixture_and_empty_html(tmp_path: Path) -> None:
    assert _reason(FIXTURES / "blank.md") == REJECT_EMPTY
    path = tmp_path / "blank.html"
    path.write_text("<html><head><title>t</title><script>x()</script></head><body> </body>"
                    "</html>", encoding="utf-8")
    assert _reason(path) == REJECT_EMPTY


def test_reject_pdf_without_text(tmp_path: Path) -> None:
    path = tmp_path / "scan.pdf"
    path.write_bytes(make_pdf([[], []]))
    assert _reason(path) == REJECT_EMPTY


@pytest.mark.parametrize("name", ["broken.json", "broken.jsonl"])
def test_reject_malformed_json(name: str) -> None:
    assert _reason(FIXTURES / name) == REJECT_MALFORMED


@pytest.mark.parametrize("content", [
    b"%PDF-1.4\nthis is not a pdf at all\n%%EOF",
    make_pdf([["cut short"]])[:150],
    b"not a pdf",
])
def test_reject_malformed_pdf(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "broken.pdf"
    path.write_bytes(content)
    assert _reason(path) == REJECT_MALFORMED


def test_reject_pdf_needing_a_password(tmp_path: Path) -> None:
    plain = tmp_path / "plain.pdf"
    plain.write_bytes(make_pdf([["Secret text."]]))
    writer = PdfWriter(clone_from=plain)
    writer.encrypt(user_password="user-pw", owner_password="owner-pw", algorithm="AES-256")
    path = tmp_path / "locked.pdf"
    writer.write(path)
    assert _reason(path) == REJECT_MALFORMED


def test_reject_malformed_docx(tmp_path: Path) -> None:
    path = tmp_path / "broken.docx"
    path.write_bytes(b"PK\x03\x04 this is not a real zip archive")
    assert _reason(path) == REJECT_MALFORMED


# ------------------------------------------------------------------ load_text


def test_load_text_defaults() -> None:
    doc = load_text("  First line of a note\nsecond line\r\n")
    assert doc.text == "  First line of a note\nsecond line\n"
    assert doc.title == "First line of a note"
    assert doc.kind == "text" and doc.fmt == "text" and doc.created_at is None
    assert doc.uri.startswith("text:") and doc.uri == load_text(doc.text).uri
    assert doc.uri != load_text("other").uri


def test_load_text_long_title_is_shortened() -> None:
    doc = load_text("x" * 500)
    assert len(doc.title) == 80 and doc.title.endswith("…")


def test_load_text_explicit_fields() -> None:
    doc = load_text("# Hi\n\nthere", title="T", kind="document", uri="stdin:1",
                    created_at=5.0, fmt="markdown")
    assert (doc.title, doc.kind, doc.uri, doc.created_at, doc.fmt) == (
        "T", "document", "stdin:1", 5.0, "markdown")


@pytest.mark.parametrize(("args", "kwargs"), [
    (("   \n",), {}), ((b"bytes",), {}), (("x",), {"kind": "nope"}),
    (("x",), {"fmt": "nope"}), (("{not json",), {"fmt": "json"}),
])
def test_load_text_rejects_bad_input(args: tuple, kwargs: dict) -> None:
    with pytest.raises(InvalidInput) as info:
        load_text(*args, **kwargs)
    assert "not json" not in str(info.value)  # no user text in messages


def test_load_text_rejects_lone_surrogates() -> None:
    with pytest.raises(NotUtf8):
        load_text("broken \ud800 text")


def test_reject_read_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "locked.txt"
    path.write_text("words", encoding="utf-8")

    def denied(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "open", denied)
    assert _reason(path) == REJECT_UNREADABLE
