"""Orchestration: the engine's work, wired from the pure parts below it.

Modules here hold the store, the embedder and the threads together; the parts
they call (crypto, embedding, store, ingest, retrieval, packing, surrogates,
recall) take plain data and import nothing from here. The facade sits above.

- ``runtime``   the open store's handles (vault, vectors, embedder, caches);
- ``opening``   opening, locking and repairing a data dir;
- ``inputs``    build_context's argument checks;
- ``lanes``     the keyword, vector, recency and live lanes, run and fused;
- ``ranking``   the rerank of the fused window by kind (``rank_hits``, ``search``);
- ``build``     build_context: lanes, rank, dedupe, expand, pack;
- ``jobs``      the background job runner;
- ``writer``    the single writer: chunk, summarise, embed (cached), store;
- ``ingest``    ingest jobs for paths, text and conversations;
- ``recall_sync``, ``recall_auto``, ``recall``  transcript sync, auto recall, the
  recall call;
- ``vector_rebuild``  rebuilding the vector store from the vault;
- ``deleting``  what a delete names, and the job that removes it everywhere;
- ``health``    the engine's status (store counts, vectors, model, jobs, alerts).
"""
