"""Cut a loaded document into token-bounded chunks that follow its structure.

The text is first cut into sections (markdown and RST headings, code
definitions, or the whole text), each section into pieces (paragraphs; an
overlong paragraph into sentences or lines, then into word runs), every piece
counted once. Pieces are packed into chunks up to ``target_tokens``, ending
at the strongest break available (section, paragraph, sentence, word), and
each chunk is counted exactly once more, so ``tokens`` is exact and never
above ``max_tokens``. Consecutive chunks of one section overlap by about
``overlap_tokens``. Tiny neighbouring sections are merged, and a heading is
never left alone at the end of a chunk. Every chunk is an exact slice of the
document text, so offsets can be shown and re-checked later.
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

from engine.errors import ConfigError
from engine.ingest.codesplit import find_definitions
from engine.tokens import TokenCounter
from engine.types import ChunkDraft, LoadedDocument

# Strength of the break before a piece; a chunk prefers to end before a strong one.
SECTION, PARA, SENT, WORD = 4, 3, 2, 1

_SENTENCE = re.compile(r"[.!?…]+[\"'”’»)\]]*[^\S\n]+|[。！？]+[\"”’」』)\]]*[^\S\n]*|[^\S\n]*\n\s*")
_LINE = re.compile(r"\n")
_SPACE = re.compile(r"\s+")
_MARKDOWN_FMTS = frozenset({"markdown", "html", "docx"})


@dataclass(frozen=True)
class ChunkingConfig:
    """Chunk sizes in cl100k tokens; the defaults stay under MiniLM's 256 word pieces."""

    target_tokens: int = 200
    max_tokens: int = 240
    overlap_tokens: int = 30
    min_tokens: int = 20

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError(f"chunking.{f.name} must be an integer")
        if not 16 <= self.target_tokens <= self.max_tokens <= 2000:
            raise ConfigError("chunking needs 16 <= target_tokens <= max_tokens <= 2000")
        if self.overlap_tokens < 0 or 2 * self.overlap_tokens >= self.target_tokens:
            raise ConfigError("chunking needs 0 <= overlap_tokens < target_tokens / 2")
        if not 0 <= self.min_tokens <= self.target_tokens:
            raise ConfigError("chunking needs 0 <= min_tokens <= target_tokens")


@dataclass(slots=True)
class _Piece:
    start: int
    end: int
    tokens: int
    level: int  # break strength before this piece
    sec: int  # index of its section
    sticky: bool = False  # a heading: a chunk must not end right after it


@dataclass
class _Section:
    heading: str
    blocks: list[Block]
    has_body: bool = True
    pieces: list[_Piece] = field(default_factory=list)


def _trim(text: str, s: int, e: int) -> tuple[int, int]:
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return s, e


def _joins_previous(ch: str) -> bool:
    """Whether ``ch`` renders as part of the character before it."""
    return ch >= "\u0300" and (
        unicodedata.combining(ch) != 0 or ch in "\u200d\ufe0e\ufe0f"
        or "\U0001f3fb" <= ch <= "\U0001f3ff" or "\U000e0020" <= ch <= "\U000e007f"
        or unicodedata.category(ch) in ("Mn", "Mc", "Me"))


def _safe_cut(text: str, q: int, floor: int) -> int:
    """Move a cut back so it does not split a visible character sequence (or to ``floor``)."""
    while q > floor and q < len(text) and (_joins_previous(text[q]) or text[q - 1] == "\u200d"):
        q -= 1
    return q


