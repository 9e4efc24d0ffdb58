"""Rebuild the vector index from the encrypted vault.

Every ready chunk's vector is read from the vault's embedding cache (keyed by
model and the exact text the model saw); a chunk whose vector is not cached is
embedded again. Used by ``ctx repair``, automatically when the vector store is
empty but the vault is not (a deleted or replaced ``vectors/``, an older id
layout), and at every open by the "memory" backend, which keeps no vector on
disk.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from engine.embedding.base import Embedder
from engine.ingest.pipeline import cache_key, embed_text
from engine.metrics import (
    ALERT_VECTOR_DOWN,
    ALERT_VECTOR_INCOMPLETE,
    ALERT_VECTOR_REBUILD,
)
from engine.opening import rebuild_reason
from engine.runtime import Runtime
from engine.store.vault import Vault
from engine.store.vectors import VectorStore

log = logging.getLogger("ctx.repair")

BATCH = 4000


def chunk_key(model: str) -> Callable[[str, str, str, str], str]:
    """Embedding-cache key of a chunk from (source title, heading, kind, text)."""
    return lambda title, heading, kind, text: cache_key(model, embed_text(title, heading, kind,
                                                                          text))


def vault_vectors(vault: Vault, embedder: Embedder, batch: int = BATCH
                  ) -> Iterator[tuple[list[int], np.ndarray, int]]:
    """(chunk ids, model-space vectors, how many had to be embedded again), in id order."""
    key = chunk_key(embedder.name)
    last = -1
    while True:
        rows = vault.query(
            "SELECT c.id, s.title, c.heading, c.kind, c.text FROM chunks c "
            "JOIN sources s ON s.id = c.source_id WHERE s.state = 'ready' AND c.id > ? "
            "ORDER BY c.id LIMIT ?", (last, batch))
        if not rows:
            return
        keys = [key(r[1], r[2], r[3], r[4]) for r in rows]
        cached = vault.cached_vectors(keys)
        out = np.zeros((len(rows), embedder.dim), dtype=np.float32)
        missing = [i for i, k in enumerate(keys) if k not in cached]
        for i, k in enumerate(keys):
            if k in cached:
                out[i] = np.frombuffer(cached[k], dtype=np.float32)
        if missing:
            fresh = embedder.encode([embed_text(rows[i][1], rows[i][2], rows[i][3], rows[i][4])
                                     for i in missing])
            out[missing] = fresh
            with vault.write(chunks=False) as c:
                c.executemany("INSERT OR IGNORE INTO embed_cache VALUES (?, ?)",
                              [(keys[i], fresh[j].astype(np.float32).tobytes())
                               for j, i in enumerate(missing)])
        yield [int(r[0]) for r in rows], out, len(missing)
        last = int(rows[-1][0])


def rebuild(vault: Vault, vectors: VectorStore, embedder: Embedder, *, reset: bool = True,
            progress: Callable[[int], None] | None = None) -> dict[str, float]:
    """Fill ``vectors`` with every ready chunk of the vault; returns counts and seconds."""
    t0 = time.perf_counter()
    if reset:
        vectors.reset()
    added = embedded = 0
    if vectors.backend == "memory":
        for ids, vecs, n_embedded in vault_vectors(vault, embedder):
            vectors.add(ids, vecs)
            added += len(ids)
            embedded += n_embedded
            if progress is not None:
                progress(added)
    else:  # one pass in a random order: the store's row order says nothing of ingestion
        all_ids: list[int] = []
        parts: list[np.ndarray] = []
        for ids, vecs, n_embedded in vault_vectors(vault, embedder):
            all_ids += ids
            parts.append(vecs)
            embedded += n_embedded
        if all_ids:
            matrix = np.concatenate(parts)
            order = np.array(secrets.SystemRandom().sample(range(len(all_ids)), len(all_ids)))
            for i in range(0, len(order), BATCH):
                part = order[i:i + BATCH]
                vectors.add([all_ids[j] for j in part], matrix[part])
                added += len(part)
                if progress is not None:
                    progress(added)
    drop = getattr(vectors, "drop_legacy", None)
    if drop is not None:
        drop()
    with vault.write(chunks=False) as c:  # every deleted chunk's vector is gone now
        c.execute("DELETE FROM vector_dead")
        c.execute("DELETE FROM vector_tombstones")
    seconds = time.perf_counter() - t0
    log.info("rebuilt %d vectors (%d embedded again) in %.1f s", added, embedded, seconds)
    return {"vectors": added, "embedded": embedded, "seconds": round(seconds, 3)}


def gc_embed_cache(vault: Vault, key: Callable[[str, str, str, str], str]) -> int:
    """Drop embedding-cache rows that no stored chunk uses; returns how many."""
    used: set[str] = set()
    last = -1
    while True:
        rows = vault.query(
            "SELECT c.id, s.title, c.heading, c.kind, c.text FROM chunks c "
            "JOIN sources s ON s.id = c.source_id WHERE c.id > ? ORDER BY c.id LIMIT ?",
            (last, BATCH))
        if not rows:
            break
        used.update(key(r[1], r[2], r[3], r[4]) for r in rows)
        last = int(rows[-1][0])
    stale = [r[0] for r in vault.query("SELECT hash FROM embed_cache") if r[0] not in used]
    if stale:
        with vault.write(chunks=False) as c:
            c.executemany("DELETE FROM embed_cache WHERE hash = ?", [(h,) for h in stale])
    return len(stale)


def check_vectors(rt: Runtime, auto_repair: bool) -> str | None:
    """At open: fill the memory backend, raise the alerts the vector store's state calls
    for, and return why a rebuild should run now (None when none should)."""
    reason, chunks, count = rebuild_reason(rt.vault, rt.vectors)
    offline = getattr(rt.vectors, "reason", None)
    if offline:
        rt.metrics.alert(ALERT_VECTOR_DOWN, True, offline)
    if reason and rt.vectors.backend == "memory":
        rebuild(rt.vault, rt.vectors, rt.embedder, reset=False)
        return None
    if reason and auto_repair and not rt.vault.read_only:
        log.warning("rebuilding %d vectors from the vault: %s", chunks, reason)
        return reason
    if count >= 0 and count != chunks and rt.vectors.backend != "memory":
        rt.metrics.alert(ALERT_VECTOR_INCOMPLETE, True,
                         f"{count} vectors for {chunks} chunks: run `ctx repair`")
    return None


def repair_work(rt: Runtime, reason: str, result: dict[str, Any]
                ) -> Callable[[Any, Callable[[], None]], None]:
    """The job that rebuilds the vectors (and, for ``reason == "repair"``, also drops
    unused embedding-cache rows and rebuilds the FTS index); fills ``result``."""
    def work(job: Any, progress: Callable[[], None]) -> None:
        rt.metrics.alert(ALERT_VECTOR_REBUILD, True, reason)
        try:
            def step(n: int) -> None:
                job.chunks = n
                progress()
            result.update(rebuild(rt.vault, rt.vectors, rt.embedder, progress=step))
            if reason == "repair":
                result["cache_rows_dropped"] = gc_embed_cache(rt.vault,
                                                              chunk_key(rt.embedder.name))
                with rt.vault.write() as c:
                    c.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
            rt.metrics.alert(ALERT_VECTOR_INCOMPLETE, False)
            rt.metrics.alert(ALERT_VECTOR_DOWN, False)
        finally:
            rt.metrics.alert(ALERT_VECTOR_REBUILD, False)
    return work
