"""Orchestration: the engine's work, wired from the pure parts below it.

Modules here hold the store, the embedder and the threads together; the parts
they call (crypto, embedding, store, ingest, retrieval, packing, surrogates,
recall) take plain data and import nothing from here. The facade sits above.

- ``runtime``   the open store's handles (vault, vectors, embedder, caches);
- ``opening``   opening, locking and repairing a data dir;
- ``inputs``    build_context's argument checks;
- ``plan``      the query planned once: analysis, speaker-free variants, keyword
  match expressions, lane weights, depth, filters (``QueryPlan``);
- ``stages``    the one stage timer of a search or build;
- ``lanes``     the lanes stage (keyword, vector, recency) and the fuse stage;
- ``ranking``   the rank stage: the fused window reranked by kind (``rank_hits``),
  and ``search``, ranked as build_context ranks;
- ``build``     build_context's stage runner: plan, lanes, fuse, rank, dedupe,
  expand, pack;
- ``expansion`` the memory candidates: expansion, neighbour turns, surrogates;
- ``live_candidates`` the caller's live items and conversation turns as candidates;
- ``job``       a job's record and what the runner asks of a job body; ``jobs`` the
  background job runner (the single writer's queue); ``interrupted`` jobs an earlier run
  left unfinished;
- ``writer``    the single writer: chunk, summarise, embed (cached), store;
- ``ingest``    ingest jobs for paths, text and conversations; ``ingest_alerts`` what
  keeps the ingestion alert raised; ``vector_stage`` ingestion's second stage, the
  vectors of sources already keyword-searchable;
- ``warming``   the warm-up after open, stage by stage; ``watching`` watched folders;
- ``recall_sync``, ``recall_auto``, ``recall``  transcript sync, auto recall, the
  recall call; ``recall_turns`` (chunks ranked for recall, as chunks or turns),
  ``recall_parts`` (the parts of a call or request), ``recall_roles`` (the chunk of
  the role a question asks for ranked up), ``session_words`` (the words only
  a session uses), ``session_expand`` (the best session's chunks join recall's window),
  ``recall_hits`` (what a recall hit shows: its session line and excerpt) and
  ``recall_adapt`` (recall's learned reader, fitted from the store's sessions);
- ``vector_rebuild``  rebuilding the vector store from the vault;
- ``deleting``  what a delete names, and the job that removes it everywhere;
  ``compaction`` giving space back;
- ``backup`` (with ``backup_partials``), ``restore``, ``export``  keeping the data;
  ``keychange`` key changes that touch the data;
- ``audit_log`` the audit log's writer;
- ``health``    the engine's status (store counts, vectors, model, jobs, alerts).
"""
