"""Search and build_context: a query planned once, its lanes, fused, ranked, expanded, packed.

- ``inputs``    build_context's argument checks;
- ``plan``      the query planned once: analysis, speaker-free variants, keyword
  match expressions, lane weights, depth, filters (``QueryPlan``);
- ``stages``    the one stage timer of a search or build;
- ``lanes``     the lanes stage (keyword, vector, recency) and the fuse stage;
- ``ranking``   the rank stage: the fused window reranked by kind (``rank_hits``),
  and ``search``, ranked as build_context ranks;
- ``session_words`` (the words only a session uses) and ``session_expand`` (the best
  session's chunks join the window): the rank stage's session steps;
- ``feedback``  recall's feedback from its first hits (off by default): the query moved
  toward them, their words as a keyword lane;
- ``build``     build_context's stage runner: plan, lanes, fuse, rank, dedupe,
  expand, pack;
- ``expansion`` the memory candidates: expansion, neighbour turns, surrogates;
- ``live_candidates`` the caller's live items and conversation turns as candidates.
"""
