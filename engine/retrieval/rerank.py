"""Answer-focused rerank of the fused top window.

Fusion ranks by agreement between lanes; it does not know what the question asks
for. This rerank adds cheap, explainable features of each candidate against the
:class:`~engine.retrieval.query.QueryAnalysis`: how many (rare) query terms it
holds, whether it names the query's entities, whether its time falls on the asked
year or date, and whether it contains the *kind* of answer asked for (a place, a
date, a reason, a number...). Only the top ``window`` by fused score is reordered;
the rest follow unchanged. Every feature computed (those its kind weighs) is returned so
a payload can say why.

:class:`CrossEncoderReranker` is an optional second stage that blends in a local
cross-encoder model's scores; it never downloads anything.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
import operator
import re
import statistics
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from engine.errors import ConfigError
from engine.retrieval.config import CrossEncoderConfig, RerankConfig
from engine.retrieval.profiles import FEATURES
from engine.retrieval.query import QueryAnalysis, stem, words_of
from engine.retrieval.scan import QueryTerms, Scan
from engine.retrieval.transcript_rank import (
    TRANSCRIPT_FEATURES,
    SessionChunk,
    transcript_features,
)

K = TypeVar("K", bound=Hashable)  # a candidate's id: a chunk id, a turn key


@dataclass(frozen=True)
class RerankCandidate(Generic[K]):
    """One fused candidate: its text, fused score and optional time (epoch s) and meta.

    ``similarity`` is the query's cosine similarity to it (None when unknown) and
    ``keyword`` its keyword-lane score, higher better (None when that lane missed it).
    """

    id: K
    text: str
    fused: float
    time: float | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    similarity: float | None = None
    keyword: float | None = None
    profile: str | None = None  # its kind's feature weights; None: the default profile


Ranked = tuple[K, float, dict[str, float]]  # (id, score, features)


def rerank(analysis: QueryAnalysis, candidates: Sequence[RerankCandidate[K]],
           cfg: RerankConfig | None = None, *, all_features: bool = False,
           scans: Mapping[K, Any] | None = None,
           project: str | None = None,
           sessions: Mapping[str, float] | None = None) -> list[Ranked[K]]:
    """Rerank the top ``cfg.window`` candidates by fused score; the rest follow in order.

    Returns ``(id, score, features)`` best first. A window candidate's score is the
    weighted sum of its features under its profile's weights; only the features its
    profile weighs are computed (``all_features``: every one, for fitting). Candidates
    past the window keep their fused order with scores just below the lowest window
    score and ``{"fused": ...}`` only. Fused scores are expected non-negative and finite.
    ``scans``: candidates already read (``scan_all``, ``scan.prepared``), by id. ``project``: the
    project a recall is asked from (transcript feature ``same_project``); ``sessions``
    each session's share of the question's rare words (``session_words``).
    """
    cfg = cfg or RerankConfig()
    order = sorted(range(len(candidates)), key=lambda i: -candidates[i].fused)
    head = [candidates[i] for i in order[: cfg.window]]
    tail = [candidates[i] for i in order[cfg.window:]]
    if not head:
        return []
    norm = _normalizer([c.fused for c in head], cfg.fused_norm)
    weights = [cfg.weights_of(c.profile) for c in head]
    wanted = set(FEATURES) if all_features else {f for w in weights for f in w}
    query = QueryTerms(analysis.terms)
    entity_keys = [k for k in map(_entity_key, analysis.entities) if k[0].strip()]
    scans = scans or {}
    scanned = [scans.get(c.id) or Scan(c, cfg) for c in head]
    # the query's terms each holds, found without tokenizing it where no feature weighed
    # needs all its words (the transcript profile's: Scan.hits)
    held = [sc.hits(query) for sc in scanned]
    idf = _window_idf(query.order, held)
    idf_total = sum(idf.values())
    qdates = [dt.date.fromisoformat(d).toordinal() for d in analysis.dates]
    intents = sorted(i for i in analysis.intent
                     if i in cfg._compiled or cfg._cue_words.get(i) or cfg._cue_phrases.get(i))
    year_rx = (re.compile(r"(?<!\d)(?:" + "|".join(str(y) for y in analysis.years) + r")(?!\d)")
               if analysis.years else None)
    best_keyword = max((c.keyword for c in head if c.keyword is not None and c.keyword > 0),
                       default=0.0)
    sims = _known_similarities(head)

    rows: list[dict[str, float]] = []
    for cand, w, sc, sim, hits in zip(head, weights, scanned, sims, held, strict=True):
        need = wanted if all_features else w
        feats = {"fused": norm(cand.fused), "similarity": _unit(sim),
                 "keyword": (_unit(cand.keyword / best_keyword)
                             if cand.keyword and best_keyword else 0.0),
                 # summed in the query's order: the same float whatever the sets' order
                 "term_recall": (sum(v for t, v in idf.items() if t in hits) / idf_total
                                 if idf_total else 0.0)}
        if "term_precision" in need:  # every word of it counted
            feats["term_precision"] = math.sqrt(len(hits) / len(sc.terms)) if hits else 0.0
        if "entity" in need or "distractor" in wanted:
            feats["entity"] = _entity_coverage(entity_keys, sc)
        if "year" in need:
            feats["year"] = _year_match(analysis, year_rx, sc.day, sc.text)
        if "date" in need:
            feats["date"] = _date_match(qdates, sc.day, cfg.date_window_days)
        if "intent" in need:
            feats["intent"] = (sum(1.0 for i in intents if _answers(i, sc, cfg)) / len(intents)
                               if intents else 0.0)
        rows.append(feats)
    if not wanted.isdisjoint(TRANSCRIPT_FEATURES):
        window = [SessionChunk(kind=str(c.meta.get("kind", "")), session=c.meta.get("session"),
                               failure=bool(c.meta.get("failure")), fused=r["fused"],
                               similarity=sim, keyword=c.keyword,
                               turn=_int_or_none(c.meta.get("turn")),
                               ordinal=_int_or_none(c.meta.get("ordinal")) or 0,
                               opens=_REPLY_OPENS in "\n" + c.text,
                               term_recall=r["term_recall"],
                               project=_str_or_none(c.meta.get("project")))
                  for c, r, sim in zip(head, rows, sims, strict=True)]
        for r, extra in zip(rows, transcript_features(analysis.text, window,
                                                      cfg.transcript_cues, project,
                                                      sessions),
                            strict=True):
            r.update(extra)
    if "distractor" in wanted:
        named = entity_keys and any(r.get("entity", 0.0) > 0 for r in rows)
        for r in rows:
            r["distractor"] = 1.0 if named and r.get("entity", 0.0) == 0 else 0.0

    scored = [(_score(r, w), i) for i, (r, w) in enumerate(zip(rows, weights, strict=True))]
    scored.sort(key=lambda s: (-s[0], s[1]))
    out: list[Ranked[K]] = [(head[i].id, score, rows[i]) for score, i in scored]
    floor = scored[-1][0]
    out.extend((c.id, floor - 1e-6 * (j + 1), {"fused": norm(c.fused)})
               for j, c in enumerate(tail))
    return out


_REPLY_OPENS = "\nAssistant: "  # a transcript reply's first chunk (engine.recall.chunks)


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _score(f: Mapping[str, float], weights: Mapping[str, float]) -> float:
    # the products summed in the weights' order, as a generator would give them (the
    # same float), without a generator's frame per term: ~230 candidates x ~20 weights
    # a recall
    return sum(map(operator.mul, weights.values(), map(f.get, weights, _ZEROS)))


_ZEROS = itertools.repeat(0.0)


def _known_similarities(head: Sequence[RerankCandidate]) -> list[float | None]:
    """Each candidate's similarity; one not known (its vector not made yet: staged
    ingestion stores a file for the keyword lanes first) scored as the window's median,
    neither found by meaning nor ruled out by it. Scored as 0, a file dropped a moment
    ago ranked below every older chunk merely near the query: a word only the new file
    holds found it at keyword rank 1 and left it 50th (bench.app_launch's second drop,
    first keyword hit 12-36 s)."""
    known = [c.similarity for c in head if c.similarity is not None]
    neutral = statistics.median(known) if known else None
    return [c.similarity if c.similarity is not None else neutral for c in head]


def _unit(value: float | None) -> float:
    """``value`` clipped to [0, 1]; 0 when unknown or not a number."""
    if value is None or not value > 0.0:
        return 0.0
    return min(1.0, float(value))


def _normalizer(values: list[float], how: str) -> Callable[[float], float]:
    """Scale fused scores by the window: ``f / max`` or ``(f - min) / (max - min)``."""
    hi, lo = max(values), min(values)
    if how == "minmax":
        return (lambda v: (v - lo) / (hi - lo)) if hi > lo else (lambda v: 1.0)
    return (lambda v: v / hi) if hi > 0 else (lambda v: 1.0)


def _answers(intent: str, sc: Scan, cfg: RerankConfig) -> bool:
    """Whether the candidate's body holds an answer of kind ``intent`` (cue or pattern)."""
    words = cfg._cue_words.get(intent)
    if words and not sc.words.isdisjoint(words):
        return True
    phrases = cfg._cue_phrases.get(intent)
    if phrases and any(p in sc.joined for first in sc.words.intersection(phrases)
                       for p in phrases[first]):
        return True
    rx = cfg._compiled.get(intent)
    return rx is not None and rx.search(sc.text) is not None


