"""build_context: lanes -> fusion -> rerank -> dedupe -> expansion/surrogates -> packing.

Memory from the store and the caller's live items and conversation are ranked
against the same query and packed together under an exact token budget.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Mapping, Sequence
from typing import Any

from engine.api import Payload
from engine.config import Config
from engine.flows.inputs import check_budget, check_conversation, check_live, check_query
from engine.flows.lanes import LaneResult, run_lanes
from engine.flows.ranking import prescan, rank_hits, rerank_text
from engine.flows.runtime import Runtime
from engine.metrics import BUILD_MS, TOKEN_ACCURACY
from engine.packing.candidates import PackCandidate
from engine.packing.overlap import Span, trim_overlaps
from engine.packing.packer import PackingConfig, pack
from engine.packing.turns import TurnPrior
from engine.retrieval.dedupe import suppress_near_duplicates
from engine.retrieval.query import QueryAnalysis, content_terms
from engine.retrieval.tiers import choose_tier, importance_score
from engine.store.vault import CHUNK_COLUMNS, ChunkRow
from engine.types import ConversationTurn, LiveItem


def _ms(t: float) -> float:
    return (time.perf_counter() - t) * 1000


def build_context(rt: Runtime, query: str, *, live: Sequence[Mapping[str, Any]] | None = None,
                  conversation: Sequence[Mapping[str, Any]] | None = None, budget: int = 1500,
                  overrides: Mapping[str, Any] | None = None, fmt: str | None = None,
                  mode: str | None = None, now: float | None = None) -> Payload:
    t_start = time.perf_counter()
    cfg = rt.cfg.with_overrides(dict(overrides)) if overrides else rt.cfg
    query = check_query(query, cfg.search)
    budget = check_budget(budget)
    live_items = check_live(live, cfg.search)
    turns = check_conversation(conversation)
    pcfg = dataclasses.replace(cfg.packing, fmt=fmt or cfg.packing.fmt,
                               mode=mode or cfg.packing.mode)
    now = time.time() if now is None else float(now)
    timings: dict[str, float] = {}

    candidates: list[PackCandidate] = []
    known: Mapping[int, ChunkRow] = {}
    if budget > 0:
        res = run_lanes(rt, query, cfg=cfg,
                        while_waiting=functools.partial(prescan, cfg=cfg.rerank))
        known = res.rows
        timings.update(res.timings)
        candidates += memory_candidates(rt, cfg, res, pcfg.mode, now, timings)
        t = time.perf_counter()
        terms = set(res.analysis.terms)
        candidates += live_candidates(live_items, res.analysis, cfg, terms)
        candidates += conversation_candidates(turns, terms, cfg)
        timings["live"] = _ms(t)

    t = time.perf_counter()
    payload = pack(candidates, budget, pcfg, rt.counter, now=now, query=query)
    timings["pack"] = _ms(t)
    t = time.perf_counter()
    used = _sources_used(rt, payload, known)
    if used:
        rt.vault.record_access(used, now)
    timings["access"] = _ms(t)
    timings["total"] = _ms(t_start)
    rt.metrics.observe(BUILD_MS, timings["total"])
    recount = rt.counter.count(payload.context)
    rt.metrics.observe(TOKEN_ACCURACY,
                       100.0 if recount == payload.total_tokens else
                       100.0 * (1 - abs(recount - payload.total_tokens) / max(1, recount)))
    return dataclasses.replace(payload, timings=timings)


def _sources_used(rt: Runtime, payload: Payload, known: Mapping[int, ChunkRow]
                  ) -> list[int]:
    """Source ids of the memory items in a payload (their access counts go up).

    Rows the lanes already fetched answer most ids; only the rest (neighbours added
    by expansion) are read from the vault.
    """
    chunk_ids = {cid for item in payload.items for cid in item.chunk_ids}
    missing = sorted(chunk_ids - set(known))
    rows = [known[c] for c in chunk_ids if c in known]
    rows += list(rt.vault.chunks(missing).values()) if missing else []
    return sorted({r.source_id for r in rows})


def memory_candidates(rt: Runtime, cfg: Config, res: LaneResult, mode: str, now: float,
                      timings: dict[str, float]) -> list[PackCandidate]:
    """The stored chunks worth packing: fused hits reranked (with the query's similarity
    to each, from vectors fetched once), near-duplicates dropped, the top hit expanded
    or, for short chunks such as chat turns, their neighbours added as candidates."""
    t = time.perf_counter()
    rows = res.rows
    result = rank_hits(rt, cfg, res, timings=timings)
    vectors = result.vectors
    ranked = result.ranked
    timings["rerank"] = _ms(t)
    if cfg.search.cross_encoder_path:
        t = time.perf_counter()
        cross = rt.cross_encoder(cfg.search.cross_encoder_path)
        head = ranked[: cross.cfg.window]
        ranked = cross.rerank(res.analysis.text, ranked,
                              {cid: rerank_text(rows[cid]) for cid, _, _ in head})
        timings["cross_encoder"] = _ms(t)

    t = time.perf_counter()
    order = [cid for cid, _, _ in ranked]
    kept, dropped = suppress_near_duplicates(
        order, lambda cid: vectors.get(cid), cfg.search.dedupe_threshold,
        texts={cid: rows[cid].text for cid in order if cid not in vectors})
    timings["dedupe"] = _ms(t)

    scores = {cid: s for cid, s, _ in ranked}
    top = max((scores[c] for c in kept), default=1.0) or 1.0
    lanes = {cid: ranks for cid, _, ranks in res.fused}
    t = time.perf_counter()
    pcfg = cfg.packing
    norm = {cid: max(0.0, scores[cid] / top) for cid in kept}
    prior = turn_prior(rt, pcfg, res.analysis.entities, [rows[c] for c in kept])
    for cid in kept:
        if rows[cid].kind in pcfg.neighbour_kinds:
            norm[cid] *= prior.weight(rows[cid].meta.get("speaker"), rows[cid].text)
    near = neighbours(rt, pcfg, [rows[c] for c in kept], norm, set(dropped), prior)
    surrogates = _surrogates(rt, cfg, [rows[c] for c in kept], mode, now, scores, top)
    out: list[PackCandidate] = []
    spans: dict[str, Span] = {}
    for rank, cid in enumerate(kept):
        row = rows[cid]
        expanded, covered, span = None, (cid,), _span(row)
        if rank < pcfg.expand_top and row.kind not in pcfg.neighbour_kinds:
            expanded, covered, span = expand(rt, row, pcfg.expansion_max_tokens)
        if span is not None and row.kind not in pcfg.neighbour_kinds:
            spans[f"chunk:{cid}"] = span
        sur = surrogates.pop(row.source_id, None) if rank >= pcfg.expand_top else None
        score = max(norm[cid], near.pop(cid, (row, 0.0))[1])
        out.append(PackCandidate(
            key=f"chunk:{cid}", section="memory", kind=row.kind, source=row.source,
            title=_title(row), time=row.time, score=score,
            lanes=lanes.get(cid, {}), text=row.text, expanded=expanded,
            surrogate=sur[1] if sur else None, tier=sur[0] if sur else None,
            chunk_ids=tuple(covered), why="rerank", position=float(row.ordinal),
            text_tokens=row.tokens))
    for cid, (row, score) in near.items():
        out.append(PackCandidate(
            key=f"chunk:{cid}", section="memory", kind=row.kind, source=row.source,
            title=_title(row), time=row.time, score=score, text=row.text, chunk_ids=(cid,),
            why="neighbour", position=float(row.ordinal), text_tokens=row.tokens))
    out = trim_overlaps(out, spans)
    timings["expand"] = _ms(t)
    return out


def turn_prior(rt: Runtime, cfg: PackingConfig, entities: Sequence[str],
               hits: Sequence[ChunkRow]) -> TurnPrior:
    """The speaker/question weights of turns for a query naming ``entities``, among
    the store's speakers (read only when some hit is a turn)."""
    turns = any(h.kind in cfg.neighbour_kinds for h in hits)
    speakers = rt.vault.speakers() if turns and entities else frozenset()
    return TurnPrior.for_query(entities, speakers,
                               other_speaker=cfg.speaker_other,
                               other_neighbour=cfg.speaker_other_neighbour,
                               question=cfg.question_turn)


