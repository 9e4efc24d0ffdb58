"""Retrieval: from a query to a ranked, de-duplicated list of candidate ids.

The pure parts of build_context live here and take plain data, so that they are
tested without a store or a model:

- ``query``   query analysis (terms, entities, years, dates, intent, class), the
              FTS5 MATCH expression for the keyword lane, lane weights per class;
- ``lexicon`` the English word lists, intent, class and answer patterns, word
              tokens, and date parsing that query analysis and the rerank read;
- ``fusion``  weighted reciprocal rank fusion of the lanes' rankings;
- ``rerank``  answer-focused rerank of the fused top window (rule features, and an
              optional local cross-encoder);
- ``scan``    a rerank candidate as the rerank reads it: the query's terms it holds,
              found without tokenizing all of it, its words when a feature needs them;
- ``profiles`` which rerank features count, and how much, per kind of memory
              (document, conversation, transcript), with the weights' origin;
- ``dedupe``  near-duplicate suppression by cosine similarity, or by text overlap
              for items without vectors;
- ``tiers``   which surrogate tier (full, gist, micro) a source gets in the payload;
- ``fts_match`` the FTS5 MATCH expression's parts for the keyword lane;
- ``config``  the part's config sections: [search] (lane depths, fusion, lane bounds),
              [query], [rerank], [tiers], and recall's [recall.adapt_fit] and
              [recall.turn_roles] tables;
- ``transcript_rank`` rerank features of coding-session memory (what a chunk is, how
              its session fares);
- ``turn_roles`` which role a question about a session asks for (its closing summary,
              a call's result, the call, a tool it names) and each chunk's bonus for it;
- ``feedback`` feedback from the first hits (Rocchio vector, RM3-like words; off);
- ``adapt``   what recall learned from the user's own sessions and how a query uses it,
              fitted by ``adapt_fit`` on the pairs ``adapt_pairs`` draws from them.

The lanes themselves (keyword, vector, recency, live) read the store and live in
``engine.flows``, which calls these functions: ``flows.search.lanes`` runs and fuses the
lanes, ``flows.search.ranking`` reranks the fused window by kind (shared by search and
build_context).
"""
