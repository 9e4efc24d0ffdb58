"""Recall's ranking of the parts of a call or request (``engine.recall.chunks``): a long
request stored whole, a tool call's whole input, its whole output, each in chunks of
their own (``meta["part"]``) beside the call's or turn's own chunk, which quotes them in
part (the head and tail of an output, the summary of an input).

A part repeats its parent's words, so in the vector lane it crowds out other chunks
with near-copies of its parent, and in the top ``k`` it takes a slot beside it. Recall
therefore searches parts by their words only (``recall.part_vector``: they stay in
the keyword lane, where a rare word of a long output finds them) and ranks each part
``recall.part_penalty`` below its rerank score (it comes after chunks that score about
as well: its call's own chunk, the turn's replies). Both set on the dev split (see
``engine.recall.config``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.flows.search.ranking import Ranked
from engine.store.vault.core import ChunkRow


def is_part(row: ChunkRow) -> bool:
    """Whether ``row`` is a part of a call or request, not a chunk of its own."""
    return bool(row.meta.get("part"))


def demoted(ranked: Sequence[Ranked], rows: Mapping[int, ChunkRow], penalty: float
            ) -> list[Ranked]:
    """``ranked`` with every part's score lowered by ``penalty``, sorted again (stable:
    equal scores keep their order)."""
    if not penalty:
        return list(ranked)
    out = []
    for cid, score, feats in ranked:
        row = rows.get(cid)
        out.append((cid, score - penalty if row is not None and is_part(row) else score, feats))
    return sorted(out, key=lambda r: -r[1])
