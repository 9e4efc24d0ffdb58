"""Recall's learned reader: fitted from the store's own sessions, used by recall's ranking.

``fit`` (a job of the single writer, queued after a sync that added sessions, and by a
repair) reads every embedded transcript chunk, makes the training pairs
(``engine.retrieval.adapt_pairs``), embeds the query-side texts it has not embedded
before (kept in the vault under the chunk that quotes them), fits the query map and
the term table (``engine.retrieval.adapt_fit``) and stores the model in the vault.
``query_adapter`` gives recall's ranking what the model says about one query: the
map for its vector, the words of its term lane. Nothing it learns is logged: counts
and times only.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.api import AdaptStatus
from engine.flows.runtime import Runtime
from engine.recall.chunks import RECALL_CHUNK_KINDS
from engine.retrieval.adapt import Learned, map_query, translated_words
from engine.retrieval.adapt_fit import fit_map, fit_terms
from engine.retrieval.adapt_pairs import SessionPiece, session_pairs
from engine.store.vault import adapt as rows

log = logging.getLogger("ctx.recall")

EMBED_BATCH = 64  # texts embedded per model call (a safe point between calls)
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class QueryAdapter:
    """What the learned reader does to one query: map its vector (None: unchanged;
    with ``lane_weight`` > 0 the mapped vector is searched as a lane of its own, that
    share of the vector lane's, and the vector lane keeps the plain one) and search
    ``words`` (the user's words for the query's) in a lane of ``weight`` (a share of
    the keyword lane's)."""

    vector_map: Callable[[np.ndarray], np.ndarray] | None
    words: tuple[str, ...]
    weight: float
    lane_weight: float = 0.0


def learned(rt: Runtime) -> Learned | None:
    """The stored model (loaded once per fit; None when there is none or
    ``recall.adapt`` is off)."""
    if not rt.cfg.recall.adapt:
        return None
    at = rows.fitted_at(rt.vault)
    cache = rt.adapt_cache
    if cache.get("at") != at:
        model = None
        if at is not None:
            got = rows.model(rt.vault)
            try:
                model = Learned.from_bytes(got[1]) if got is not None else None
            except ValueError:
                log.warning("the learned recall model cannot be read: not used until the "
                            "next fit (a sync or `ctx repair` fits it again)")
        cache.update(at=at, model=model)
    model = cache.get("model")
    return model if isinstance(model, Learned) else None


def query_adapter(rt: Runtime, words: tuple[str, ...]) -> QueryAdapter | None:
    """The learned reader's part in one query whose content words are ``words``."""
    model = learned(rt)
    if model is None:
        return None
    cfg = rt.cfg.recall.adapt_fit
    matrix = model.matrix if cfg.use_map else None
    added: tuple[str, ...] = ()
    if cfg.use_terms and cfg.terms_weight > 0:
        added = tuple(w for w in translated_words(model.terms, words, cfg.terms_per_word,
                                                  cfg.terms_max) if _WORD.fullmatch(w))
    if matrix is None and not added:
        return None
    vmap = (lambda v: map_query(matrix, v)) if matrix is not None else None
    return QueryAdapter(vmap, added, cfg.terms_weight, cfg.map_lane)


def needs_fit(rt: Runtime) -> bool:
    """Whether a fit should run now: ``recall.adapt`` is on, and there is no model, or
    the store holds ``refit_growth`` more replies than the model was fitted on."""
    if not rt.cfg.recall.adapt or rt.vault.read_only:
        return False
    sessions, replies = rows.session_count(rt.vault)
    if sessions == 0:
        return False
    model = learned(rt)
    if model is None:
        return True
    before = int(model.info.get("replies", 0))
    return replies > before * (1.0 + rt.cfg.recall.adapt_fit.refit_growth)


def _pieces(rt: Runtime) -> list[SessionPiece]:
    out = []
    for r in rows.pieces(rt.vault, RECALL_CHUNK_KINDS):
        turn = json.loads(r.meta).get("turn")
        out.append(SessionPiece(r.id, r.session, turn if isinstance(turn, int) else None,
                                r.kind, bool(r.failure), r.text))
    return out


def _embed_texts(rt: Runtime, texts: list[Any], job: Any, progress: Callable[[], None]
                 ) -> dict[tuple[int, str], np.ndarray]:
    """The query-side vectors of ``texts``: stored ones read, the others embedded
    (``EMBED_BATCH`` a call, each batch stored before the next) and stored."""
    keys = [(t.chunk_id, t.role) for t in texts]
    out = {k: np.frombuffer(v, dtype="<f4").astype(np.float32)
           for k, v in rows.text_vectors(rt.vault, keys).items()}
    todo = [t for t in texts if (t.chunk_id, t.role) not in out]
    if job is not None:
        job.stage, job.to_embed, job.embedded = "embed", len(todo), 0
    for i in range(0, len(todo), EMBED_BATCH):
        part = todo[i:i + EMBED_BATCH]
        cut = rt.cfg.recall.adapt_fit.text_tokens
        vecs = rt.embedder.encode([rt.counter.truncate(t.text, cut) for t in part])
        rows.save_text_vectors(rt.vault, [(t.chunk_id, t.role, v)
                                          for t, v in zip(part, vecs, strict=True)])
        out.update({(t.chunk_id, t.role): np.asarray(v, dtype=np.float32)
                    for t, v in zip(part, vecs, strict=True)})
        if job is not None:
            job.embedded += len(part)
        progress()
    return out


def training_set(rt: Runtime, job: Any = None, progress: Callable[[], None] = lambda: None
                 ) -> tuple[np.ndarray, np.ndarray, list[int], list[tuple[str, str]],
                            dict[str, int]]:
    """The pairs' query and document vectors, their sessions, the term pairs and counts."""
    pieces = _pieces(rt)
    pairs = session_pairs(pieces, rt.cfg.recall.adapt_fit.texts_per_session)
    qtext = _embed_texts(rt, pairs.texts, job, progress)
    doc_ids = sorted({d for _, d, _, _ in pairs.text_pairs}
                     | {d for _, d, _, _ in pairs.chunk_pairs}
                     | {q for q, _, _, _ in pairs.chunk_pairs})
    stored = rt.vectors.vectors(doc_ids) if doc_ids else {}
    qs, ds, groups = [], [], []
    for key, d, s, _ in pairs.text_pairs:
        if key in qtext and d in stored:
            qs.append(qtext[key])
            ds.append(stored[d])
            groups.append(s)
    for q, d, s, _ in pairs.chunk_pairs:
        if q in stored and d in stored:
            qs.append(stored[q])
            ds.append(stored[d])
            groups.append(s)
    dim = rt.embedder.dim
    q_arr = np.stack(qs).astype(np.float32) if qs else np.zeros((0, dim), np.float32)
    d_arr = np.stack(ds).astype(np.float32) if ds else np.zeros((0, dim), np.float32)
    counts = {"sessions": pairs.sessions, "texts": len(pairs.texts),
              "replies": sum(p.kind == "turn_pair" for p in pieces)}
    return q_arr, d_arr, groups, pairs.term_pairs, counts


def fit(rt: Runtime, job: Any = None, progress: Callable[[], None] = lambda: None, *,
        seed: int = 0) -> dict[str, Any]:
    """Fit the learned reader on every session of the store and store it (replacing the
    one before); returns what it was fitted on (counts, seconds, CPU seconds)."""
    cfg = rt.cfg.recall.adapt_fit
    t0, c0 = time.perf_counter(), time.process_time()
    q, d, groups, term_pairs, counts = training_set(rt, job, progress)
    if job is not None:
        job.stage = "fit"
    progress()
    mapped = fit_map(q, d, groups, cfg, seed=seed)
    progress()
    terms = fit_terms(term_pairs, cfg)
    info = {**counts, "pairs": len(q), "term_pairs": len(term_pairs),
            "terms": len(terms), "map": mapped.matrix is not None,
            "holdout_mrr_identity": round(mapped.holdout_mrr_identity, 4),
            "holdout_mrr_map": round(mapped.holdout_mrr_map, 4),
            "fitted": time.time(), "seconds": round(time.perf_counter() - t0, 3),
            "cpu_seconds": round(time.process_time() - c0, 3), "seed": seed}
    model = Learned(mapped.matrix, terms, info)
    rows.save_model(rt.vault, info["fitted"], model.to_bytes())
    rt.adapt_cache.clear()
    log.info("recall adapt fitted: %d pairs, %d sessions, %.1f s (pid %d)",
             info["pairs"], info["sessions"], info["seconds"], os.getpid())
    return info


def adapt_status(rt: Runtime) -> AdaptStatus:
    """What the learned reader was fitted on (the counts of the stored model)."""
    on = rt.cfg.recall.adapt
    model = learned(rt) if on else None
    if model is None:
        return AdaptStatus(enabled=on)
    i = model.info
    return AdaptStatus(enabled=on, fitted=float(i.get("fitted", 0.0)),
                       pairs=int(i.get("pairs", 0)), sessions=int(i.get("sessions", 0)),
                       terms=int(i.get("terms", 0)), map=bool(i.get("map", False)),
                       seconds=float(i.get("seconds", 0.0)))
