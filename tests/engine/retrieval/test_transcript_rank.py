"""Transcript rerank features (issue 26): facets, the question's ask, the session's
standing in the window, and rank features; and that the transcript profile uses them."""

from __future__ import annotations

import pytest

from engine.retrieval.config import RerankConfig, TranscriptCues
from engine.retrieval.query import analyze_query
from engine.retrieval.rerank import RerankCandidate, rerank
from engine.retrieval.transcript_rank import (
    SessionChunk,
    transcript_features,
)


@pytest.mark.parametrize(("query", "asks"), [
    ("why did the release build fail on main?", {"failure"}),
    ("which command pulled the job log", {"command"}),
    ("show the snippet for the fallback ref", {"code"}),
    ("what did we decide about the cache", set()),
])
def test_cues_say_what_a_question_asks(query: str, asks: set[str]) -> None:
    got = TranscriptCues().asks(query)
    assert {k for k, v in got.items() if v} == asks


def test_features_of_a_window() -> None:
    window = [SessionChunk("tool", "s1", True, 1.0, 0.30, 5.0),
              SessionChunk("turn_pair", "s1", False, 0.6, 0.62, None),
              SessionChunk("thinking", "s2", False, 0.8, 0.40, 2.0)]
    f = transcript_features("why did the deploy fail?", window, TranscriptCues())
    assert [r["kind_tool"] for r in f] == [1.0, 0.0, 0.0]
    assert [r["kind_thinking"] for r in f] == [0.0, 0.0, 1.0]
    assert [r["ask_failure"] for r in f] == [1.0, 0.0, 0.0]
    assert [r["ask_command"] for r in f] == [0.0, 0.0, 0.0]
    # s1 holds the best similarity (0.62) and the larger fused sum (1.6 of 1.6)
    assert [r["session_similarity"] for r in f] == [0.62, 0.62, 0.40]
    assert [r["session_fused"] for r in f] == pytest.approx([1.0, 1.0, 0.5])
    assert [r["similarity_rank"] for r in f] == pytest.approx([10 / 13, 10 / 11, 10 / 12])
    assert [r["keyword_rank"] for r in f] == pytest.approx([10 / 11, 0.0, 10 / 12])


def test_the_transcript_profile_puts_the_answering_reply_above_reasoning() -> None:
    """Fused order: reasoning of another session first; the profile ranks the reply of
    the session that matches best above it."""
    a = analyze_query("what did we decide about caching the ref?")
    cands = [RerankCandidate(id="think", text="Let me think about caching", fused=1.0,
                             similarity=0.35, meta={"kind": "thinking", "session": "s2"},
                             profile="transcript"),
             RerankCandidate(id="reply", text="We keep the ref cached per worktree.",
                             fused=0.7, similarity=0.6,
                             meta={"kind": "turn_pair", "session": "s1"}, profile="transcript")]
    fused_only = RerankConfig(profiles={**RerankConfig().profiles, "transcript": {"fused": 1}})
    assert [i for i, _, _ in rerank(a, cands, fused_only)] == ["think", "reply"]
    ranked = rerank(a, cands, RerankConfig())
    assert [i for i, _, _ in ranked] == ["reply", "think"]
    assert ranked[0][2]["session_similarity"] == pytest.approx(0.6)


def test_a_turn_is_scored_as_one_unit() -> None:
    """Chunks of one turn share its best similarity, keyword score and term share; the
    reply that opens is marked, and the turn's last reply is its outcome."""
    window = [SessionChunk("turn_pair", "s1", False, 0.5, 0.70, 4.0, turn=2, ordinal=10,
                           opens=True, term_recall=0.2),
              SessionChunk("tool", "s1", False, 0.3, 0.20, None, turn=2, ordinal=11,
                           term_recall=0.9),
              SessionChunk("turn_pair", "s1", False, 0.1, 0.30, 2.0, turn=2, ordinal=12),
              SessionChunk("turn_pair", "s1", False, 0.4, 0.50, 8.0, turn=3, ordinal=20,
                           opens=True),
              SessionChunk("code", None, False, 0.2, 0.10, None)]
    f = transcript_features("what came of the build", window, TranscriptCues())
    assert [r["turn_similarity"] for r in f] == [0.70, 0.70, 0.70, 0.50, 0.10]
    assert [r["turn_keyword"] for r in f] == pytest.approx([0.5, 0.5, 0.5, 1.0, 0.0])
    assert [r["turn_term_recall"] for r in f] == [0.9, 0.9, 0.9, 0.0, 0.0]
    assert [r["turn_fused"] for r in f] == pytest.approx([1.0, 1.0, 1.0, 0.4 / 0.9, 0.2 / 0.9])
    assert [r["reply_open"] for r in f] == [1.0, 0.0, 0.0, 1.0, 0.0]
    assert [r["outcome"] for r in f] == [0.0, 0.0, 1.0, 1.0, 0.0]
    assert [r["session_top"] for r in f] == pytest.approx([0.0, 0.0, 0.0, 0.0, -1.0])


def test_same_project_marks_the_asked_projects_chunks() -> None:
    window = [SessionChunk("turn_pair", "s1", False, 0.5, 0.7, None, project="shop"),
              SessionChunk("tool", "s2", False, 0.5, 0.7, None, project="blog"),
              SessionChunk("tool", None, False, 0.5, 0.7, None)]
    asked = transcript_features("what came of it", window, TranscriptCues(), "blog")
    assert [r["same_project"] for r in asked] == [0.0, 1.0, 0.0]
    nowhere = transcript_features("what came of it", window, TranscriptCues())
    assert [r["same_project"] for r in nowhere] == [0.0, 0.0, 0.0]

