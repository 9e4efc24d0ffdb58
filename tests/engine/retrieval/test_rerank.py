"""Answer-focused rerank of the fused window, and the cross-encoder hook's error path."""

from __future__ import annotations

import datetime as dt
import sys
import time
import types
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from engine.errors import ConfigError
from engine.retrieval.config import CrossEncoderConfig, RerankConfig
from engine.retrieval.profiles import DEFAULT_PROFILES, PROFILES
from engine.retrieval.query import analyze_query
from engine.retrieval.rerank import (
    FEATURES,
    CrossEncoderReranker,
    RerankCandidate,
    rerank,
)

# Chat memory: the profile whose features include speakers, dates and answer cues.
CONV = RerankConfig(default_profile="conversation")


def _epoch(y: int, m: int, d: int) -> float:
    return dt.datetime(y, m, d, 12, tzinfo=dt.UTC).timestamp()


def _order(question: str, cands: Sequence[RerankCandidate], cfg: RerankConfig | None = None
           ) -> list:
    return [i for i, _, _ in rerank(analyze_query(question), cands, cfg)]


def test_candidate_answering_the_date_intent_moves_above_one_that_does_not() -> None:
    cands = [
        RerankCandidate("plain", "Ada: the pottery class was so much fun", 0.033),
        RerankCandidate("answer", "Ada: I signed up for a pottery class yesterday", 0.031),
    ]
    out = rerank(analyze_query("When did Ada sign up for the pottery class?"), cands, CONV)
    assert [i for i, _, _ in out] == ["answer", "plain"]
    feats = {i: f for i, _, f in out}
    assert feats["answer"]["intent"] == 1.0 and feats["plain"]["intent"] == 0.0


def test_candidate_naming_the_asked_entity_beats_a_distractor() -> None:
    cands = [
        RerankCandidate("other", "Riley: I love to paint landscapes", 0.033),
        RerankCandidate("asked", "Jordan: I paint sunsets most evenings", 0.030),
    ]
    out = rerank(analyze_query("What does Jordan like to paint?"), cands, CONV)
    assert out[0][0] == "asked"
    feats = {i: f for i, _, f in out}
    assert feats["other"]["distractor"] == 1.0 and feats["asked"]["distractor"] == 0.0
    assert feats["asked"]["entity"] == 1.0


def test_entity_found_in_meta_fields_counts() -> None:
    cands = [RerankCandidate("a", "the function returns None on empty input", 0.03,
                             meta={"source": "/repo/src/parser.py"}),
             RerankCandidate("b", "the function returns a list", 0.03,
                             meta={"source": "/repo/src/lexer.py"})]
    out = rerank(analyze_query("what does parser.py return"), cands, CONV)
    assert out[0][0] == "a" and out[0][2]["entity"] == 1.0


def test_rare_query_terms_weigh_more_than_common_ones() -> None:
    common = [RerankCandidate(f"c{i}", "Sam: the weather was nice today", 0.03)
              for i in range(5)]
    rare = RerankCandidate("rare", "Sam: the glacier trip was nice", 0.03)
    out = rerank(analyze_query("What was nice about the glacier weather?"), [*common, rare])
    assert out[0][0] == "rare"


def test_time_on_the_asked_date_beats_a_week_off() -> None:
    cands = [RerankCandidate("week_off", "Kai: we shared photos of the lake", 0.033,
                             time=_epoch(2023, 10, 20)),
             RerankCandidate("same_day", "Kai: we shared photos of the lake", 0.030,
                             time=_epoch(2023, 10, 13))]
    out = rerank(analyze_query("What photos did Kai share on October 13, 2023?"), cands, CONV)
    assert out[0][0] == "same_day"
    feats = {i: f for i, _, f in out}
    assert feats["same_day"]["date"] == 1.0 and feats["week_off"]["date"] == 0.0
    assert feats["same_day"]["year"] == 1.0


