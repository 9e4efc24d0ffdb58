"""Piece cutting and chunk packing for one document (used by :mod:`engine.ingest.chunking`
and :mod:`engine.ingest.conversation`).

Sections' blocks are cut into token-counted pieces (paragraphs; an overlong
one into sentences or lines, then into word runs), and pieces are packed into
chunks up to ``target_tokens``, ending at the strongest break available, with
consecutive chunks of one section overlapping by about ``overlap_tokens``.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from engine.ingest.blocks import Block, text_blocks, trim_span
from engine.ingest.config import ChunkingConfig
from engine.tokens import TokenCounter

# Strength of the break before a piece; a chunk prefers to end before a strong one.
SECTION, PARA, SENT, WORD = 4, 3, 2, 1

_SENTENCE = re.compile(r"[.!?…]+[\"'”’»)\]]*[^\S\n]+|[。！？]+[\"”’」』)\]]*[^\S\n]*|[^\S\n]*\n\s*")
_LINE = re.compile(r"\n")
_SPACE = re.compile(r"\s+")


@dataclass(slots=True)
class Piece:
    """A span of a section the packer will not cut inside (a block, a sentence, words)."""

    start: int
    end: int
    tokens: int
    level: int  # break strength before this piece
    sec: int  # index of its section
    sticky: bool = False  # a heading: a chunk must not end right after it


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


class Packer:
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

    def pieces(self, blocks: Sequence[Block], sec: int, *, whole: bool = True) -> list[Piece]:
        """Pieces of one section: the whole section when it fits in one chunk (``whole``)."""
        out: list[Piece] = []
        text = self.text
        if whole and len(blocks) > 1:
            start, end = blocks[0].start, blocks[-1].end
            if (end - start) < 8 * self.cfg.max_tokens:  # else surely too long: skip the count
                tokens = self.count(text[start:end])
                if tokens <= self.cfg.max_tokens:
                    return [Piece(start, end, tokens, SECTION, sec, not any(
                        b.level == 0 for b in blocks))]
        for n, block in enumerate(blocks):
            level = SECTION if n == 0 else PARA
            tokens = self.count(text[block.start:block.end])
            if tokens <= self.cap:
                out.append(Piece(block.start, block.end, tokens, level, sec, block.level > 0))
            else:
                self._split(block.start, block.end, block.lines, level, sec, out)
        return out

    def _split(self, s: int, e: int, lines: bool, level: int, sec: int,
               out: list[Piece]) -> None:
        text = self.text
        splitter = _LINE if lines else _SENTENCE
        cuts = [m.end() for m in splitter.finditer(text, s, e)]
        cuts.append(e)
        prev = s
        for cut in cuts:
            a, z = trim_span(text, prev, cut)
            prev = cut
            if a >= z:
                continue
            tokens = self.count(text[a:z])
            if tokens <= self.cap:
                out.append(Piece(a, z, tokens, level, sec))
            else:
                self._split_words(a, z, level, sec, out)
            level = SENT

    def _split_words(self, s: int, e: int, level: int, sec: int, out: list[Piece]) -> None:
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
            a, z = trim_span(text, pos, cut)
            tokens = self.count(text[a:z])
            if tokens > cap:  # re-encoding a cut can merge differently; rare
                shorter = self.counter.truncate(text[a:z], cap)
                z = trim_span(text, a, a + len(shorter))[1] if shorter.strip() else a + 1
                tokens = self.count(text[a:z])
            out.append(Piece(a, z, tokens, level, sec))
            level = WORD
            ratio = max(0.25, (z - a) / max(tokens, 1))
            pos = z

    # ------------------------------------------------------------ packing

    def pack(self, pieces: list[Piece]) -> list[tuple[int, int, int, int]]:
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

    def _count_span(self, pieces: list[Piece], i: int, k: int, start: int) -> int:
        if i == k and start == pieces[i].start:
            return pieces[i].tokens  # already counted on this very slice
        return self.count(self.text[start:pieces[k].end])

    def _choose_end(self, pieces: list[Piece], i: int, base: int, rest_fits: bool) -> int:
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

    def _overlap(self, pieces: list[Piece], i: int, k: int, chunk_start: int,
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

    def _tail_start(self, pc: Piece, need: int, hi: int, floor: int) -> tuple[int, int]:
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


def split_span(text: str, start: int, end: int, cfg: ChunkingConfig, counter: TokenCounter
               ) -> list[tuple[int, int, int]]:
    """Cut ``text[start:end]`` as plain text: (start, end, tokens) of exact slices."""
    packer = Packer(text, cfg, counter)
    pieces = packer.pieces(text_blocks(text, start, end, lines=False), 0)
    return [(s, e, t) for s, e, t, _ in packer.pack(pieces)]
