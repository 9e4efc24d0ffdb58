"""The learned reader's math on synthetic data: the query map, the term table, the
pairs a session yields, and the model's stored form."""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import ConfigError
from engine.retrieval.adapt import Learned, map_query, translated_words
from engine.retrieval.adapt_fit import fit_map, fit_terms, pair_mrr
from engine.retrieval.adapt_pairs import SessionPiece, session_pairs
from engine.retrieval.config import AdaptConfig

CFG = AdaptConfig(min_pairs=50, steps=150, batch=64, holdout=0.2)


def synthetic(n: int = 600, dim: int = 32, seed: int = 1, sessions: int = 60
              ) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Queries and their documents in a space where a document is a fixed linear
    transform of its query, plus noise: the identity reads them poorly."""
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(n, dim)).astype(np.float32)
    mix = (np.eye(dim) * 0.2 + rng.normal(size=(dim, dim)) / np.sqrt(dim)).astype(np.float32)
    d = q @ mix.T + 0.3 * rng.normal(size=(n, dim)).astype(np.float32)
    return q, d, [i % sessions for i in range(n)]


def test_the_map_improves_pair_retrieval_in_sample() -> None:
    q, d, groups = synthetic()
    fitted = fit_map(q, d, groups, CFG, seed=0)
    assert fitted.matrix is not None
    before, after = pair_mrr(q, d), pair_mrr(q, d, fitted.matrix)
    assert after > before + 0.1, (before, after)
    assert fitted.holdout_mrr_map > fitted.holdout_mrr_identity


def test_the_fit_is_deterministic_given_a_seed() -> None:
    q, d, groups = synthetic()
    one = fit_map(q, d, groups, CFG, seed=3).matrix
    two = fit_map(q, d, groups, CFG, seed=3).matrix
    other = fit_map(q, d, groups, CFG, seed=4).matrix
    assert one is not None and two is not None and other is not None
    assert one.tobytes() == two.tobytes()
    assert one.tobytes() != other.tobytes()


def test_no_map_on_too_few_pairs_or_when_it_does_not_help() -> None:
    q, d, groups = synthetic(n=40)
    assert fit_map(q, d, groups, CFG).matrix is None  # under min_pairs
    rng = np.random.default_rng(0)
    noise_d = rng.normal(size=(600, 32)).astype(np.float32)  # no relation to learn
    q, _, groups = synthetic()
    fitted = fit_map(q, noise_d, groups, CFG, seed=0)
    assert fitted.matrix is None or fitted.holdout_mrr_map > fitted.holdout_mrr_identity


def test_a_fit_is_always_checked_on_a_session_it_did_not_see() -> None:
    q, d, _ = synthetic()
    one = AdaptConfig(**{**CFG.__dict__, "min_pairs": 10})
    assert fit_map(q, d, [0] * len(q), one).matrix is None  # one session: nothing to hold out
    fitted = fit_map(q, d, [i % 2 for i in range(len(q))], one)  # 2 * 0.2 rounds to 0
    assert fitted.holdout_mrr_identity > 0


def test_a_strong_pull_toward_identity_keeps_the_map_near_it() -> None:
    q, d, groups = synthetic()
    loose = fit_map(q, d, groups, AdaptConfig(**{**CFG.__dict__, "identity_weight": 0.0}))
    tight = fit_map(q, d, groups, AdaptConfig(**{**CFG.__dict__, "identity_weight": 50.0,
                                                  "holdout": 0.0}))
    eye = np.eye(32)
    assert loose.matrix is not None and tight.matrix is not None
    assert np.linalg.norm(tight.matrix - eye) < np.linalg.norm(loose.matrix - eye)


def test_both_sides_fit_runs_and_helps() -> None:
    q, d, groups = synthetic()
    fitted = fit_map(q, d, groups, CFG, seed=0, sides="both")
    assert fitted.matrix is not None
    assert pair_mrr(q, d, fitted.matrix, "both") > pair_mrr(q, d)


def test_map_query_normalizes_and_leaves_other_sizes_alone() -> None:
    v = np.ones(4, dtype=np.float32) / 2
    out = map_query(np.diag([2.0, 1.0, 1.0, 1.0]).astype(np.float32), v)
    assert abs(float(np.linalg.norm(out)) - 1.0) < 1e-6 and out[0] > out[1]
    assert map_query(np.eye(3, dtype=np.float32), v) is v
    assert map_query(None, v) is v


def test_terms_learn_the_words_that_answer_a_request() -> None:
    pairs = [("the build is flaky again", "Added a retry with backoff to the runner")] * 5
    pairs += [("please update the readme", "Edited docs and the changelog")] * 5
    terms = fit_terms(pairs, AdaptConfig(terms_min_count=3, terms_per_word=2))
    assert {t for t, _ in terms["flaky"]} <= {"retry", "backoff", "added", "runner"}
    assert len(terms["flaky"]) == 2
    assert "flaky" not in {t for t, _ in terms["readme"]}
    words = translated_words(terms, ["flaky", "build"], per_word=2, limit=3)
    assert len(words) <= 3 and "flaky" not in words and "build" not in words
    assert fit_terms(pairs[:2], AdaptConfig(terms_min_count=3)) == {}


def test_pairs_of_a_session() -> None:
    s = "sess"
    pieces = [
        SessionPiece(1, s, 0, "turn_pair", False, "User: fix the parser\nAssistant: I will"),
        SessionPiece(2, s, 0, "tool", True,
                     "User: fix the parser\nAssistant: run the tests\nTool Bash: pytest\n"
                     "Result (exit 1): boom"),
        SessionPiece(3, s, 0, "turn_pair", False,
                     "User: fix the parser\nAssistant: the tokenizer dropped quotes"),
        SessionPiece(4, s, 1, "turn_pair", False, "User: ship it\nAssistant: Done: merged."),
    ]
    pairs = session_pairs(pieces, texts_per_session=8)
    assert pairs.sessions == 1
    texts = {(t.chunk_id, t.role): t.text for t in pairs.texts}
    assert texts[(1, "request")] == "fix the parser"
    assert texts[(2, "intent")] == "run the tests"
    kinds = {(q, d, kind) for q, d, _, kind in pairs.text_pairs}
    assert ((1, "request"), 1, "request") in kinds and ((1, "request"), 3, "request") in kinds
    assert ((1, "request"), 2, "request") in kinds  # the turn's tool call
    assert ((1, "request"), 4, "summary") in kinds  # first request -> closing summary
    assert ((2, "intent"), 2, "intent") in kinds
    assert (2, 3, 0, "diagnosis") in pairs.chunk_pairs  # the failure -> the next reply
    request, answer = pairs.term_pairs[0]
    assert request == "fix the parser" and "fix the parser" not in answer
    one = session_pairs(pieces, texts_per_session=1)
    assert len({(t.chunk_id, t.role) for t in one.texts}) <= 2  # the first request kept


def test_the_model_round_trips_without_pickle() -> None:
    m = Learned(np.arange(9, dtype=np.float32).reshape(3, 3), {"flaky": (("retry", 0.5),)},
                {"pairs": 10, "sessions": 2})
    back = Learned.from_bytes(m.to_bytes())
    assert back.matrix is not None and m.matrix is not None
    assert back.matrix.tobytes() == m.matrix.tobytes()
    assert back.terms == m.terms and back.info == m.info
    none = Learned.from_bytes(Learned(None, {}, {}).to_bytes())
    assert none.matrix is None
    with pytest.raises(ValueError):
        Learned.from_bytes(b"\x05\x00\x00\x00{bad")


def test_config_is_checked() -> None:
    with pytest.raises(ConfigError, match="recall.adapt_fit.steps"):
        AdaptConfig(steps=-1)
    with pytest.raises(ConfigError, match="recall.adapt_fit.temperature"):
        AdaptConfig(temperature=0.0)