def test_month_match_beats_year_only() -> None:
    cands = [RerankCandidate("june", "Kai: I hurt my knee", 0.03, time=_epoch(2023, 6, 2)),
             RerankCandidate("oct", "Kai: I hurt my knee", 0.03, time=_epoch(2023, 10, 2))]
    out = rerank(analyze_query("What setback did Kai face in October 2023?"), cands, CONV)
    assert out[0][0] == "oct"
    assert out[0][2]["year"] == 1.0 and out[1][2]["year"] == 0.5


def test_only_the_window_is_reordered_and_the_tail_follows_in_fused_order() -> None:
    cands: list[RerankCandidate[int | str]] = [
        RerankCandidate(i, "filler words only", 1.0 - i / 100) for i in range(10)]
    cands.append(RerankCandidate("late", "the glacier answer", 0.5))  # below the window
    cands.insert(0, RerankCandidate("win", "the glacier answer", 0.985))  # inside it
    simple = {p: {"fused": 0.8, "term_recall": 1.0} for p in PROFILES}
    out = rerank(analyze_query("glacier answer"), cands,
                 RerankConfig(window=5, profiles=simple), all_features=True)
    ids = [i for i, _, _ in out]
    assert ids[0] == "win"
    assert ids[5:] == [4, 5, 6, 7, 8, 9, "late"]
    scores = [s for _, s, _ in out]
    assert scores == sorted(scores, reverse=True)
    assert set(out[0][2]) == set(FEATURES) and set(out[-1][2]) == {"fused"}


def test_lane_scores_are_features() -> None:
    """The query's similarity and the keyword score break a tie that fusion left; a
    candidate whose similarity is not known (its vector not made yet) is scored with the
    window's median, between the near and the far one."""
    cands = [RerankCandidate("far", "Lee: a day at the shore", 0.03, similarity=0.2),
             RerankCandidate("near", "Lee: a day at the shore", 0.03, similarity=0.7,
                             keyword=4.0),
             RerankCandidate("none", "Lee: a day at the shore", 0.03)]
    out = rerank(analyze_query("beach trip"), cands)
    assert [i for i, _, _ in out] == ["near", "none", "far"]
    feats = {i: f for i, _, f in out}
    assert feats["near"]["similarity"] == 0.7 and feats["near"]["keyword"] == 1.0
    assert feats["none"]["similarity"] == pytest.approx(0.45) and feats["none"]["keyword"] == 0.0
    off = RerankConfig(profiles={p: {**w, "similarity": 0.0, "keyword": 0.0}
                                 for p, w in DEFAULT_PROFILES.items()})
    assert _order("beach trip", cands, off) == ["far", "near", "none"]  # ties: fused order


def test_ties_keep_fused_order_and_results_are_deterministic() -> None:
    cands = [RerankCandidate(i, "same text", 0.5) for i in range(8)]
    first = rerank(analyze_query("same text"), cands)
    assert [i for i, _, _ in first] == list(range(8))
    assert first == rerank(analyze_query("same text"), cands)
    assert rerank(analyze_query("anything"), []) == []


def test_zero_weights_leave_fused_order() -> None:
    cfg = RerankConfig(profiles={p: {"fused": 1.0} for p in PROFILES})
    cands = [RerankCandidate("a", "x", 0.3), RerankCandidate("b", "Jordan paints", 0.2)]
    assert _order("What does Jordan paint?", cands, cfg) == ["a", "b"]
    assert _order("What does Jordan paint?", cands, CONV) == ["b", "a"]


def test_custom_cues_and_patterns() -> None:
    cfg = RerankConfig(intent_cues={"count": ("umpteen",)},
                       intent_patterns={"count": (r"\bN=\d+",)}, default_profile="conversation")
    cands = [RerankCandidate("no", "we ran it", 0.03),
             RerankCandidate("cue", "we ran it umpteen times", 0.03),
             RerankCandidate("pat", "we ran it, N=12", 0.03)]
    out = rerank(analyze_query("How many runs?"), cands, cfg)
    assert [i for i, _, _ in out][-1] == "no"