# ---------------------------------------------------------------- blocks


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
        a, z = _trim(text, prev, m.start())
        if a < z:
            out.append(Block(a, z, lines=lines))
        prev = m.end()
    a, z = _trim(text, prev, end)
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
            a, z = _trim(text, para_start, para_end)
            if a < z:
                out.append(Block(a, z))
            para_start = -1

    for line in text.split("\n"):
        line_start, line_end = pos, pos + len(line)
        pos = line_end + 1
        if fence:
            stripped = line.strip()
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                a, z = _trim(text, fence_start, line_end)
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
                a, z = _trim(text, line_start, line_end)
                out.append(Block(a, z, level=len(m.group(1)),
                                 title=_clean_title(m.group(2) or "")))
                continue
        elif first in "=-" and para_start >= 0 and para_lines == 1:
            m = _SETEXT.match(line)
            title = text[para_start:para_end]
            if m and not _NOT_SETEXT_TITLE.match(title):
                a, z = _trim(text, para_start, line_end)
                out.append(Block(a, z, level=1 if first == "=" else 2,
                                 title=_clean_title(title)))
                para_start = -1
                continue
        if para_start < 0:
            para_start, para_lines = line_start, 0
        para_end = line_end
        para_lines += 1
    if fence:
        a, z = _trim(text, fence_start, len(text))
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
                a, z = _trim(text, starts[first], starts[n + 1] + len(under))
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


