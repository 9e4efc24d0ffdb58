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

Where the weights came from (``python -m bench.fit_rank``: coordinate ascent over
a grid on the training splits only; its output is ``bench/data/rank_fit.json``):

- ``conversation``: fitted on LoCoMo dev (conversations 0-4, 759 questions,
  mean of evidence recall@10 and @25 of turns); LoCoMo test was never used.
  No feature was dropped: each one's removal cost at least 0.002. These weights
  were fitted before a turn's similarity was read in its context
  (``RerankConfig.context_share``, ``python -m bench.fit_context``) and kept as they
  were (an exploratory replay refit of them for the payload's recall, before the
  context similarity, traded ctx@500 and recall@10 for ctx@1000: not adopted).
- ``document``: fitted on SciFact train, all 809 claims over the full corpus
  (5,183 abstracts, 10,952 chunks of 200 tokens), ``python -m bench.fit_rank
  --only document --store-cache DIR`` (DIR holding the store ``python -m
  bench.scifact_data DIR`` builds): nDCG@10 of the reranked window 0.7240 ->
  0.7483 from the earlier weights. ``year`` and ``intent`` entered and were then
  dropped (each paid under 0.002); a ``sibling`` feature (the best fused score
  among the other window hits of the same source) stayed at 0 and was deleted.
  Fitted and reported on the same train split (the test split is not in the project): six weights on 809
  claims, a small fit, but not a held-out figure. With them ``python -m
  bench.scifact --store-cache DIR`` gave, in one run: nDCG@10 0.749 against 0.716
  for RRF k=60 of the same lanes (+0.033), Recall@100 0.952 against 0.961 (below);
  distinct-source search now reranks a 200-chunk window (``rerank.distinct_window``,
  ``python -m bench.fit_window``): nDCG@10 0.752, Recall@100 0.962.
- ``transcript``: fitted on the recall questions' dev split (``bench/data/
  recall_questions.json``: 119 questions over 55 of 111 real sessions, written by
  reading the sessions; the test split, split by session before any run, is never
  used), with the window in fused order and the best two sessions expanded into it
  (recall expands one, ``rerank.session_expand``), by a listwise softmax fit
  (``bench.rank_listwise``; each question's answering chunks against its window),
  ``python -m bench.fit_rank --only transcript --method listwise --l2 0.01 --cv 5
  --exclude year,date,entity,distractor,intent,term_precision,similarity_rank,
  keyword_rank``: session-grouped 5-fold cross-validation on dev gave hit@5 0.580
  and MRR@10 0.438 (chunk level; the coordinate-ascent fit before the turn features
  gave 0.597 and 0.416). Recall over turns (``recall.hit_unit``), one session
  expanded, dev: hit@5 0.689 (0.681 with weights refitted on one session expanded).
  The transcript features (facets, what the question asks, the session's standing,
  the turn as one unit) are described in ``transcript_rank``.
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

# The transcript weights as fitted (see the module docstring); the profile uses them
# over their positive sum, so that a transcript chunk scores at most 1, as it did under
# the fused order: a search over documents and sessions together ranks the two kinds
# as before (scaling leaves the order among transcripts unchanged).
TRANSCRIPT_FITTED: dict[str, float] = {
    "fused": 1.677, "similarity": 6.199, "keyword": -0.231, "term_recall": 3.961,
    "kind_turn": -0.985, "kind_thinking": -1.105, "kind_code": 1.926, "kind_tool": 0.924,
    "failure": 1.518, "ask_failure": 0.621, "ask_command": 0.533, "ask_code": 2.98,
    "session_similarity": 7.18, "session_fused": 1.001, "session_top": 3.053,
    "turn_similarity": 3.611, "turn_keyword": 2.055, "turn_term_recall": 4.818,
    "turn_fused": -1.109, "reply_open": 2.779, "outcome": 1.131,
    # Issue 31, set on the dev split (recall asked from the question's project, `python
    # -m bench.recall_quality --split dev`, 2026-11-28, before the last-line fix and the
    # learned reader): same_project 0 / 2 / 5 / 10: hit@5 0.605 / 0.613 / 0.630 / 0.630,
    # agent view 0.664 / 0.681 / 0.689 / 0.689. session_words stays 0 (see
    # rerank.session_words_expand: as a feature it lost on dev).
    "same_project": 5.0}


def _scaled(weights: Mapping[str, float]) -> dict[str, float]:
    total = sum(w for w in weights.values() if w > 0)
    return {k: w / total for k, w in weights.items()}


# Fitted weights (see the module docstring for the command and split of each).
DEFAULT_PROFILES: dict[str, dict[str, float]] = {
    # SciFact train, 809 claims, full corpus (see the module docstring):
    # window nDCG@10 0.7240 -> 0.7483.
    "document": {"fused": -0.3, "similarity": 3.0, "keyword": 0.5, "term_recall": 1.0,
                 "term_precision": -1.0, "entity": 0.3},
    # LoCoMo dev, 759 questions: mean evidence recall@10/@25 0.7685 -> 0.8058.
    "conversation": {"fused": -0.1, "similarity": 2.0, "keyword": 0.3, "term_recall": 0.3,
                     "term_precision": -0.3, "entity": 0.2, "distractor": -0.2, "year": 0.5,
                     "date": 0.5, "intent": 0.2},
    # Recall questions, dev split (119 questions, 55 sessions; test never used), two
    # sessions expanded, `python -m bench.fit_rank --only transcript --method listwise
    # --l2 0.01 --cv 5 --exclude ...` (bench/data/rank_fit.json): session-grouped 5-fold
    # CV on dev hit@5 0.580, MRR@10 0.438; recall over turns, one session expanded, dev
    # hit@5 0.689 (a refit with one session expanded gave 0.681).
    "transcript": _scaled(TRANSCRIPT_FITTED),

}


def profile_of(source_kind: str, cfg: object) -> str:
    """The profile name for chunks of a source of ``source_kind`` under ``cfg`` (a
    RerankConfig); unknown kinds fall back to its default profile."""
    kinds: Mapping[str, str] = getattr(cfg, "kind_profiles", KIND_PROFILES)
    return kinds.get(source_kind, getattr(cfg, "default_profile", "document"))