@pytest.mark.parametrize("kwargs", [
    {"window": 0}, {"profiles": {p: {"fused": 11.0} for p in PROFILES}},
    {"profiles": {"document": {"bogus": 1.0}}}, {"default_profile": "nope"},
    {"kind_profiles": {"document": "nope"}}, {"fused_norm": "softmax"}, {"scan_chars": 0},
    {"intent_patterns": {"count": ("(",)}}, {"intent_patterns": {"mood": ("x",)}},
    {"intent_cues": {"count": "one two"}},
])
def test_config_validation(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        RerankConfig(**kwargs)


def test_each_candidate_is_scored_by_its_kind_profile() -> None:
    """Chat features (the asked date, answer cues) apply to conversation items only."""
    q = analyze_query("When did Ada sign up for the pottery class?")
    text = "Ada: I signed up for a pottery class yesterday"
    cands = [RerankCandidate("doc", text, 0.03, profile="document"),
             RerankCandidate("chat", text, 0.03, profile="conversation")]
    feats = {i: f for i, _, f in rerank(q, cands)}
    assert "intent" not in feats["doc"] and feats["chat"]["intent"] == 1.0
    assert feats["doc"]["term_recall"] == feats["chat"]["term_recall"]
    out = rerank(q, cands, all_features=True)
    assert all(set(f) == set(FEATURES) for _, _, f in out)


def test_profile_weights_decide_and_unknown_kinds_fall_back() -> None:
    only_sim = {p: {"fused": 0.1, "similarity": 1.0} for p in PROFILES}
    only_sim["transcript"] = {"fused": 0.1, "keyword": 1.0}
    cfg = RerankConfig(profiles=only_sim)
    cands = [RerankCandidate("kw", "x", 0.03, similarity=0.1, keyword=5.0, profile="transcript"),
             RerankCandidate("sim", "x", 0.03, similarity=0.9, keyword=1.0, profile="document")]
    assert _order("x", cands, cfg)[0] == "kw"
    from engine.retrieval.profiles import profile_of
    assert profile_of("conversation", cfg) == "conversation"
    assert profile_of("code", cfg) == "document"
    assert profile_of("no-such-kind", cfg) == "document"


def test_default_answer_cues_hold_no_topic_words() -> None:
    """Cues are closed-class words (calendar, numbers, connectives), not chat topics."""
    from engine.retrieval.lexicon import DEFAULT_ANSWER_CUES
    words = {w for cues in DEFAULT_ANSWER_CUES.values() for c in cues for w in c.split()}
    assert not words & {"adopted", "passion", "bought", "beach", "museum", "hobby", "love"}
    assert set(DEFAULT_ANSWER_CUES) <= {"date", "count", "reason", "location"}


def test_fifty_short_candidates_rerank_quickly() -> None:
    words = ["we", "went", "to", "the", "lake", "yesterday", "because", "I", "love",
             "painting", "sunsets", "with", "my", "kids"]
    cands = [RerankCandidate(i, f"Speaker{i % 2}: " + " ".join(words[i % 5:] + words[:i % 5]),
                             1.0 / (60 + i), time=_epoch(2023, 5, 1 + i % 28))
             for i in range(50)]
    analysis = analyze_query("When did Speaker1 paint sunsets at the lake in May 2023?")
    rerank(analysis, cands)
    best = min(_timed(lambda: rerank(analysis, cands)) for _ in range(5))
    assert best < 0.02  # about 1 ms on a laptop; generous for loaded CI machines


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


@pytest.mark.parametrize("path", ["", "/nonexistent/ctx-cross-encoder"])
def test_cross_encoder_requires_an_existing_local_directory(path: str) -> None:
    with pytest.raises(ConfigError):
        CrossEncoderReranker(CrossEncoderConfig(model_path=path))


def test_cross_encoder_rejects_a_file_path(tmp_path: Path) -> None:
    file = tmp_path / "model.bin"
    file.write_bytes(b"not a model")
    with pytest.raises(ConfigError):
        CrossEncoderReranker(CrossEncoderConfig(model_path=str(file)))


def test_cross_encoder_loads_local_files_only_and_wraps_load_errors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict] = []

    class RefusingCrossEncoder:
        def __init__(self, path: str, **kwargs: object) -> None:
            calls.append({"path": path, **kwargs})
            raise OSError("no model files here")

    fake = types.ModuleType("sentence_transformers")
    fake.CrossEncoder = RefusingCrossEncoder  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    with pytest.raises(ConfigError):
        CrossEncoderReranker(CrossEncoderConfig(model_path=str(tmp_path)))
    assert calls == [{"path": str(tmp_path), "local_files_only": True, "device": None,
                      "max_length": 256}]


