"""Build DOCX zip bombs for tests and benchmarks: a real document whose
word/document.xml inflates to ``inflated`` bytes (padding inside the XML)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import docx

_BLOCK = 1 << 20


def make_docx_bomb(path: Path, inflated: int, *, text: str = "A bomb in disguise.") -> Path:
    """Write a .docx at ``path`` whose document.xml unpacks to about ``inflated`` bytes."""
    plain = io.BytesIO()
    document = docx.Document()
    document.add_paragraph(text)
    document.save(plain)
    with zipfile.ZipFile(io.BytesIO(plain.getvalue())) as src, \
            zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as out:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename != "word/document.xml":
                out.writestr(info, data)
                continue
            head, sep, tail = data.partition(b"<w:body>")
            member = zipfile.ZipInfo("word/document.xml")
            member.compress_type = zipfile.ZIP_DEFLATED
            with out.open(member, "w", force_zip64=True) as fh:
                fh.write(head + sep)
                pad = b" " * _BLOCK
                left = max(0, inflated - len(data))
                while left > 0:
                    fh.write(pad[:min(left, _BLOCK)])
                    left -= _BLOCK
                fh.write(tail)
    return path
