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
``shown_with_parts``), its parts take no slot of their own, and one of its parts is
shown with it: the hit's text and excerpt carry that part's best lines. Which part
(``recall.part_from``): "candidates", of its parts among the candidates the one that
holds most query terms (those the call's own text lacks first); "call", of all its
parts, read from the vault for the calls shown only (``whole_parts``), the one whose
words weigh most for the question (each query term by its rarity in the store,
``term_weights``; plus ``recall.part_cosine`` times its vector's cosine to the query).
Which lines (``recall.part_lines_by``): "words", the excerpt around the line holding
most query words; "weight", the run of lines where the weighed terms fall thickest
(``line_weigher``, ``engine.recall.present.densest``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from engine.flows.runtime import Runtime
from engine.flows.search.lanes import LaneResult
from engine.flows.search.ranking import Ranked, window_vectors
from engine.recall.present import Weigher
from engine.retrieval.query import QueryAnalysis, content_terms, terms_of_words
from engine.store.vault.call_parts import call_parts
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


def term_weights(rt: Runtime, analysis: QueryAnalysis) -> dict[str, float]:
    """Each stemmed query term's weight: its inverse document frequency in the store
    (the rarest of the query's words that stem to it; the keyword lane has counted them)."""
    words = list(analysis.words)
    if not words:
        return {}
    counts = rt.vault.doc_frequency(words)
    n = rt.vault.chunk_count()
    stopwords = rt.cfg.query.stopwords
    df: dict[str, int] = {}
    for w in words:
        for term in terms_of_words({w}, stopwords):
            df[term] = min(df.get(term, n), counts.get(w, 0))
    return {t: math.log(1.0 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}


def line_weigher(weights: Mapping[str, float], stopwords: frozenset[str]) -> Weigher:
    """For a part's text and its call's (``known``), what a line's words are worth to the
    question: the weights (``term_weights``) of the query terms it holds, of those the
    call's own text lacks when the part holds any (as ``part_lines`` reads words)."""
    def weigher(part: str, known: str) -> Callable[[str], float]:
        held = content_terms(part, stopwords) - content_terms(known, stopwords)
        new = {t: w for t, w in weights.items() if t in held}
        use = new or weights

        def weigh(line: str) -> float:
            return sum(use[t] for t in content_terms(line, stopwords) if t in use)
        return weigh
    return weigher


def whole_parts(rt: Runtime, res: LaneResult, ranked: Sequence[Ranked], shown: Sequence[Ranked],
                weights: Mapping[str, float]) -> tuple[dict[int, int], dict[int, ChunkRow]]:
    """For each call among ``shown``, its answering part of all its parts (read from the
    vault, within ``recall.chunks.max_tool_parts`` chunks of it; and those among
    ``ranked``), not shown themselves: the one whose held query terms weigh most
    (``weights``), those the call's own text lacks first (as ``shown_with_parts`` counts
    them), plus ``recall.part_cosine`` times its stored vector's cosine to the query
    (ties: the one better ranked, then the earlier). A part among ``ranked`` is shown
    when it holds any query term; one read from the vault only when it holds a term the
    call lacks (else the call's own lines, which hold its terms, keep the whole excerpt).
    Returns (call chunk id -> part chunk id, the parts' rows)."""
    rows = res.rows
    calls = {key: cid for cid, _, _ in shown
             if (key := _call_key(rows[cid])) is not None}
    if not calls or not weights:
        return {}, {}
    places = [(rows[cid].source_id, rows[cid].ordinal, key) for key, cid in calls.items()]
    read = call_parts(rt.vault, places, rt.cfg.recall.chunks.max_tool_parts)
    taken = {cid for cid, _, _ in shown}
    order = {cid: i for i, (cid, _, _) in enumerate(ranked)}
    found: dict[int, ChunkRow] = {}
    for cid, _, _ in ranked:
        row = rows.get(cid)
        if row is not None and call_of(row) in calls:
            found[cid] = row
    for parts in read.values():
        found.update({r.id: r for r in parts if call_of(r) in calls})
    stopwords = rt.cfg.query.stopwords
    lacks = {key: set(weights) - content_terms(rows[cid].text, stopwords)
             for key, cid in calls.items()}
    total = sum(weights.values())
    cosines: dict[int, float] = {}
    weight = rt.cfg.recall.part_cosine
    if weight and res.query_vector is not None and found:
        q = np.asarray(res.query_vector, dtype=np.float32)
        for cid, v in window_vectors(rt, res, list(found), found).items():
            if v.shape == q.shape:
                cosines[cid] = float(np.asarray(v, dtype=np.float32) @ q)
    best: dict[str, tuple[tuple[float, float, int, int], int]] = {}
    for cid, row in found.items():
        call = call_of(row)
        if call is None or cid in taken:
            continue
        held = {t for t in content_terms(row.text, stopwords) if t in weights}
        new = held & lacks[call]
        if not (new if cid not in order else held):
            continue
        score = (sum(weights[t] for t in new) / total + weight * cosines.get(cid, 0.0),
                 sum(weights[t] for t in held), -order.get(cid, len(order)), -row.ordinal)
        if call not in best or score > best[call][0]:
            best[call] = (score, cid)
    return {calls[call]: cid for call, (_, cid) in best.items()}, found