class _Packer:
    """Cuts sections into pieces and packs pieces into chunks for one document."""

    def __init__(self, text: str, cfg: ChunkingConfig, counter: TokenCounter) -> None:
        self.text = text
        self.cfg = cfg
        self.counter = counter
        self.count = counter.count
        self.ov_hi = math.ceil(cfg.overlap_tokens * 1.5)
        self.cap = max(4, cfg.target_tokens - self.ov_hi - 2)  # a piece plus an overlap fits
        self.lo = cfg.target_tokens // 2

    # ------------------------------------------------------------ pieces

    def pieces(self, blocks: Sequence[Block], sec: int, *, whole: bool = True) -> list[_Piece]:
        """Pieces of one section: the whole section when it fits in one chunk (``whole``)."""
        out: list[_Piece] = []
        text = self.text
        if whole and len(blocks) > 1:
            start, end = blocks[0].start, blocks[-1].end
            if (end - start) < 8 * self.cfg.max_tokens:  # else surely too long: skip the count
                tokens = self.count(text[start:end])
                if tokens <= self.cfg.max_tokens:
                    return [_Piece(start, end, tokens, SECTION, sec, not any(
                        b.level == 0 for b in blocks))]
        for n, block in enumerate(blocks):
            level = SECTION if n == 0 else PARA
            tokens = self.count(text[block.start:block.end])
            if tokens <= self.cap:
                out.append(_Piece(block.start, block.end, tokens, level, sec, block.level > 0))
            else:
                self._split(block.start, block.end, block.lines, level, sec, out)
        return out

    def _split(self, s: int, e: int, lines: bool, level: int, sec: int,
               out: list[_Piece]) -> None:
        text = self.text
        splitter = _LINE if lines else _SENTENCE
        cuts = [m.end() for m in splitter.finditer(text, s, e)]
        cuts.append(e)
        prev = s
        for cut in cuts:
            a, z = _trim(text, prev, cut)
            prev = cut
            if a >= z:
                continue
            tokens = self.count(text[a:z])
            if tokens <= self.cap:
                out.append(_Piece(a, z, tokens, level, sec))
            else:
                self._split_words(a, z, level, sec, out)
            level = SENT

    def _split_words(self, s: int, e: int, level: int, sec: int, out: list[_Piece]) -> None:
        """Cut a span with no usable sentence or line break into runs of <= cap tokens."""
        text, cap = self.text, self.cap
        pos, ratio = s, 4.0
        while pos < e:
            while pos < e and text[pos].isspace():
                pos += 1
            if pos >= e:
                break
            span = int(cap * ratio * 1.3) + 16
            while True:
                wend = min(e, pos + span)
                prefix = self.counter.truncate(text[pos:wend], cap)
                if len(prefix) == wend - pos and wend < e:
                    span *= 2
                    continue
                break
            cut = pos + len(prefix)
            if cut < e:
                half = pos + len(prefix) // 2
                space = max(text.rfind(" ", half, cut), text.rfind("\n", half, cut),
                            text.rfind("\t", half, cut))
                if space > pos:
                    cut = space
                else:
                    safe = _safe_cut(text, cut, pos)
                    cut = safe if safe > pos else cut
            cut = max(cut, pos + 1)
            a, z = _trim(text, pos, cut)
            tokens = self.count(text[a:z])
            if tokens > cap:  # re-encoding a cut can merge differently; rare
                shorter = self.counter.truncate(text[a:z], cap)
                z = _trim(text, a, a + len(shorter))[1] if shorter.strip() else a + 1
                tokens = self.count(text[a:z])
            out.append(_Piece(a, z, tokens, level, sec))
            level = WORD
            ratio = max(0.25, (z - a) / max(tokens, 1))
            pos = z

    # ------------------------------------------------------------ packing

    def pack(self, pieces: list[_Piece]) -> list[tuple[int, int, int, int]]:
        """Chunks as (start, end, tokens, index of the first new piece)."""
        out: list[tuple[int, int, int, int]] = []
        n = len(pieces)
        suffix = [0] * (n + 1)
        for k in range(n - 1, -1, -1):
            suffix[k] = suffix[k + 1] + pieces[k].tokens + 1
        i = 0
        ov: tuple[int, int] | None = None  # (start, tokens) of the overlap carried over
        max_tokens = self.cfg.max_tokens
        while i < n:
            start = ov[0] if ov else pieces[i].start
            base = ov[1] + 1 if ov else 0
            k = self._choose_end(pieces, i, base, base + suffix[i] <= max_tokens)
            tokens = self._count_span(pieces, i, k, start)
            if tokens > max_tokens and k == n - 1:
                k = self._choose_end(pieces, i, base, False)
                tokens = self.count(self.text[start:pieces[k].end])
            while tokens > max_tokens:
                if k > i:
                    k -= 1
                elif ov is not None:
                    ov, start = None, pieces[i].start
                else:
                    break  # unreachable: one piece is at most cap <= max tokens
                tokens = self.count(self.text[start:pieces[k].end])
            out.append((start, pieces[k].end, tokens, i))
            i = k + 1
            ov = None
            if i < n and self.cfg.overlap_tokens and pieces[i].level < SECTION:
                ov = self._overlap(pieces, out[-1][3], k, start, tokens)
        return out

    def _gap(self, end: int, start: int) -> int:
        """Tokens the whitespace between two pieces probably adds (one space merges)."""
        return 0 if start - end == 1 and self.text[end] == " " else 1

    def _count_span(self, pieces: list[_Piece], i: int, k: int, start: int) -> int:
        if i == k and start == pieces[i].start:
            return pieces[i].tokens  # already counted on this very slice
        return self.count(self.text[start:pieces[k].end])

    def _choose_end(self, pieces: list[_Piece], i: int, base: int, rest_fits: bool) -> int:
        n = len(pieces)
        if rest_fits:
            return n - 1
        target = self.cfg.target_tokens
        acc = base
        best, best_level, fallback = -1, -1, -1
        for k in range(i, n):
            p = pieces[k]
            acc += p.tokens + (self._gap(pieces[k - 1].end, p.start) if k > i else 1 if base else 0)
            # Past a bare heading the chunk may grow to max_tokens rather than end on it.
            if k > i and acc > (target if fallback >= 0 else self.cfg.max_tokens):
                break
            if p.sticky:
                continue
            fallback = k
            after = pieces[k + 1].level if k + 1 < n else SECTION + 1
            if acc >= self.lo and after >= best_level:
                best, best_level = k, after
        if best >= 0:
            return best
        return fallback if fallback >= 0 else i

    def _overlap(self, pieces: list[_Piece], i: int, k: int, chunk_start: int,
                 chunk_tokens: int) -> tuple[int, int] | None:
        """Where the next chunk starts inside this one, and that overlap's tokens."""
        hi = min(self.ov_hi, chunk_tokens // 2 - 2)
        want = self.cfg.overlap_tokens
        if hi <= 0:
            return None
        sec = pieces[k].sec
        acc, p = 0, -1
        for m in range(k, i - 1, -1):
            pc = pieces[m]
            if pc.sec != sec:
                break
            sep = self._gap(pc.end, pieces[m + 1].start) if acc else 0
            if pc.start > chunk_start and acc + sep + pc.tokens <= hi:
                acc += sep + pc.tokens
                p = pc.start
                if acc >= want:
                    break
                continue
            q, tail = self._tail_start(pc, want - acc - sep, hi - acc - sep, chunk_start)
            if q > 0:
                p = q
                if m == k:
                    return (q, tail) if tail <= chunk_tokens // 2 else None
            break
        if p < 0:
            return None
        end = pieces[k].end
        tokens = self.count(self.text[p:end])
        if 0 < tokens <= min(self.ov_hi, chunk_tokens // 2):
            return p, tokens
        q, tail = self._tail_start(pieces[k], want, hi, chunk_start)  # pieces joined badly
        return (q, tail) if q > 0 else None

    def _tail_start(self, pc: _Piece, need: int, hi: int, floor: int) -> tuple[int, int]:
        """A start inside ``pc`` leaving about ``need`` (at most ``hi``) tokens, and those
        tokens; (-1, 0) if there is none."""
        s, e, n = pc.start, pc.end, pc.tokens
        if need <= 0 or hi <= 0 or n <= 1:
            return -1, 0
        text = self.text
        ratio = (e - s) / n
        want = e - max(1, round(need * ratio))
        earliest = max(s + 1, floor + 1, e - int(hi * ratio))
        latest = e - max(1, int(need * 0.5 * ratio))
        if earliest >= e:
            return -1, 0
        q = -1
        for m in _SENTENCE.finditer(text, max(s, earliest - 8), latest + 1):
            cand = m.end()
            if earliest <= cand <= latest and (q < 0 or abs(cand - want) < abs(q - want)):
                q = cand
        if q < 0:
            space = _SPACE.search(text, max(want, earliest), e)
            if space is not None and space.end() <= latest:
                q = space.end()
            else:
                back = max(text.rfind(" ", earliest, want), text.rfind("\n", earliest, want))
                q = back + 1 if back >= 0 else _safe_cut(text, max(want, earliest), floor)
        for _ in range(3):
            while q < e and text[q].isspace():
                q += 1
            if q <= floor or q >= e:
                return -1, 0
            tokens = self.count(text[q:e])
            if tokens <= hi:
                return q, tokens
            q = _safe_cut(text, e - int((e - q) * hi / tokens * 0.85), floor)
        return -1, 0


def _sections_from_blocks(blocks: list[Block]) -> list[_Section]:
    sections: list[_Section] = []
    stack: list[tuple[int, str]] = []
    current = _Section(heading="", blocks=[])
    for block in blocks:
        if block.level:
            if current.blocks:
                sections.append(current)
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.title))
            current = _Section(heading=" > ".join(t for _, t in stack if t), blocks=[block],
                               has_body=False)
        else:
            current.blocks.append(block)
            current.has_body = True
    if current.blocks:
        sections.append(current)
    return sections


