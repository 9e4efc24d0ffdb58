"""build_context as named stages: plan, lanes, fuse, rank, dedupe, expand, pack.

The query is checked and planned once (``engine.flows.search.plan``); every later stage
reads the plan. Memory from the store and the caller's live items and
conversation are ranked against the same query and packed together under an
exact token budget. One ``StageTimer`` times each stage into the payload's
``timings`` (analysis, keyword, embed, vector, read_ahead, prepare, recency,
fetch, rerank with its vectors, cross_encoder, dedupe, expand, live, pack,
access, total), and the build's metrics are fed from it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

from engine.api import Payload
from engine.config import Config
from engine.flows.runtime import Runtime
from engine.flows.search.expansion import memory_candidates
from engine.flows.search.inputs import check_budget, check_conversation, check_live, check_query
from engine.flows.search.lanes import LaneResult
from engine.flows.search.live_candidates import conversation_candidates, live_candidates
from engine.flows.search.ranking import Ranked, rank_stages, rerank_text
from engine.flows.search.stages import StageTimer
from engine.metrics import BUILD_MS, TOKEN_ACCURACY
from engine.packing.candidates import PackCandidate
from engine.packing.packer import pack
from engine.retrieval.dedupe import suppress_near_duplicates
from engine.store.vault.rows import ChunkRow
from engine.types import ConversationTurns, LiveItems


def build_context(rt: Runtime, query: str, *,
                  live: LiveItems | None = None, conversation: ConversationTurns | None = None,
                  budget: int = 1500,
                  overrides: Mapping[str, Any] | None = None, fmt: str | None = None,
                  mode: str | None = None, now: float | None = None) -> Payload:
    timer = StageTimer()
    cfg = rt.cfg.with_overrides(dict(overrides)) if overrides else rt.cfg
    query = check_query(query, cfg.search)
    budget = check_budget(budget)
    live_items = check_live(live, cfg.search)
    turns = check_conversation(conversation)
    pcfg = dataclasses.replace(cfg.packing, fmt=fmt or cfg.packing.fmt,
                               mode=mode or cfg.packing.mode)
    now = time.time() if now is None else float(now)

    candidates: list[PackCandidate] = []
    known: Mapping[int, ChunkRow] = {}
    if budget > 0:
        ranking = rank_stages(rt, query, cfg, timer)
        plan, res, ranked = ranking.plan, ranking.res, ranking.ranked
        known = res.rows
        order = ranked.ranked
        if cfg.search.cross_encoder_path:
            with timer.stage("cross_encoder"):
                order = cross_encoded(rt, cfg, res, order)
        with timer.stage("dedupe"):
            kept, dropped = suppress_near_duplicates(
                [cid for cid, _, _ in order], lambda cid: ranked.vectors.get(cid),
                cfg.search.dedupe_threshold,
                texts={cid: res.rows[cid].text for cid, _, _ in order
                       if cid not in ranked.vectors})
        with timer.stage("expand"):
            candidates += memory_candidates(rt, cfg, res, order, kept, dropped, pcfg.mode, now)
        with timer.stage("live"):
            terms = set(plan.analysis.terms)
            candidates += live_candidates(live_items, cfg, terms)
            candidates += conversation_candidates(turns, terms, cfg)

    with timer.stage("pack"):
        payload = pack(candidates, budget, pcfg, rt.counter, now=now, query=query)
    with timer.stage("access"):
        used, stages = _sources_used(rt, payload, known)
        if used:
            rt.vault.record_access(used, now)
    payload = dataclasses.replace(payload, items=tuple(
        dataclasses.replace(i, stage=stages.get(i.chunk_ids[0], "ready")) if i.chunk_ids else i
        for i in payload.items))
    rt.metrics.observe(BUILD_MS, timer.total())
    recount = rt.counter.count(payload.context)
    rt.metrics.observe(TOKEN_ACCURACY,
                       100.0 if recount == payload.total_tokens else
                       100.0 * (1 - abs(recount - payload.total_tokens) / max(1, recount)))
    return dataclasses.replace(payload, timings=timer.timings)


def cross_encoded(rt: Runtime, cfg: Config, res: LaneResult, ranked: list[Ranked]
                  ) -> list[Ranked]:
    """``ranked`` with its head reordered by the local cross-encoder
    (``search.cross_encoder_path``)."""
    cross = rt.cross_encoder(cfg.search.cross_encoder_path)
    head = ranked[: cross.cfg.window]
    return cross.rerank(res.analysis.text, ranked,
                        {cid: rerank_text(res.rows[cid]) for cid, _, _ in head})


def _sources_used(rt: Runtime, payload: Payload, known: Mapping[int, ChunkRow]
                  ) -> tuple[list[int], dict[int, str]]:
    """Source ids of the memory items in a payload (their access counts go up), and
    each item chunk's source stage ("keyword" while its vectors are being made).

    Rows the lanes already fetched answer most ids; only the rest (neighbours added
    by expansion) are read from the vault.
    """
    chunk_ids = {cid for item in payload.items for cid in item.chunk_ids}
    missing = sorted(chunk_ids - set(known))
    rows = [known[c] for c in chunk_ids if c in known]
    rows += list(rt.vault.chunks(missing).values()) if missing else []
    waiting = rt.vault.waiting_sources()
    stages = {r.id: "keyword" if r.source_id in waiting else "ready" for r in rows}
    return sorted({r.source_id for r in rows}), stages
