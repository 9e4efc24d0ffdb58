"""Feedback from the first hits (issue 31, recall-prf), its pure part
(``engine.retrieval.feedback``): the query's vector moved toward the first hits', their
distinctive words; and its settings (``rerank.feedback*``, off by default). The room's
hook is tested in tests/engine/flows/search/test_recall_feedback.py."""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import ConfigError
from engine.retrieval.config import RerankConfig
from engine.retrieval.feedback import feedback_ids, feedback_terms, feedback_vector


def _unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_feedback_ranks_a_chunk_in_the_first_hits_words_above_one_in_the_question_s_only(
        ) -> None:
    """The question says "x"; its first hits say "x" and "y"; a chunk that says only "y"
    (the answer, paraphrased) and one that says "x" and "z" (a look-alike) are equally far
    from the question, and the feedback puts the "y" one first."""
    q = _unit(1, 0, 0)
    first = {1: _unit(1, 1, 0), 2: _unit(1, 0.8, 0)}
    answer, lookalike = _unit(0.5, 1, 0), _unit(0.5, 0, 1)
    assert float(answer @ q) == pytest.approx(float(lookalike @ q))
    moved = feedback_vector(q, [1, 2], first, 0.5)
    assert moved is not None
    assert float(np.linalg.norm(moved)) == pytest.approx(1.0, abs=1e-5)
    assert float(answer @ moved) > float(lookalike @ moved)
    # more beta, further from the question
    far = feedback_vector(q, [1, 2], first, 1.0)
    assert far is not None and float(far @ q) < float(moved @ q)


def test_no_feedback_without_weight_or_vectors() -> None:
    q = _unit(1, 0, 0)
    assert feedback_vector(q, [1], {1: _unit(0, 1, 0)}, 0.0) is None
    assert feedback_vector(q, [7], {1: _unit(0, 1, 0)}, 0.5) is None  # no vector for 7
    assert feedback_vector(q, [1], {1: np.ones(4, np.float32)}, 0.5) is None  # other size


def test_feedback_reads_the_first_session_chunks_or_the_best_session_s() -> None:
    ranked: list[tuple[int, float, dict[str, float]]] = [(10, 0.9, {}), (11, 0.8, {}), (12, 0.7, {}), (13, 0.6, {}), (14, 0.5, {})]
    session_of = {10: "a", 12: "b", 13: "a", 14: "a"}  # 11 is a document chunk
    assert feedback_ids(ranked, session_of, 3, same_session=False) == [10, 12, 13]
    assert feedback_ids(ranked, session_of, 3, same_session=True) == [10, 13, 14]
    assert feedback_ids(ranked, {}, 3, same_session=False) == []


def test_feedback_is_off_by_default_and_its_settings_are_checked() -> None:
    cfg = RerankConfig()
    assert cfg.feedback == 0.0
    with pytest.raises(ConfigError, match="rerank.feedback ") as e:
        RerankConfig(feedback=-0.5)
    assert e.value.details["key"] == "rerank.feedback"
    with pytest.raises(ConfigError, match="rerank.feedback_chunks") as e:
        RerankConfig(feedback_chunks=0)
    assert e.value.details["key"] == "rerank.feedback_chunks"
    for key, bad in (("feedback_from", "all"), ("feedback_use", "always")):
        with pytest.raises(ConfigError, match=f"rerank.{key}") as e:
            RerankConfig(**{key: bad})  # type: ignore[arg-type]
        assert e.value.details["key"] == f"rerank.{key}"


class _Counts:
    """A store of 1,000 chunks: "the" in all, "migration" in 500, the rest in few."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def chunk_count(self) -> int:
        return 1000

    def doc_frequency(self, words: object) -> dict[str, int]:
        got = list(words)  # type: ignore[call-overload]
        self.asked += got
        df = {"the": 1000, "migration": 500, "lefthook": 3, "prisma": 4, "husky": 2}
        return {w: df.get(w, 10) for w in got}


def test_keyword_feedback_picks_the_first_hits_rare_words_not_the_question_s() -> None:
    texts = ["husky ran the migration and the migration failed",
             "husky again: the migration hook, lefthook config 42"]
    words = feedback_terms(texts, {"lefthook"}, {"and", "again"}, _Counts(), 10)
    assert words[0] == "husky"  # rare in the store, twice in the hits
    assert "lefthook" not in words  # the question's own word (by stem)
    assert "the" not in words and "42" not in words and "and" not in words
    assert words[-1] == "migration"  # the most frequent in the hits, but common in the store
    assert feedback_terms(texts, {"lefthook"}, {"and", "again"}, _Counts(), 2) == words[:2]
    assert feedback_terms(texts, set(), set(), _Counts(), 0) == []
