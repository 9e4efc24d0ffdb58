"""Send the overlap of neighbouring chunks once.

Consecutive chunks of a document overlap by a few dozen tokens (so that a
sentence cut at a chunk edge is whole in one of them). When two pieces of one
source are both candidates, the lower-ranked one loses the characters that the
higher-ranked one already holds: its text is trimmed at the overlap (to a word
boundary) or, when it lies wholly inside the other, it is dropped. Pure: works
on the candidates and each one's character span in its source.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from engine.packing.candidates import PackCandidate

Span = tuple[int, int]  # [start, end) character offsets of a candidate's text in its source


def trim_overlaps(cands: Sequence[PackCandidate], spans: Mapping[str, Span]
                  ) -> list[PackCandidate]:
    """``cands`` with overlaps removed from the lower-ranked of each overlapping pair.

    ``spans`` maps a candidate's key to the span of its text (its expanded text
    for an expanded hit); candidates without a span are left alone. Order is kept.
    """
    order = sorted(range(len(cands)), key=lambda i: -cands[i].score)
    held: dict[str, list[Span]] = {}
    out: dict[int, PackCandidate | None] = {}
    for i in order:
        c = cands[i]
        span = spans.get(c.key)
        if span is None or c.section != "memory":
            out[i] = c
            continue
        start, end = span
        text = c.text
        taken = held.setdefault(c.source, [])
        for lo, hi in sorted(taken):
            if lo <= start and end <= hi:
                text = ""
                break
            if lo <= start < hi < end:  # its head is already sent
                cut = _word_start(text, hi - start)
                text, start = text[cut:], start + cut
            elif start < lo < end <= hi:  # its tail is already sent
                text, end = text[: _word_end(text, lo - start)], start + _word_end(text, lo - start)
        if not text.strip():
            out[i] = None
            continue
        taken.append(span)
        out[i] = c if text == c.text else dataclasses.replace(
            c, text=text, text_tokens=None, lines=_lines_left(c, text))
    return [kept for i in range(len(cands)) if (kept := out[i]) is not None]


def _word_start(text: str, pos: int) -> int:
    """A cut at ``pos`` moved back to the start of the word it falls in."""
    pos = max(0, min(pos, len(text)))
    while pos > 0 and not text[pos - 1].isspace():
        pos -= 1
    return pos


def _word_end(text: str, pos: int) -> int:
    """A cut at ``pos`` moved forward to the end of the word it falls in."""
    pos = max(0, min(pos, len(text)))
    while pos < len(text) and not text[pos].isspace():
        pos += 1
    return pos


def _lines_left(c: PackCandidate, text: str) -> tuple[int, int] | None:
    """The lines of what is left of ``c.text`` (``text``, a slice of it) where ``c.lines``
    are the lines of ``c.text`` (not of an expanded text, which trimming leaves whole)."""
    if c.lines is None or c.expanded is not None:
        return c.lines
    at = c.text.find(text)
    if at < 0:
        return c.lines
    first = c.lines[0] + c.text.count("\n", 0, at)
    return first, first + text.rstrip().count("\n")
