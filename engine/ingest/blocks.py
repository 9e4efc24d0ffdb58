"""Structure detection for chunking: text cut into blocks, headings found.

A :class:`Block` is a run of text between blank lines, a heading line or a
fenced code block, held as offsets into the document text. The scanners here
(plain text, markdown, reStructuredText) only find where blocks and headings
are; :mod:`engine.ingest.chunking` groups them into sections and
:mod:`engine.ingest.chunkpack` packs them into chunks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


def trim_span(text: str, s: int, e: int) -> tuple[int, int]:
    """``text[s:e]`` without its leading and trailing whitespace, as (start, end)."""
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return s, e


@dataclass(slots=True)
class Block:
    """A run of text between blank lines (or a heading line) as offsets into the text."""

    start: int
    end: int
    level: int = 0  # heading level 1-6; 0 for body text
    title: str = ""
    lines: bool = False  # cut at lines (code, fenced blocks), not at sentences


_BLANK = re.compile(r"\n[^\S\n]*\n")
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))??(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_RST_ADORN = re.compile(r"([!-/:-@\[-`{-~])\1{2,}[ \t]*$")
_NOT_SETEXT_TITLE = re.compile(r"\s*(?:[-*+>|]|\d+[.)])(?:\s|$)")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def _clean_title(title: str) -> str:
    title = _LINK.sub(r"\1", title)
    return " ".join(title.replace("`", "").replace("**", "").replace("__", "").split())[:200]


def text_blocks(text: str, start: int, end: int, *, lines: bool) -> list[Block]:
    """Blank-line separated blocks of ``text[start:end]``, trimmed, none empty."""
    out: list[Block] = []
    prev = start
    for m in _BLANK.finditer(text, start, end):
        a, z = trim_span(text, prev, m.start())
        if a < z:
            out.append(Block(a, z, lines=lines))
        prev = m.end()
    a, z = trim_span(text, prev, end)
    if a < z:
        out.append(Block(a, z, lines=lines))
    return out


def markdown_blocks(text: str) -> list[Block]:
    """Headings (ATX and setext), fenced code blocks and paragraphs, in order."""
    out: list[Block] = []
    para_start = para_end = -1
    para_lines = 0
    fence = ""
    fence_start = 0
    pos = 0

    def close() -> None:
        nonlocal para_start
        if para_start >= 0:
            a, z = trim_span(text, para_start, para_end)
            if a < z:
                out.append(Block(a, z))
            para_start = -1

    for line in text.split("\n"):
        line_start, line_end = pos, pos + len(line)
        pos = line_end + 1
        if fence:
            stripped = line.strip()
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                a, z = trim_span(text, fence_start, line_end)
                out.append(Block(a, z, lines=True))
                fence = ""
            continue
        stripped = line.lstrip()
        if not stripped:
            close()
            continue
        first = stripped[0]
        if first in "`~":
            m = _FENCE.match(line)
            if m and not (first == "`" and "`" in line[m.end():]):
                close()
                fence, fence_start = m.group(1), line_start
                continue
        elif first == "#":
            m = _ATX.match(line)
            if m:
                close()
                a, z = trim_span(text, line_start, line_end)
                out.append(Block(a, z, level=len(m.group(1)),
                                 title=_clean_title(m.group(2) or "")))
                continue
        elif first in "=-" and para_start >= 0 and para_lines == 1:
            m = _SETEXT.match(line)
            title = text[para_start:para_end]
            if m and not _NOT_SETEXT_TITLE.match(title):
                a, z = trim_span(text, para_start, line_end)
                out.append(Block(a, z, level=1 if first == "=" else 2,
                                 title=_clean_title(title)))
                para_start = -1
                continue
        if para_start < 0:
            para_start, para_lines = line_start, 0
        para_end = line_end
        para_lines += 1
    if fence:
        a, z = trim_span(text, fence_start, len(text))
        if a < z:
            out.append(Block(a, z, lines=True))
    close()
    return out


def rst_blocks(text: str) -> list[Block]:
    """reStructuredText: titles underlined (and maybe overlined) by punctuation, paragraphs.

    Heading levels follow the order in which adornment styles first appear,
    as in docutils.
    """
    lines = text.split("\n")
    starts = [0] * len(lines)
    pos = 0
    for n, line in enumerate(lines):
        starts[n] = pos
        pos += len(line) + 1
    styles: list[tuple[str, bool]] = []
    heads: list[Block] = []
    n = 0
    while n + 1 < len(lines):
        title, under = lines[n], lines[n + 1]
        m = _RST_ADORN.match(under)
        if (m and title.strip() and not _RST_ADORN.match(title)
                and len(under.rstrip()) >= min(len(title.rstrip()), 3)):
            over = n > 0 and lines[n - 1].rstrip() == under.rstrip()
            if n == 0 or over or not lines[n - 1].strip():
                style = (m.group(1), over)
                if style not in styles:
                    styles.append(style)
                first = n - 1 if over else n
                a, z = trim_span(text, starts[first], starts[n + 1] + len(under))
                heads.append(Block(a, z, level=min(6, styles.index(style) + 1),
                                   title=_clean_title(title)))
                n += 2
                continue
        n += 1
    out: list[Block] = []
    prev = 0
    for head in heads:
        out.extend(text_blocks(text, prev, head.start, lines=False))
        out.append(head)
        prev = head.end
    out.extend(text_blocks(text, prev, len(text), lines=False))
    return out
