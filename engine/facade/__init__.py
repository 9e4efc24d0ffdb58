"""ContextEngine: the one public entry to ctx's core.

It owns a data dir (one engine at a time, by a lock file), unlocks the data
key, opens the encrypted vault and the vector store, and exposes ingest,
build_context, search, recall, delete and status. It is thread-safe: reads
run concurrently, writes go through the single writer (the job runner and
the vault's write lock).

Every result is one of engine.api's typed classes. The engine announces its
own changes through ``subscribe`` (jobs, sources, builds, alerts), and audits
the calls that a caller process makes (``engine.calls.caller``) once, here.

``ContextEngine`` is composed, not mixed in: ``core`` is the table of contents (each
public method a delegation to the member that owns it); each member is a plain class
built there with explicit arguments (the runtime handles, the job runner, callbacks):

- ``core``: ``ContextEngine``, the engine API's table of contents.
- ``lifecycle``: opening (``open_with``, ``open_handles``) and ``Lifecycle`` (open or
  closed, warm-up, close).
- ``ingest``: ``Ingest`` (ingest, ingest_conversation).
- ``reading``: ``Reading`` (search, build_context, sources, status, metrics, audit).
- ``jobs``: ``JobControl`` (following and steering jobs) and ``JobReports`` (what a
  job's end tells).
- ``recall``: ``Recall`` (recall and sync of coding sessions).
- ``keeping``: ``Keeping`` (delete, repair, compaction, key rotation, backups, export).
- ``admin``: making or repairing a store before an engine opens it.
"""

from engine.facade.admin import init_store, repair_store
from engine.facade.core import ContextEngine
from engine.facade.lifecycle import store_exists

__all__ = ["ContextEngine", "init_store", "repair_store", "store_exists"]
