"""The query plan: what search and build_context will ask of each lane, decided once.

``plan_query`` analyses the query and everything derived from it before any lane
runs: the keyword lane's match expressions (pruned by the store's word counts),
the lane weights of its class, the depth, filters and whether the recency lane
runs. In a conversation a speaker's name heads every one of their turns, so it
matches half the store and pulls short, empty turns ("Ann: Bye!") to the top of
both lanes: when the query names speakers of the store, the plan also holds the
query with those names taken out (its text, analysis and match expression), one
for each set of them the keyword hits may confirm (``QueryPlan.content_for``).
Who is asked about is left to the rerank's entity feature, which reads the
speaker.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.config import Config
from engine.flows.runtime import Runtime
from engine.retrieval.config import QueryConfig
from engine.retrieval.fts_match import KeywordQuery, keyword_match
from engine.retrieval.query import QueryAnalysis, analyze_query, lane_weights
from engine.store.vault.rows import ChunkRow, Filters


@dataclass(frozen=True)
class ContentQuery:
    """The query with some speakers' names taken out: text, analysis, match expression."""

    text: str
    analysis: QueryAnalysis
    keyword: KeywordQuery


@dataclass(frozen=True)
class QueryPlan:
    """Everything the stages need of the query, decided before any lane runs."""

    text: str
    analysis: QueryAnalysis
    keyword: KeywordQuery
    weights: Mapping[str, float]  # lane -> fusion weight, by the query's class
    depth: int  # hits per lane
    filters: Filters
    recency: bool  # whether the recency lane runs
    cfg: Config
    named: frozenset[str] = frozenset()  # speakers of the store the query names
    # set of named speakers -> the query without them; a set whose removal leaves no
    # new terms to match has no entry (the lanes then match the whole query)
    content: Mapping[frozenset[str], ContentQuery] | None = None
    # recall's learned reader (engine.flows.recall.adapt.QueryAdapter): the map applied
    # to the query's vector, and the "learned" keyword lane of the user's own words
    vector_map: Callable[[np.ndarray], np.ndarray] | None = None
    learned: KeywordQuery | None = None
    # the same map searched as a lane of its own ("adapted") beside the plain vector lane,
    # whose vector the rerank keeps (``recall.adapt_fit.map_lane``)
    lane_map: Callable[[np.ndarray], np.ndarray] | None = None

    def content_for(self, hits: Iterable[ChunkRow]) -> ContentQuery | None:
        """The query the lanes should match once the keyword lane found ``hits``: without
        the named speakers who speak among them (None: the whole query)."""
        if not self.named or not self.content:
            return None
        present = self.named & set(row_speakers(hits))
        if present and len(self.named) > MAX_NAMED_SETS:
            present = self.named
        return self.content.get(present)


# Speakers named in one query that are planned set by set (2**3 - 1 content queries at
# most); a query naming more takes all of them out once any speaks among the hits.
MAX_NAMED_SETS = 3


def plan_query(rt: Runtime, query: str, cfg: Config, *, filters: Filters | None = None,
               depth: int | None = None) -> QueryPlan:
    """Plan ``query`` (already checked) against the store as it is now."""
    named = speaker_names_in(query, rt.vault.speakers()) if cfg.query.speaker_scoped else []
    a, content = analyse(query, named, cfg.query)
    weights = lane_weights(a.qclass, cfg.query, recent=a.temporal_recent)
    matches = {key: keyword_match(an, cfg.search, rt.vault)
               for key, an in [(frozenset(), a), *((k, ca) for k, (_, ca) in content.items())]}
    return QueryPlan(
        text=query, analysis=a, keyword=matches.pop(frozenset()), weights=weights,
        depth=depth or cfg.search.lane_depth, filters=filters or Filters(),
        recency=bool(a.temporal_recent and cfg.search.recency_depth), cfg=cfg,
        named=frozenset(named),
        content={key: ContentQuery(text, ca, matches[key])
                 for key, (text, ca) in content.items()})


def adapted(plan: QueryPlan, adapter: Any) -> QueryPlan:
    """``plan`` with recall's learned reader (``QueryAdapter``; None: as it is): its
    vector map (on the vector lane's query, or with ``lane_weight`` as a lane of its own
    weighted that many times the vector lane), and its words as a keyword lane weighted ``adapter.weight`` times the
    keyword lane (quoted word characters only: no FTS5 syntax can get in)."""
    if adapter is None:
        return plan
    words = [w for w in adapter.words if _WORD_ONLY.fullmatch(w)]
    learned = KeywordQuery(" OR ".join(f'"{w}"' for w in words)) if words else None
    weights = dict(plan.weights)
    if learned is not None:
        weights["learned"] = adapter.weight * weights.get("keyword", 1.0)
    if adapter.vector_map is not None and adapter.lane_weight > 0:
        weights["adapted"] = adapter.lane_weight * weights.get("vector", 1.0)
        return dataclasses.replace(plan, lane_map=adapter.vector_map, learned=learned,
                                   weights=weights)
    return dataclasses.replace(plan, vector_map=adapter.vector_map, learned=learned,
                               weights=weights)


_WORD_ONLY = re.compile(r"[^\W_]+")


def analyse(query: str, named: list[str], cfg: QueryConfig
            ) -> tuple[QueryAnalysis, dict[frozenset[str], tuple[str, QueryAnalysis]]]:
    """The query's analysis, and for each set of the ``named`` speakers the query with
    their names taken out (text, analysis), where that leaves terms to match and
    they differ from the whole query's."""
    texts = {frozenset(names): without_names(query, names) for names in _subsets(named)}
    texts[frozenset()] = query
    analyses = {key: analyze_query(text, cfg) for key, text in texts.items()}
    a = analyses.pop(frozenset())
    return a, {key: (texts[key], ca) for key, ca in analyses.items()
               if ca.terms and set(ca.terms) != set(a.terms)}


def _subsets(names: list[str]) -> Iterable[tuple[str, ...]]:
    """Every non-empty subset of ``names``, each in the order of ``names`` (only the
    whole set beyond ``MAX_NAMED_SETS`` names)."""
    if len(names) > MAX_NAMED_SETS:
        return [tuple(names)]
    return itertools.chain.from_iterable(
        itertools.combinations(names, size) for size in range(1, len(names) + 1))


def row_speakers(rows: Iterable[ChunkRow]) -> list[str]:
    """The speakers of the given turns, first seen first."""
    names: dict[str, None] = {}
    for row in rows:
        speaker = row.meta.get("speaker")
        if isinstance(speaker, str) and speaker.strip():
            names.setdefault(speaker.strip(), None)
    return list(names)


def speaker_names_in(query: str, names: Iterable[str]) -> list[str]:
    """Those of ``names`` that the query mentions (case-insensitive), in sorted order."""
    return [n for n in sorted(names) if _name_re(n).search(query)]


def without_names(query: str, names: Iterable[str]) -> str:
    """``query`` with every mention of ``names`` (and their possessive) taken out."""
    text = query
    for name in names:
        text = _name_re(name).sub(" ", text)
    return " ".join(text.split())


def _name_re(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(name)}(?:['\u2019]s)?(?!\w)", re.IGNORECASE)
