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
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from engine.embedding.base import Embedder, encode_documents
from engine.errors import CtxError, NoSpace
from engine.flows.opening import rebuild_reason
from engine.flows.runtime import Runtime
from engine.ingest.embedtext import cache_key, embed_text
from engine.metrics import (
    ALERT_VECTOR_DOWN,
    ALERT_VECTOR_INCOMPLETE,
    ALERT_VECTOR_REBUILD,
)
from engine.paths import vectors_path
from engine.store.vault import embed_cache
from engine.store.vault import rebuild as rebuild_reads
from engine.store.vault import sources as src
from engine.store.vault.core import Vault
from engine.store.vectors.index import VectorStore
from engine.store.vectors.memory import MemoryVectors
from engine.store.vectors.snapshot import fingerprint

log = logging.getLogger("ctx.repair")

BATCH = 4000


def chunk_key(model: str) -> Callable[[str, str, str, str], str]:
    """Embedding-cache key of a chunk from (source title, heading, kind, text)."""
    return lambda title, heading, kind, text: cache_key(model, embed_text(title, heading, kind,
                                                                          text))


def vault_vectors(vault: Vault, embedder: Embedder, batch: int = BATCH
                  ) -> tuple[list[int], np.ndarray, int]:
    """Every ready chunk's (id, model-space vector), in id order, and how many had to be
    embedded again. The cache is read in one sequential scan (looking each key up in
    its b-tree costs a random, decrypted page read per chunk)."""
    key = chunk_key(embedder.name)
    ids: list[int] = []
    keys: list[str] = []
    texts: dict[int, str] = {}
    last = -1
    while True:
        page = rebuild_reads.embed_inputs(vault, last, batch)
        if not page:
            break
        for r in page:
            ids.append(int(r.id))
            keys.append(key(r.title, r.heading, r.kind, r.text))
        last = int(page[-1].id)
    want: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        want.setdefault(k, []).append(i)
    out = np.zeros((len(ids), embedder.dim), dtype=np.float32)
    found = np.zeros(len(ids), dtype=bool)
    for h, vec in embed_cache.scan(vault):
        rows_of = want.get(h)
        if rows_of is not None and len(vec) == 4 * embedder.dim:
            out[rows_of] = np.frombuffer(vec, dtype=np.float32)
            found[rows_of] = True
    missing = [int(i) for i in np.nonzero(~found)[0]]
    for start in range(0, len(missing), batch):
        part = missing[start:start + batch]
        for i in part:
            texts[i] = _embed_input(vault, ids[i])
        fresh = encode_documents(embedder, [texts.pop(i) for i in part])
        out[part] = fresh
        try:
            embed_cache.put(vault, [(keys[i], fresh[j].astype(np.float32).tobytes())
                                    for j, i in enumerate(part)], chunks=False)
        except NoSpace:  # a full disk: embedded again, not cached
            log.warning("disk full: %d vectors embedded again, not cached", len(part))
    return ids, out, len(missing)


def chunk_vectors(vault: Vault, embedder: Embedder, ids: list[int]) -> np.ndarray:
    """The model-space vectors of the chunks ``ids`` (a few: looked up by key, embedded
    again where the cache lacks them), in the order given."""
    key = chunk_key(embedder.name)
    keys = {int(r.id): key(r.title, r.heading, r.kind, r.text)
            for r in rebuild_reads.embed_inputs_of(vault, ids)}
    cached = vault.cached_vectors(list(keys.values()))
    out = np.zeros((len(ids), embedder.dim), dtype=np.float32)
    again = []
    for row, cid in enumerate(ids):
        vec = cached.get(keys.get(cid, ""))
        if vec is not None and len(vec) == 4 * embedder.dim:
            out[row] = np.frombuffer(vec, dtype=np.float32)
        else:
            again.append(row)
    if again:
        out[again] = encode_documents(embedder, [_embed_input(vault, ids[r]) for r in again])
    return out


def fill_memory(rt: Runtime) -> str:
    """The memory backend at open: its sealed snapshot when it matches the vault's chunk
    version; else the snapshot patched with what changed since (chunks gone dropped, new
    or reused ids read from the vault); else every vector from the vault. Whatever was
    not the snapshot as it is gets sealed again. Returns which of "snapshot", "patched",
    "rebuilt" (or "empty") it did."""
    vault, vectors = rt.vault, rt.vectors
    assert isinstance(vectors, MemoryVectors)
    snap = vectors.read_snapshot()
    if snap is not None and snap.version == vault.chunk_version():
        vectors.load(snap.ids, snap.vectors, unit=True, prefilter=snap.prefilter)
        return "snapshot"
    if snap is not None:
        ids, hashes = vault.chunk_fingerprints()
        want = np.asarray(ids, dtype=np.int64)
        at = np.clip(np.searchsorted(snap.ids, want), 0, max(0, len(snap) - 1))
        same = np.zeros(len(want), dtype=bool)
        if len(snap) and len(want):
            same = (snap.ids[at] == want) & (snap.hashes[at] == fingerprint(hashes))
        fresh = [int(c) for c in want[~same]]
        # the snapshot's own type (float16 for a big index): no float32 copy of them all
        matrix = np.zeros((len(want), rt.embedder.dim), dtype=snap.vectors.dtype)
        matrix[same] = snap.vectors[at[same]]
        if fresh:
            new = chunk_vectors(vault, rt.embedder, fresh)
            norms = np.linalg.norm(new, axis=1, keepdims=True)
            matrix[~same] = new / np.where(norms == 0, 1, norms)
        del snap
        vectors.load(ids, matrix, unit=True)
        how = "patched"
        log.info("vector snapshot patched: %d vectors kept, %d read from the vault",
                 int(same.sum()), len(fresh))
    elif src.counts(vault)["chunks"] > src.counts(vault)["chunks_waiting"]:
        rebuild(vault, vectors, rt.embedder, reset=False)
        how = "rebuilt"
    else:
        return "empty"
    if not vault.read_only:
        try:
            vectors.save_snapshot()
        except (OSError, CtxError) as exc:
            log.warning("vector snapshot not saved (%s)", getattr(exc, "name", exc))
    return how