def neighbours(rt: Runtime, cfg: PackingConfig, hits: Sequence[ChunkRow],
               scores: Mapping[int, float], excluded: set[int],
               prior: TurnPrior | None = None) -> dict[int, tuple[ChunkRow, float]]:
    """Chunks next to the best hits of ``cfg.neighbour_kinds``, with the score they
    inherit (weighed by ``prior``, who spoke them): chunk id -> (row, best inherited
    score). Hits and ``excluded`` ids (near-duplicates) may appear; the caller keeps a
    hit's own score when higher."""
    span = cfg.neighbour_span
    if not span or not cfg.neighbour_hits or not cfg.neighbour_kinds:
        return {}
    chosen = [h for h in hits if h.kind in cfg.neighbour_kinds][: cfg.neighbour_hits]
    if not chosen:
        return {}
    ranges: dict[int, list[tuple[int, int]]] = {}
    for h in chosen:
        ranges.setdefault(h.source_id, []).append((h.ordinal - span, h.ordinal + span))
    where, args = [], []
    for sid, spans in ranges.items():
        for lo, hi in _merge_spans(spans):
            where.append("(c.source_id = ? AND c.ordinal BETWEEN ? AND ?)")
            args += [sid, lo, hi]
    kinds = list(cfg.neighbour_kinds)
    found = rt.vault.query(
        f"SELECT {CHUNK_COLUMNS} FROM chunks c JOIN sources s ON s.id = c.source_id "
        f"WHERE s.state = 'ready' AND c.kind IN ({','.join('?' * len(kinds))}) "
        f"AND ({' OR '.join(where)})", [*kinds, *args])
    at = {(r.source_id, r.ordinal): r for r in map(ChunkRow.from_row, found)}
    out: dict[int, tuple[ChunkRow, float]] = {}
    for h in chosen:
        base = scores.get(h.id, 0.0)
        for d in range(1, span + 1):
            for n, factor in ((at.get((h.source_id, h.ordinal + d)), cfg.neighbour_after),
                              (at.get((h.source_id, h.ordinal - d)), cfg.neighbour_before)):
                if n is None or n.id in excluded or n.heading != h.heading:
                    continue
                score = base * factor ** d
                if prior is not None:
                    score *= prior.weight(n.meta.get("speaker"), n.text, neighbour=True)
                if score > out.get(n.id, (n, -1.0))[1]:
                    out[n.id] = (n, score)
    return out


