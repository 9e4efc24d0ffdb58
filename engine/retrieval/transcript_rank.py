"""Rerank features of coding-session memory: what a chunk is, and how its session fares.

A coding session is many chunks about one piece of work: the request quoted in
each reply, reasoning, tool calls and their output. Fusion finds the session
well (its first chunk is the right session's in most questions) but not the
chunk that answers inside it. These features let the transcript profile weigh:

- ``kind_turn`` / ``kind_thinking`` / ``kind_code`` / ``kind_tool``: the chunk's facet
  (a reply, the reasoning, a code block, a tool call); 1 or 0;
- ``failure``: the chunk records a failure (a failed tool, an interrupted turn, an
  admitted mistake);
- ``ask_failure`` / ``ask_command`` / ``ask_code``: the question asks what went wrong,
  which command or tool did something, or for code (``TranscriptCues``), and this
  chunk is of that sort (a failure or a tool call; a tool call; a code block);
- ``session_similarity``: the best query similarity among the window's chunks of
  the chunk's session; ``session_fused``: the window's fused score of its session
  (sum over its chunks) over the best session's;
- ``similarity_rank`` / ``keyword_rank``: 10 / (10 + rank) of the chunk by
  similarity, by keyword score, inside the window (0 without a score);
- ``session_top``: the mean of the session's three best similarities in the window,
  less the best session's (0 for the best session, negative below it);
- the turn (the request and every chunk that answers it, ``turn`` in the chunk's
  meta), as one unit: ``turn_similarity`` / ``turn_keyword`` / ``turn_term_recall``,
  the best similarity, keyword score and query-term share among the window's chunks
  of the chunk's turn, and ``turn_fused``, the turn's fused score (sum over its
  chunks) over the best turn's; a turn is found by its best view, and each of its
  chunks shares that;
- ``reply_open``: the chunk opens a reply (its ``Assistant:`` line, not a
  continuation), where a decision or an answer is said first; ``outcome``: it is the
  last reply of its turn in the window (what came of the turn);
- ``same_project``: the chunk's session is of the project the question is asked from
  (the folder of the CLI, the hook or MCP; ``recall(cwd=)`` or ``project=``), 0 when
  it is asked from none: that project's sessions first, the others still ranked;
- ``session_words``: the chunk's session's share of the question's rare words, each
  weighed by how few sessions hold it (``engine.flows.search.session_words``): what tells
  look-alike sessions of one project apart.

Pure functions of plain data, so that they are tested without a store.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

KIND_FEATURES = {"turn_pair": "kind_turn", "thinking": "kind_thinking",
                 "session_code": "kind_code", "tool": "kind_tool"}
TRANSCRIPT_FEATURES = ("kind_turn", "kind_thinking", "kind_code", "kind_tool", "failure",
                       "ask_failure", "ask_command", "ask_code", "session_similarity",
                       "session_fused", "similarity_rank", "keyword_rank", "session_top",
                       "turn_similarity", "turn_keyword", "turn_term_recall", "turn_fused",
                       "reply_open", "outcome", "same_project", "session_words")
SESSION_TOP = 3  # a session's standing: the mean of its best SESSION_TOP similarities
RANK_OFFSET = 10.0  # rank features are RANK_OFFSET / (RANK_OFFSET + rank)


class Cues(Protocol):
    """What the features read of the cues (``TranscriptCues``, [rerank.transcript_cues]
    in engine.retrieval.config): which of failure / command / code a question asks."""

    def asks(self, query: str) -> dict[str, bool]: ...


@dataclass(frozen=True)
class SessionChunk:
    """What the transcript features read of a window candidate."""

    kind: str
    session: str | None
    failure: bool
    fused: float
    similarity: float | None
    keyword: float | None
    turn: int | None = None  # which request of its session it answers
    ordinal: int = 0  # its place in the session
    opens: bool = False  # it opens a reply ("Assistant: ...", not a continuation)
    term_recall: float = 0.0  # the rerank's query-term share of it
    project: str | None = None  # its session's project


def _rank_scores(values: Sequence[float | None]) -> list[float]:
    order = sorted((i for i, v in enumerate(values) if v is not None and v > 0),
                   key=lambda i: -float(values[i] or 0.0))
    out = [0.0] * len(values)
    for rank, i in enumerate(order, start=1):
        out[i] = RANK_OFFSET / (RANK_OFFSET + rank)
    return out


def _turn_key(i: int, c: SessionChunk) -> tuple[str | None, int | None, int]:
    """A chunk's turn: (session, turn); a chunk of no known turn is a turn of its own."""
    return (c.session, c.turn, -1 if c.turn is not None and c.session is not None else i)


