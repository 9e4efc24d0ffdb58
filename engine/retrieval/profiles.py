"""Ranking by kind of memory: which rerank features count, and how much, per kind.

Every stored chunk belongs to a source of some kind (document, code, text,
conversation, transcript). A *profile* is the feature -> weight map that the
rerank applies to the chunks of the kinds mapped to it, so that what helps chat
memory (who spoke, the asked date, answer cues) is not imposed on abstracts,
files or coding sessions, and a new kind is composed from the same features
rather than special-cased. A feature missing from a profile weighs 0 there and
is not computed for its chunks.

The features (all in [0, 1]; see ``rerank``):

- ``fused``: the hit's reciprocal-rank-fusion score over the window's best;
- ``similarity``: the query's cosine similarity to the chunk (clipped to 0..1); a
  chat turn is read with its adjacent turns (``RerankConfig.context_share``);
- ``keyword``: its BM25 score over the window's best;
- ``term_recall``: share of the query's terms (idf-weighted in the window) it holds;
- ``term_precision``: sqrt of the share of its own terms that are query terms;
- ``entity``: share of the query's named entities in its text or fields (speaker,
  title, heading, path); ``distractor``: 1 when some window hit names them and
  this one does not (its weight is a penalty, so negative);
- ``year``, ``date``: its time (or text) falls on the asked year/month or day;
- ``intent``: it holds an answer of the asked kind (a date, a place, a count...).

Where the weights came from: ``python -m bench.fit_rank`` on the training splits
(``bench/data/rank_fit.json``); each profile's split, command and figures are in
docs/tuning.md (``rerank.profiles``). The transcript features (facets, what the
question asks, the session's standing, the turn as one unit) are described in
``transcript_rank``.
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.retrieval.transcript_rank import TRANSCRIPT_FEATURES

FEATURES = ("fused", "similarity", "keyword", "term_recall", "term_precision", "entity",
            "distractor", "year", "date", "intent", *TRANSCRIPT_FEATURES)
PROFILES = ("document", "conversation", "transcript")

# Source kind -> profile. Code and pasted text are read like documents.
KIND_PROFILES: dict[str, str] = {
    "document": "document", "code": "document", "text": "document",
    "conversation": "conversation", "transcript": "transcript",
}

# the transcript weights as fitted, used over their positive sum (docs/tuning.md)
TRANSCRIPT_FITTED: dict[str, float] = {
    "fused": 1.677, "similarity": 6.199, "keyword": -0.231, "term_recall": 3.961,
    "kind_turn": -0.985, "kind_thinking": -1.105, "kind_code": 1.926, "kind_tool": 0.924,
    "failure": 1.518, "ask_failure": 0.621, "ask_command": 0.533, "ask_code": 2.98,
    "session_similarity": 7.18, "session_fused": 1.001, "session_top": 3.053,
    "turn_similarity": 3.611, "turn_keyword": 2.055, "turn_term_recall": 4.818,
    "turn_fused": -1.109, "reply_open": 2.779, "outcome": 1.131,
    # hand-set on recall dev, bench.recall_quality, 2026-11-28 (docs/tuning.md)
    "same_project": 5.0}


def _scaled(weights: Mapping[str, float]) -> dict[str, float]:
    total = sum(w for w in weights.values() if w > 0)
    return {k: w / total for k, w in weights.items()}


# fitted by bench.fit_rank on training splits (docs/tuning.md, rerank.profiles)
DEFAULT_PROFILES: dict[str, dict[str, float]] = {
    # SciFact train, 809 claims, bench.fit_rank: window nDCG@10 0.7240 -> 0.7483
    "document": {"fused": -0.3, "similarity": 3.0, "keyword": 0.5, "term_recall": 1.0,
                 "term_precision": -1.0, "entity": 0.3},
    # LoCoMo dev, 759 questions: mean evidence recall@10/@25 0.7685 -> 0.8058.
    "conversation": {"fused": -0.1, "similarity": 2.0, "keyword": 0.3, "term_recall": 0.3,
                     "term_precision": -0.3, "entity": 0.2, "distractor": -0.2, "year": 0.5,
                     "date": 0.5, "intent": 0.2},
    # recall dev, bench.fit_rank --method listwise: 5-fold CV hit@5 0.580 (docs/tuning.md)
    "transcript": _scaled(TRANSCRIPT_FITTED),

}


def profile_of(source_kind: str, cfg: object) -> str:
    """The profile name for chunks of a source of ``source_kind`` under ``cfg`` (a
    RerankConfig); unknown kinds fall back to its default profile."""
    kinds: Mapping[str, str] = getattr(cfg, "kind_profiles", KIND_PROFILES)
    return kinds.get(source_kind, getattr(cfg, "default_profile", "document"))