def _merge_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def _title(row: ChunkRow) -> str:
    """The item's header title; a turn's speaker only where its text does not start
    with it (turns of one session then share one header)."""
    speaker = row.meta.get("speaker")
    if row.heading:
        return f"{row.title} > {row.heading}"
    if isinstance(speaker, str) and speaker and row.kind == "turn" \
            and not row.text.startswith(speaker + ":"):
        return f"{row.title} · {speaker}"
    return row.title


def expand(rt: Runtime, row: ChunkRow, max_tokens: int
           ) -> tuple[str, tuple[int, ...], Span | None]:
    """The hit with its neighbours (same source, same section) up to ``max_tokens``:
    (text, chunk ids, its span in the source when the chunks are contiguous)."""
    near = rt.vault.neighbours(row.source_id, row.ordinal - 3, row.ordinal + 3)
    same = [n for n in near if n.heading == row.heading and n.kind == row.kind]
    chosen = [row]
    used = row.tokens
    before = [n for n in reversed(same) if n.ordinal < row.ordinal]
    after = [n for n in same if n.ordinal > row.ordinal]
    for pair in zip(after + [None] * len(before), before + [None] * len(after)):
        for n in pair:
            if n is None or used + n.tokens > max_tokens:
                continue
            chosen.append(n)
            used += n.tokens
    chosen.sort(key=lambda n: n.ordinal)
    if len(chosen) == 1:
        return row.text, (row.id,), _span(row)
    text, contiguous = _merge(chosen)
    span = (chosen[0].start, max(n.start + len(n.text) for n in chosen)) if contiguous else None
    return text, tuple(n.id for n in chosen), span


