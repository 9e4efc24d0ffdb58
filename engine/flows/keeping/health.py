"""The engine's health at a glance: store counts, vector store, model, jobs, alerts."""

from __future__ import annotations

import os
from pathlib import Path

from engine.api import Alert, Status, VectorMemory
from engine.crypto.keys import read_record
from engine.flows.keeping.backup import last_backup
from engine.flows.recall.adapt import adapt_status
from engine.flows.runtime import Runtime
from engine.store.vault import sources as src


def status(rt: Runtime, *, jobs_active: bool, paused: bool,
           alerts: dict[str, Alert]) -> Status:
    """``ContextEngine.status``: what ``ctx status`` and the Health panel show."""
    vector_ok = rt.vectors.healthy()
    emb = rt.embedder
    record = read_record(rt.root)
    return Status(
        data_dir=str(rt.root), **src.counts(rt.vault),
        vectors=rt.vectors.count() if vector_ok else None,
        vector_backend=rt.cfg.store.vector_backend, vector_store_ok=vector_ok,
        vectors_in_memory=VectorMemory.from_dict(rt.vectors.memory()),
        model=emb.name, dim=emb.dim, model_loaded=getattr(emb, "loaded", True),
        model_backend=getattr(emb, "backend", None),
        model_backend_reason=str(getattr(emb, "backend_reason", "") or ""),
        model_document_precision=getattr(emb, "document_precision", "float32"),
        model_query_precision=getattr(emb, "query_precision", "float32"),
        jobs_active=jobs_active, ingestion_paused=paused, store_bytes=dir_size(rt.root),
        alerts=alerts, last_backup=last_backup(rt.vault),
        key_method=record.method if record is not None else "",
        recovery_key=bool(record is not None and record.recovery), adapt=adapt_status(rt))


def dir_size(root: Path) -> int:
    """Bytes of every file under ``root`` (files that vanish meanwhile count 0)."""
    total = 0
    for dirpath, _, files in os.walk(root):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(dirpath, name))
            except OSError:
                pass
    return total