def _window_idf(query_terms: Collection[str], docs: Sequence[Collection[str]]
                ) -> dict[str, float]:
    """Query-term weights from document frequency inside the window (rare terms count more):
    ``docs``, the query terms each candidate holds."""
    n = len(docs)
    return {t: math.log(1.0 + (n + 1) / (sum(1 for d in docs if t in d) + 0.5))
            for t in query_terms}


def _entity_key(entity: str) -> tuple[str, bool]:
    """(key, is_phrase): one plain word matches by stem, anything else as a token phrase."""
    tokens = words_of(entity)
    if len(tokens) == 1 and tokens[0].isalpha():
        return stem(tokens[0]), False
    return " " + " ".join(tokens) + " ", True


def _entity_coverage(keys: list[tuple[str, bool]], sc: Scan) -> float:
    if not keys:
        return 0.0
    found = sum(1 for key, phrase in keys
                if ((key in sc.joined or key in sc.fields) if phrase else key in sc.terms))
    return found / len(keys)


def _year_match(analysis: QueryAnalysis, year_rx: re.Pattern[str] | None,
                day: dt.date | None, text: str) -> float:
    """1 for the asked month (or year when no month is asked), 0.5 for the year only."""
    if not analysis.years and not analysis.months:
        return 0.0
    if day is not None and f"{day.year:04d}-{day.month:02d}" in analysis.months:
        return 1.0
    in_year = (day is not None and day.year in analysis.years) or bool(
        year_rx is not None and year_rx.search(text))
    if not in_year:
        return 0.0
    return 0.5 if analysis.months else 1.0