@pytest.mark.parametrize("kwargs", [{"weight": 1.5}, {"window": 0}, {"max_length": 1}])
def test_cross_encoder_config_validation(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        CrossEncoderConfig(model_path="/x", **kwargs)


class _FakeModel:
    """Scores a pair by how often the query's last word occurs in the text."""

    def predict(self, pairs: list[tuple[str, str]], **_: object) -> list[float]:
        return [float(t.split().count(q.split()[-1])) for q, t in pairs]


def test_cross_encoder_blend_reorders_the_head_and_keeps_the_tail() -> None:
    reranker = CrossEncoderReranker.__new__(CrossEncoderReranker)
    reranker._model = _FakeModel()
    reranker.cfg = CrossEncoderConfig(model_path="/unused", weight=0.9, window=2)
    ranked = [("a", 2.0, {"fused": 1.0}), ("b", 1.9, {"fused": 0.9}),
              ("c", 1.0, {"fused": 0.5})]
    texts = {"a": "nothing here", "b": "kiln kiln", "c": "kiln"}
    out = reranker.rerank("about the kiln", ranked, texts)
    assert [i for i, _, _ in out] == ["b", "a", "c"]
    assert out[0][2]["cross_encoder"] == 1.0
    assert [s for _, s, _ in out] == sorted((s for _, s, _ in out), reverse=True)


def test_the_deleted_sibling_feature_is_refused_in_config() -> None:
    """``sibling`` stayed at weight 0 in the fit and was deleted: a profile naming it is a
    config error, not a silently ignored weight."""
    with pytest.raises(ConfigError, match="unknown features"):
        RerankConfig(profiles={**DEFAULT_PROFILES, "document": {"fused": 1.0, "sibling": 1.0}})


def test_terms_of_words_is_the_plain_definition() -> None:
    """The cached word -> term table gives what the definition gives, stopwords apart."""
    from engine.retrieval.query import _is_content, stem, terms_of_words

    words = {"painted", "paints", "the", "x", "42", "2023", "123", "café", "ab", "of"}
    for stop in (frozenset({"the", "of"}), frozenset({"paints"})):
        want = {stem(w) for w in words - stop if (len(w) > 1 and w.isalpha()) or _is_content(w)}
        assert terms_of_words(words, stop) == want


def test_scans_made_ahead_rank_as_scans_made_in_the_rerank() -> None:
    from engine.retrieval.config import RerankConfig
    from engine.retrieval.query import analyze_query
    from engine.retrieval.rerank import RerankCandidate, rerank
    from engine.retrieval.scan import scan_all

    cfg = RerankConfig()
    texts = ["Anna adopted a dog in Paris in May 2022.", "The dog's name is Rex.",
             "Paris trip notes: museums, cafés, the river.", "Unrelated budget memo."]
    cands = [RerankCandidate(id=i, text=t, fused=1.0 / (i + 1), time=1.65e9 + i * 86400,
                             meta={"title": f"note {i}", "speaker": "Anna"})
             for i, t in enumerate(texts)]
    a = analyze_query("When did Anna adopt her dog in Paris?")
    plain = rerank(a, cands, cfg, all_features=True)
    ahead = rerank(a, cands, cfg, all_features=True, scans=scan_all(cands[:2], cfg))
    assert ahead == plain and plain[0][2]["term_recall"] > 0
    # A scan of another text is used as given: the rerank trusts its caller's scans.
    wrong = scan_all([RerankCandidate(id=0, text="nothing here", fused=1.0)], cfg)
    assert rerank(a, cands, cfg, all_features=True, scans=wrong) != plain
