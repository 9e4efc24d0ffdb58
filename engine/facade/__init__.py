"""ContextEngine: the one public entry to ctx's core.

It owns a data dir (one engine at a time, by a lock file), unlocks the data
key, opens the encrypted vault and the vector store, and exposes ingest,
build_context, search, recall, delete and status. It is thread-safe: reads
run concurrently, writes go through the single writer (the job runner and
the vault's write lock).

Every result is one of engine.api's typed classes. The engine announces its
own changes through ``subscribe`` (jobs, sources, builds, alerts), and audits
the calls that a caller process makes (``engine.calls.caller``) once, here.

By concern: ``core`` (opening and closing, ingestion, reading, health), ``jobs``
(following and steering jobs), ``sessions`` (recall and sync of coding sessions),
``upkeep`` (repair, backups, export), ``admin`` (making or repairing a store before an
engine opens it) and ``parts`` (what the mixins use of the engine).
"""

from engine.facade.admin import init_store, repair_store
from engine.facade.core import ContextEngine, store_exists

__all__ = ["ContextEngine", "init_store", "repair_store", "store_exists"]