def _span(row: ChunkRow) -> Span:
    return row.start, row.start + len(row.text)


def _merge(rows: Sequence[ChunkRow]) -> tuple[str, bool]:
    """Join consecutive chunks by their source offsets, so overlaps are not repeated;
    also whether they were contiguous (no gap between them)."""
    text = rows[0].text
    end = rows[0].start + len(rows[0].text)
    contiguous = True
    for r in rows[1:]:
        r_end = r.start + len(r.text)
        if r.start < end and r_end > end:
            text += r.text[end - r.start:]
        elif r.start >= end:
            text += "\n" + r.text
            contiguous = contiguous and r.start - end <= 2  # a line break between them
        end = max(end, r_end)
    return text, contiguous


def _surrogates(rt: Runtime, cfg: Config, rows: Sequence[ChunkRow], mode: str, now: float,
                scores: Mapping[int, float], top: float) -> dict[int, tuple[str, str]]:
    """For dense_cached: source id -> (tier, surrogate text) for document sources."""
    if mode != "dense_cached" or cfg.tiers.mode == "disabled":
        return {}
    doc_rows = {}
    for r in rows:
        if r.source_kind in ("document", "code", "text") and r.source_id not in doc_rows:
            doc_rows[r.source_id] = r
    if not doc_rows:
        return {}
    ids = sorted(doc_rows)
    found = rt.vault.query(
        f"SELECT source_id, full, gist, micro FROM surrogates WHERE source_id IN "
        f"({','.join('?' * len(ids))})", ids)
    access = rt.vault.access(ids)
    out: dict[int, tuple[str, str]] = {}
    for sid, full, gist, micro in found:
        row = doc_rows[sid]
        count, last = access.get(sid, (0, None))
        age = max(0.0, (now - (row.source_time or row.time or now)) / 86400)
        last_age = None if last is None else max(0.0, (now - last) / 86400)
        importance = importance_score(count, last_age, age)
        tier = choose_tier(cfg.tiers, age_days=age, importance=importance,
                           query_match=scores.get(row.id, 0.0) / top)
        text = {"full": full, "gist": gist, "micro": micro}.get(tier or "", "")
        if tier and text:
            out[sid] = (tier, text)
    return out


def live_candidates(items: Sequence[LiveItem], analysis: QueryAnalysis, cfg: Config,
                    terms: set[str]) -> list[PackCandidate]:
    out = []
    for i, item in enumerate(items):
        if not item.text.strip():
            continue
        found = content_terms(f"{item.title}\n{item.text[:20000]}", cfg.query.stopwords) & terms
        recall = len(found) / len(terms) if terms else 0.0
        priors = cfg.packing.live_priors
        score = (cfg.packing.live_term_weight * recall
                 + priors.get(item.kind, priors.get("other", 0.0)))
        out.append(PackCandidate(
            key=f"live:{i}", section="live", kind=f"live:{item.kind}", source=item.source,
            title=item.title, time=item.captured_at, score=score, text=item.text,
            why="live"))
    return out


def conversation_candidates(turns: Sequence[ConversationTurn], terms: set[str],
                            cfg: Config) -> list[PackCandidate]:
    out = []
    n = len(turns)
    for i, turn in enumerate(turns):
        if not turn.text.strip():
            continue
        found = content_terms(turn.text, cfg.query.stopwords) & terms
        recency = (i + 1) / n
        score = (cfg.packing.turn_recency_weight * recency
                 + cfg.packing.turn_term_weight * (len(found) / len(terms) if terms else 0.0))
        out.append(PackCandidate(
            key=f"turn:{i}", section="conversation", kind="conversation", source="conversation",
            title=turn.role, time=turn.time, score=score, text=turn.text, why="conversation"))
    return out
