"""Batches bounded by padded tokens, so that a batch of long texts never balloons memory.

A transformer's working memory grows with batch x sequence length (and its
attention with the square of the length): 64 chunks of 256 word pieces hold
about 200 MB per attention tensor, which made ingesting 1 MB of text peak at
0.7-0.8 GB. On a CPU a big batch buys nothing for long texts (measured: two or
four 256-piece texts per run are as fast as 64), so batches are cut by a
budget of padded tokens (``count x longest``) as well as by a count: long
texts go a few at a time, short ones many at a time. A text less than half as
long as the longest of its batch starts a new batch, so that short texts are not
padded to a long one's length (transcripts: 15% of the word pieces computed
were padding before, bench/recall_bench.py).
"""

from __future__ import annotations

from collections.abc import Sequence


def token_batches(lengths: Sequence[int], *, max_texts: int, max_tokens: int) -> list[list[int]]:
    """Indexes of ``lengths`` grouped longest first; each group's count x longest <= max_tokens,
    and no text in a group shorter than half its longest.

    A single text longer than ``max_tokens`` still gets a group of its own.
    Every index appears exactly once. Pure.
    """
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    groups: list[list[int]] = []
    cur: list[int] = []
    longest = 0
    for i in order:
        n = max(1, lengths[i])
        width = max(longest, n)
        if cur and (len(cur) + 1 > max_texts or (len(cur) + 1) * width > max_tokens
                    or 2 * n < width):
            groups.append(cur)
            cur, width = [], n
        cur.append(i)
        longest = width
    if cur:
        groups.append(cur)
    return groups
