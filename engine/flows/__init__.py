"""Orchestration: the engine's work, wired from the pure parts below it.

Modules here hold the store, the embedder and the threads together; the parts
they call (crypto, embedding, store, ingest, retrieval, packing, surrogates,
recall, backup, watching) take plain data and import nothing from here. The
facade sits above. Each sub-package is one room, named after the work it
orchestrates, with its own map:

- ``search``   a query planned once, its lanes, fuse and rank, build_context's stages
  (orchestrates ``engine.retrieval`` and ``engine.packing``);
- ``ingest``   ingest jobs: the keyword stage, the vector stage, the single writer,
  watched folders (orchestrates ``engine.ingest`` and ``engine.watching``);
- ``recall``   coding-session memory: transcript sync, recall's ranking and hits,
  ``--auto`` (orchestrates ``engine.recall``);
- ``keeping``  keeping the data: backups, restore, export, key changes, deleting,
  compaction, vector rebuild, health (orchestrates ``engine.backup`` and ``engine.crypto``).

What every room shares, here at the top:

- ``runtime``   the open store's handles (vault, vectors, embedder, caches);
- ``opening``   opening, locking and repairing a data dir;
- ``job``       a job's record and what the runner asks of a job body; ``jobs`` the
  background job runner (the single writer's queue);
- ``warming``   the warm-up after open, stage by stage;
- ``audit_log`` the audit log's writer.
"""