def drop_embedded_store(root: Path) -> bool:
    """Remove ``vectors/`` (an embedded Chroma store: rotated vectors in the clear) once
    the memory backend holds every vector; True if there was one."""
    path = vectors_path(root)
    if not path.is_dir() or path.is_symlink():
        return False
    shutil.rmtree(path, ignore_errors=True)
    log.warning("removed vectors/: the vectors are kept in memory and sealed in "
                "vectors.snap; none stays on disk in the clear (docs/threat-model.md)")
    return True


def _embed_input(vault: Vault, chunk_id: int) -> str:
    r = rebuild_reads.embed_input(vault, chunk_id)
    return embed_text(r.title, r.heading, r.kind, r.text)


def rebuild(vault: Vault, vectors: VectorStore, embedder: Embedder, *, reset: bool = True,
            progress: Callable[[int], None] | None = None) -> dict[str, float]:
    """Fill ``vectors`` with every ready chunk of the vault; returns counts and seconds."""
    t0 = time.perf_counter()
    if reset:
        vectors.reset()
    ids, matrix, embedded = vault_vectors(vault, embedder)
    order = np.arange(len(ids))
    if vectors.backend != "memory":  # one pass in a random order: the store's row order
        order = np.asarray(secrets.SystemRandom().sample(range(len(ids)), len(ids)),
                           dtype=order.dtype)  # says nothing of ingestion
    added = 0
    for i in range(0, len(order), BATCH):
        part = order[i:i + BATCH]
        vectors.add([ids[j] for j in part], matrix[part])
        added += len(part)
        if progress is not None:
            progress(added)
    drop = getattr(vectors, "drop_legacy", None)
    if drop is not None:
        drop()
    try:
        rebuild_reads.clear_vector_debts(vault)  # every deleted chunk's vector is gone now
    except NoSpace:  # a full disk still opens: the lists are cleared at a later rebuild
        log.warning("disk full: deleted vectors' ids kept until the next rebuild")
    try:
        vectors.warm()  # the reset emptied what it held in memory
    except CtxError as exc:  # the vectors are written; queries read them from the index
        log.warning("vectors rebuilt, not loaded into memory (%s)", exc.name)
    seconds = time.perf_counter() - t0
    log.info("rebuilt %d vectors (%d embedded again) in %.1f s", added, embedded, seconds)
    return {"vectors": added, "embedded": embedded, "seconds": round(seconds, 3)}


def gc_embed_cache(vault: Vault, key: Callable[[str, str, str, str], str]) -> int:
    """Drop embedding-cache rows that no stored chunk uses; returns how many."""
    used: set[str] = set()
    last = -1
    while True:
        page = rebuild_reads.embed_inputs(vault, last, BATCH, ready_only=False)
        if not page:
            break
        used.update(key(r.title, r.heading, r.kind, r.text) for r in page)
        last = int(page[-1].id)
    stale = [h for h in embed_cache.keys(vault) if h not in used]
    embed_cache.drop(vault, stale)
    return len(stale)


def check_vectors(rt: Runtime, auto_repair: bool) -> str | None:
    """At open: fill the memory backend, raise the alerts the vector store's state calls
    for, and return why a rebuild should run now (None when none should)."""
    reason, chunks, count = rebuild_reason(rt.vault, rt.vectors)
    offline = getattr(rt.vectors, "reason", None)
    if offline:
        rt.metrics.alert(ALERT_VECTOR_DOWN, True, offline)
    if rt.vectors.backend == "memory":
        fill_memory(rt)
        if not rt.vault.read_only:
            drop_embedded_store(rt.root)
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
                rebuild_reads.rebuild_keyword_index(rt.vault)
            rt.vectors.save_snapshot()  # the memory backend's sealed copy, rebuilt too
            rt.metrics.alert(ALERT_VECTOR_INCOMPLETE, False)
            rt.metrics.alert(ALERT_VECTOR_DOWN, False)
        finally:
            rt.metrics.alert(ALERT_VECTOR_REBUILD, False)
    return work