def _code_sections(text: str, language: str | None, cfg: ChunkingConfig) -> list[_Section]:
    defs = find_definitions(text, language, split_members_over=cfg.target_tokens * 4)
    sections: list[_Section] = []
    for n, d in enumerate(defs):
        end = defs[n + 1].start if n + 1 < len(defs) else len(text)
        blocks = text_blocks(text, d.start, end, lines=True)
        if blocks:  # a container's header travels with its first member, like a heading
            sections.append(_Section(heading=d.symbol, blocks=blocks, has_body=not d.container))
    return sections


def _groups(sections: list[_Section], cfg: ChunkingConfig) -> list[list[int]]:
    """Indices of sections chunked together: tiny ones merged, bare headings carried on."""
    groups: list[list[int]] = []
    size = 0
    for n, sec in enumerate(sections):
        tokens = sum(p.tokens for p in sec.pieces) + len(sec.pieces)
        # A bare heading opens a group (it belongs to what follows) unless nothing follows.
        opens = not sec.has_body and n + 1 < len(sections)
        if groups and (not sections[groups[-1][-1]].has_body or (
                not opens and (size < cfg.min_tokens or tokens < cfg.min_tokens)
                and size + tokens <= cfg.target_tokens)):
            groups[-1].append(n)
            size += tokens
        else:
            groups.append([n])
            size = tokens
    return groups


