"""Session expansion: every chunk of the best-fused coding sessions joins the window.

A question about a past session names the session well (fusion's first transcript
chunk is the right session's in most questions) but not the chunk that answers,
which the lanes may not have reached at their depth. So the chunks of the
``rerank.session_expand`` sessions with the highest fused score in the window
(sum over their chunks) are added to it, with a fused score of 0, and the
transcript profile ranks them (their similarity comes from their stored vectors).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping

from engine.config import Config
from engine.flows.runtime import Runtime
from engine.flows.search.lanes import LaneResult
from engine.store.vault.rows import Filters

TRANSCRIPT = "transcript"  # the source kind whose chunks belong to sessions


def expand_sessions(rt: Runtime, cfg: Config, res: LaneResult, filters: Filters | None,
                    project: str | None = None,
                    sessions: Mapping[str, float] | None = None) -> tuple[LaneResult, int]:
    """``res`` with the chunks of its best sessions placed right after its window, and
    how many were added (the caller widens the window by as many). A session of
    ``project`` (asked from) counts ``rerank.project_expand`` times its fused score, and
    each session 1 + ``rerank.session_words_expand`` times its share of the question's
    rare words (``sessions``, ``engine.flows.search.session_words``) times it."""
    n = cfg.rerank.session_expand
    if n <= 0:
        return res, 0
    totals: dict[str, float] = defaultdict(float)
    for cid, score, _ in res.fused[: cfg.rerank.window]:
        row = res.rows[cid]
        session = row.meta.get("session")
        if row.source_kind == TRANSCRIPT and isinstance(session, str):
            same = project is not None and row.meta.get("project") == project
            totals[session] += score * (cfg.rerank.project_expand if same else 1.0)
    if sessions:
        lift = cfg.rerank.session_words_expand
        totals = defaultdict(float, {s: t * (1.0 + lift * sessions.get(s, 0.0))
                                     for s, t in totals.items()})
    best = sorted(totals, key=lambda s: -totals[s])[:n]
    if not best:
        return res, 0
    f = filters or Filters()
    added = [r for r in rt.vault.session_chunks(best, cfg.rerank.session_expand_chunks)
             if r.id not in res.rows and f.matches(r)]
    if not added:
        return res, 0
    rows = {**res.rows, **{r.id: r for r in added}}
    cut = cfg.rerank.window
    fused = [*res.fused[:cut], *((r.id, 0.0, {}) for r in added), *res.fused[cut:]]
    return dataclasses.replace(res, rows=rows, fused=fused), len(added)