def _date_match(qdates: list[int], day: dt.date | None, window_days: float) -> float:
    if not qdates or day is None:
        return 0.0
    gap = min(abs(day.toordinal() - q) for q in qdates)
    if gap == 0:
        return 1.0
    return max(0.0, 1.0 - gap / (window_days + 1.0))


class CrossEncoderReranker:
    """Blend a local sentence-transformers CrossEncoder into the rule rerank's top window.

    Loads only from ``cfg.model_path`` with ``local_files_only``: a missing path, or
    one that does not hold a loadable model, is a ConfigError, never a download.
    """

    def __init__(self, cfg: CrossEncoderConfig) -> None:
        path = Path(cfg.model_path).expanduser() if cfg.model_path else None
        if path is None or not path.is_dir():
            raise ConfigError(f"cross_encoder.model_path is not a local directory: "
                              f"{cfg.model_path!r}")
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise ConfigError("cross-encoder rerank needs the sentence-transformers package"
                              ) from exc
        try:
            self._model = CrossEncoder(str(path), local_files_only=True, device=cfg.device,
                                       max_length=cfg.max_length)
        except Exception as exc:  # noqa: BLE001 - any load failure is a config problem
            raise ConfigError(f"cross_encoder: no loadable model in {str(path)!r} "
                              f"({type(exc).__name__})") from None
        self.cfg = cfg

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """Raw relevance scores of (query, text) pairs, in input order."""
        if not texts:
            return []
        pairs = [(query, t) for t in texts]
        raw = self._model.predict(pairs, batch_size=self.cfg.batch_size,
                                  show_progress_bar=False)
        return [float(x) for x in raw]

    def rerank(self, query: str, ranked: Sequence[Ranked[K]],
               texts: Mapping[K, str]) -> list[Ranked[K]]:
        """Re-score the top ``cfg.window`` of ``ranked`` (rule output); the rest follow."""
        head = list(ranked[: self.cfg.window])
        if not head:
            return []
        ce = _minmax(self.score(query, [texts.get(i, "") for i, _, _ in head]))
        rule = _minmax([s for _, s, _ in head])
        w = self.cfg.weight
        blended = [((1 - w) * r + w * c, n) for n, (r, c) in enumerate(zip(rule, ce,
                                                                           strict=True))]
        blended.sort(key=lambda b: (-b[0], b[1]))
        out: list[Ranked[K]] = [(head[n][0], s, {**head[n][2], "cross_encoder": ce[n]})
                             for s, n in blended]
        floor = blended[-1][0]
        out.extend((i, floor - 1e-6 * (j + 1), feats)
                   for j, (i, _, feats) in enumerate(ranked[self.cfg.window:]))
        return out


def _minmax(values: list[float]) -> list[float]:
    norm = _normalizer(values, "minmax")
    return [norm(v) for v in values]
