"""The caller's own candidates of a build: live items and conversation turns, scored
by how many of the query's terms they hold and by their kind or recency."""

from __future__ import annotations

from collections.abc import Sequence

from engine.config import Config
from engine.packing.candidates import PackCandidate
from engine.retrieval.query import content_terms
from engine.types import ConversationTurn, LiveItem


def live_candidates(items: Sequence[LiveItem], cfg: Config, terms: set[str]
                    ) -> list[PackCandidate]:
    """The live items as candidates: the share of the query's ``terms`` each holds,
    plus the prior of its kind."""
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
    """The conversation's turns as candidates: later turns and turns holding more of
    the query's ``terms`` score higher."""
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