def split_span(text: str, start: int, end: int, cfg: ChunkingConfig, counter: TokenCounter
               ) -> list[tuple[int, int, int]]:
    """Cut ``text[start:end]`` as plain text: (start, end, tokens) of exact slices."""
    packer = _Packer(text, cfg, counter)
    pieces = packer.pieces(text_blocks(text, start, end, lines=False), 0)
    return [(s, e, t) for s, e, t, _ in packer.pack(pieces)]


def chunk_document(doc: LoadedDocument, cfg: ChunkingConfig, counter: TokenCounter
                   ) -> list[ChunkDraft]:
    """Cut ``doc`` into chunks in source order (ordinals 0..n-1).

    Every chunk is ``doc.text[c.start:c.start + len(c.text)]``, has
    ``tokens == counter.count(c.text) <= cfg.max_tokens``, starts and ends on
    non-whitespace, and together the chunks cover every non-whitespace
    character. Markdown (and HTML/DOCX text) splits at headings, ``heading``
    being the heading path ("Install > Linux"); code splits at definitions
    (``kind="code"``, ``heading`` the symbol, ``meta["language"]``); a
    conversation gives one chunk per turn (see :mod:`engine.ingest.conversation`).
    """
    if doc.fmt == "conversation":
        from engine.ingest.conversation import chunk_conversation

        return chunk_conversation(doc, cfg, counter)
    text = doc.text
    if doc.fmt in _MARKDOWN_FMTS:
        sections = _sections_from_blocks(markdown_blocks(text))
    elif doc.fmt == "code":
        sections = _code_sections(text, doc.language, cfg)
    elif doc.meta.get("markup") == "rst":
        sections = _sections_from_blocks(rst_blocks(text))
    else:
        sections = [_Section("", text_blocks(text, 0, len(text), lines=doc.fmt == "json"))]
    packer = _Packer(text, cfg, counter)
    for n, sec in enumerate(sections):
        sec.pieces = packer.pieces(sec.blocks, n)
    kind = "code" if doc.fmt == "code" else "section"
    base_meta: dict[str, object] = {"language": doc.language} if kind == "code" else {}
    pages = doc.meta.get("pages") if doc.fmt == "pdf" else None
    drafts: list[ChunkDraft] = []
    for group in _groups(sections, cfg):
        for a, b in itertools.pairwise(group):  # a bare heading must fit with what follows
            head = sum(p.tokens + 1 for p in sections[a].pieces)
            if (not sections[a].has_body and len(sections[b].pieces) == 1
                    and head + sections[b].pieces[0].tokens > cfg.max_tokens):
                sections[b].pieces = packer.pieces(sections[b].blocks, b, whole=False)
        heading_of: dict[int, str] = {}
        carry = sections[group[-1]].heading
        for n in reversed(group):  # a bare heading takes the name of what follows it
            if sections[n].has_body or n == group[-1]:
                carry = sections[n].heading
            heading_of[n] = carry
        pieces = [p for n in group for p in sections[n].pieces]
        for start, end, tokens, first in packer.pack(pieces):
            heading, j = "", first
            while not heading and j < len(pieces) and pieces[j].start < end:
                heading = heading_of[pieces[j].sec]  # a preamble takes the next heading
                j += 1
            meta = dict(base_meta)
            if pages:
                meta["page"] = bisect.bisect_right(pages, start)
            drafts.append(ChunkDraft(
                text=text[start:end], ordinal=len(drafts), tokens=tokens, kind=kind,
                heading=heading, start=start, meta=meta,
            ))
    return drafts