def _turn_features(window: Sequence[SessionChunk], sims: Sequence[float]
                   ) -> list[dict[str, float]]:
    """Each chunk's turn seen as one unit: its best similarity, keyword score and
    query-term share, its fused score over the best turn's, and whether the chunk opens
    a reply or is the turn's last reply (its outcome)."""
    turns: dict[tuple[str | None, int | None, int], list[int]] = defaultdict(list)
    for i, c in enumerate(window):
        turns[_turn_key(i, c)].append(i)
    fused = {t: sum(window[i].fused for i in ix) for t, ix in turns.items()}
    best_fused = max(fused.values(), default=0.0) or 1.0
    best_kw = max((c.keyword or 0.0 for c in window), default=0.0) or 1.0
    out: list[dict[str, float]] = [{} for _ in window]
    for t, ix in turns.items():
        replies = [i for i in ix if window[i].kind == "turn_pair"]
        last = max(replies, key=lambda i: window[i].ordinal) if replies else -1
        shared = {"turn_similarity": max(sims[i] for i in ix),
                  "turn_keyword": max(max(0.0, window[i].keyword or 0.0) for i in ix) / best_kw,
                  "turn_term_recall": max(window[i].term_recall for i in ix),
                  "turn_fused": fused[t] / best_fused}
        for i in ix:
            out[i] = {**shared, "reply_open": float(window[i].opens
                                                    and window[i].kind == "turn_pair"),
                      "outcome": float(i == last)}
    return out


def transcript_features(query: str, window: Sequence[SessionChunk],
                        cues: Cues, project: str | None = None,
                        sessions: Mapping[str, float] | None = None
                        ) -> list[dict[str, float]]:
    """The transcript features of each window candidate, in window order; ``project``:
    the project the question is asked from (None: from none); ``sessions``: each
    session's share of the question's rare words (``session_words``; None: unknown)."""
    asks = cues.asks(query)
    by_session: dict[str | None, list[int]] = defaultdict(list)
    for i, c in enumerate(window):
        by_session[c.session].append(i)
    sims = [max(0.0, c.similarity or 0.0) for c in window]
    fused_of = {s: sum(window[i].fused for i in ix) for s, ix in by_session.items()}
    best_fused = max(fused_of.values(), default=0.0) or 1.0
    best_sim = {s: max(sims[i] for i in ix) for s, ix in by_session.items()}
    top_of = {s: sum(sorted((sims[i] for i in ix), reverse=True)[:SESSION_TOP])
              / min(SESSION_TOP, len(ix)) for s, ix in by_session.items()}
    best_top = max(top_of.values(), default=0.0)
    turn = _turn_features(window, sims)
    sim_rank = _rank_scores([c.similarity for c in window])
    kw_rank = _rank_scores([c.keyword for c in window])
    out = []
    for i, c in enumerate(window):
        tool = c.kind == "tool"
        feats = {name: 0.0 for name in KIND_FEATURES.values()}
        if c.kind in KIND_FEATURES:
            feats[KIND_FEATURES[c.kind]] = 1.0
        feats.update({
            "failure": float(c.failure),
            "ask_failure": float(asks.get("failure", False) and (c.failure or tool)),
            "ask_command": float(asks.get("command", False) and tool),
            "ask_code": float(asks.get("code", False) and c.kind == "session_code"),
            "session_similarity": best_sim[c.session] if c.session is not None else 0.0,
            "session_fused": fused_of[c.session] / best_fused if c.session is not None else 0.0,
            "similarity_rank": sim_rank[i],
            "keyword_rank": kw_rank[i],
            "session_top": top_of[c.session] - best_top if c.session is not None else -1.0,
            **turn[i],
            "same_project": float(project is not None and c.project == project),
            "session_words": (sessions or {}).get(c.session, 0.0) if c.session else 0.0,
        })
        out.append(feats)
    return out
