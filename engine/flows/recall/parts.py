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

Yet the call's chunk clips what a part holds (an output's middle, an Edit's new text),
and that is often what answers. So when a call is among the hits (``recall.part_lines``,
``shown_with_parts``), its parts take no slot of their own, and the one of its parts
among the candidates that holds most query terms (those the call's own text lacks
first) is shown with it: the hit's text and excerpt carry that part's best lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.flows.search.ranking import Ranked
from engine.retrieval.query import content_terms
from engine.store.vault.core import ChunkRow

CALL_PARTS = ("input", "output")  # the parts of a call (a request's part has no call)


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


def call_of(row: ChunkRow) -> str | None:
    """The key of the call whose whole input or output ``row`` holds a part of
    (``engine.recall.chunks``: ``<call key>:input#n``, ``<call key>:output#n``); None
    for any other chunk."""
    key = row.meta.get("key")
    if row.meta.get("part") not in CALL_PARTS or not isinstance(key, str):
        return None
    call, sep, tail = key.rpartition(":")
    return call if sep and tail.partition("#")[0] in CALL_PARTS else None


def _call_key(row: ChunkRow) -> str | None:
    """A call chunk's own key (None for a part or a chunk of no call)."""
    key = row.meta.get("key")
    return key if row.kind == "tool" and not is_part(row) and isinstance(key, str) else None


def shown_with_parts(ranked: Sequence[Ranked], rows: Mapping[int, ChunkRow], k: int,
                     terms: Sequence[str], stopwords: frozenset[str]
                     ) -> tuple[list[Ranked], dict[int, int]]:
    """The first ``k`` of ``ranked`` where a part of a call shown above it takes no slot
    of its own; and, for each call shown, its answering part: of its parts among
    ``ranked`` (found by the query's words or in a session expanded) and not shown
    themselves, the one holding the most of the query's ``terms`` (stemmed, as
    ``QueryAnalysis.terms``) that the call's own text lacks, then the most of them all
    (ties: the better ranked), when one holds any. A call's chunk quotes its request, so
    the part that answers often holds only words the call holds too (a test's output
    under a call that names the test)."""
    parts: dict[str, list[int]] = {}  # call key -> its parts among the candidates, best first
    for cid, _, _ in ranked:
        row = rows.get(cid)
        call = None if row is None else call_of(row)
        if call is not None:
            parts.setdefault(call, []).append(cid)
    shown: list[Ranked] = []
    calls: dict[str, int] = {}  # call key -> its chunk id, for the calls shown
    for item in ranked:
        if len(shown) >= k:
            break
        row = rows.get(item[0])
        if row is None or call_of(row) in calls:
            continue
        shown.append(item)
        key = _call_key(row)
        if key is not None:
            calls.setdefault(key, row.id)
    taken = {cid for cid, _, _ in shown}
    wanted = set(terms)
    answering: dict[int, int] = {}
    for key, cid in calls.items():
        lacks = wanted - content_terms(rows[cid].text, stopwords)
        best, most = None, (0, 0)
        for part in parts.get(key, ()):
            held = wanted & content_terms(rows[part].text, stopwords)
            score = (len(held & lacks), len(held))
            if part not in taken and held and score > most:
                best, most = part, score
        if best is not None:
            answering[cid] = best
    return shown, answering
