"""From loaded documents to stored sources: chunk, summarise, store; and embed.

``prepare`` chunks and summarises a document; ``write_batch`` stores prepared
documents for the keyword lanes (stage 1, one transaction a batch); ``encode``
runs the model for the vector stage (``engine.flows.ingest.vector_stage``, stage 2),
longest texts first in paced steps. See ``engine.store.vault.sources`` for what a
crash leaves.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from engine.config import Config
from engine.crypto.rotation import NameHasher
from engine.embedding.base import Embedder, encode_documents
from engine.errors import CtxError, NoSpace
from engine.ingest.chunking import chunk_document
from engine.ingest.embedtext import content_hash
from engine.store.vault import aliases
from engine.store.vault import sources as src
from engine.store.vault.core import Vault
from engine.store.vectors.index import VectorStore
from engine.surrogates import make_surrogates
from engine.tokens import TokenCounter
from engine.types import ChunkDraft, LoadedDocument

log = logging.getLogger("ctx.ingest")

# texts per model call, a step of about STEP_SECONDS: bench.recall_bench (docs/tuning.md)
EMBED_STEP = 32
EMBED_STEP_MIN = 4
STEP_SECONDS = 0.5


@dataclass
class Prepared:
    """A document ready to write: its chunks, surrogates, and the versions it replaces."""

    doc: LoadedDocument
    chunks: list[ChunkDraft]
    doc_hash: str
    surrogates: dict[str, str] | None
    project: str | None = None
    replaces: list[int] = field(default_factory=list)
    # Identical content already stored (a source id) or prepared earlier in this job:
    # this path becomes an alias of it, with nothing to embed or store.
    alias_of: int | Prepared | None = None
    unalias: bool = False  # the uri was an alias: it gets its own source now
    source_id: int | None = None  # once written

    def key(self) -> tuple[str, str, str]:
        return (self.doc_hash, self.doc.kind, self.doc.fmt)

    def release(self) -> None:
        """Drop the text once written (a job keeps its documents to find twins)."""
        self.chunks, self.surrogates = [], None
        self.doc = dataclasses.replace(self.doc, text="")


class Writer:
    """Stores prepared documents and embeds texts; the engine's single writer uses one."""

    def __init__(self, cfg: Config, vault: Vault, vectors: VectorStore, embedder: Embedder,
                 hasher: NameHasher, counter: TokenCounter) -> None:
        self.cfg = cfg
        self.vault = vault
        self.vectors = vectors
        self.embedder = embedder
        self.hasher = hasher
        self.counter = counter
        self.embedded_texts = 0  # texts that really went through the model
        self._step = EMBED_STEP_MIN  # texts in the next embedding step (see _pace)

    def prepare(self, doc: LoadedDocument, *, chunks: list[ChunkDraft] | None = None,
                project: str | None = None, force: bool = False,
                dedupe: dict[tuple[str, str, str], Prepared] | None = None) -> Prepared | None:
        """Chunk and summarise ``doc``; None when an identical version is already stored.

        With ``dedupe`` (the job's documents so far, by content), a document whose
        content is already stored under another path, or prepared earlier in the
        job, is returned as an alias of it: nothing to chunk, embed or store twice.
        """
        digest = content_hash(doc.text)
        versions = src.versions(self.vault, doc.uri)
        if versions and versions[0][1] == digest and not force:
            return None
        replaces = [r[0] for r in versions]
        unalias = False
        if dedupe is not None and not force:
            hit = aliases.target(self.vault, doc.uri)
            if hit is not None and hit[1] == digest and not versions:
                return None  # an alias whose content has not changed
            unalias = hit is not None
            key = (digest, doc.kind, doc.fmt)
            twin = dedupe.get(key) or aliases.twin(self.vault, digest, doc.kind, doc.fmt,
                                                   doc.uri)
            if twin is not None:
                return Prepared(doc, [], digest, None, project, replaces, alias_of=twin)
        if chunks is None:
            chunks = chunk_document(doc, self.cfg.chunking, self.counter)
        surrogates = None
        if self.cfg.ingest.surrogates and doc.kind != "transcript" and chunks:
            surrogates = make_surrogates(doc.text, doc.title, self.cfg.surrogates, self.counter)
        item = Prepared(doc, chunks, digest, surrogates, project, replaces, unalias=unalias)
        if dedupe is not None:
            dedupe.setdefault(item.key(), item)
        return item

    def encode(self, texts: Sequence[str], check: Callable[[], None] | None = None,
               on_step: Callable[[int], None] | None = None, *,
               longest_first: bool = False) -> np.ndarray:
        """The model's vectors of ``texts`` (in order), computed longest text first in
        steps of up to ``EMBED_STEP`` texts paced to about STEP_SECONDS each, with
        ``check()`` before each step and ``on_step(n)`` after it. ``longest_first``:
        the caller has ordered them so already."""
        out = np.zeros((len(texts), self.embedder.dim), dtype=np.float32)
        todo = [("", i) for i in range(len(texts))]
        if not longest_first:
            todo = self._by_length(texts, todo)
        start = 0
        while start < len(todo):
            if check is not None:
                check()
            step = todo[start:start + self._step]
            began = time.perf_counter()
            vecs = encode_documents(self.embedder, [texts[i] for _, i in step])
            self._pace(len(step), time.perf_counter() - began)
            self.embedded_texts += len(step)
            out[[i for _, i in step]] = vecs
            start += len(step)
            if on_step is not None:
                on_step(len(step))
        return out

    def _by_length(self, texts: Sequence[str], todo: list[tuple[str, int]]
                   ) -> list[tuple[str, int]]:
        """``todo`` (cache key, index into ``texts``) longest text first.

        The model pads the texts of a step to the longest one, so steps of texts
        of like length compute little padding: on the shared transcripts, steps of
        8 chunks in file order computed 46% more word pieces than the texts hold,
        steps sorted by cl100k length 11% (bench/recall_bench.py, --compare).
        """
        sizes = {i: self.counter.count(texts[i]) for _, i in todo}
        return sorted(todo, key=lambda item: -sizes[item[1]])

    def _pace(self, n: int, seconds: float) -> None:
        """Size the next embedding step to take about STEP_SECONDS at the pace just seen."""
        if n >= self._step or seconds > STEP_SECONDS:
            per_text = max(seconds, 1e-6) / n
            self._step = max(EMBED_STEP_MIN, min(EMBED_STEP, int(STEP_SECONDS / per_text)))

    def write_batch(self, batch: Sequence[Prepared],
                    on_written: Callable[[Prepared, int], None] | None = None,
                    check: Callable[[], None] | None = None,
                    keep: Callable[[Prepared], bool] | None = None) -> list[int]:
        """Stage 1 of ingestion: store every document of ``batch`` for the keyword lanes,
        in one transaction (each is searchable by keyword from its commit on; its
        vectors are made after, by ``engine.flows.ingest.vector_stage``). Returns the new
        source ids.

        ``check`` is called first and may raise to stop: nothing of the batch is
        stored then. ``keep(p)`` may say False to leave a document out (a job of a
        joined group cancelled meanwhile). ``on_written(p, source_id)`` is then called
        for every stored document in order, an alias with its twin's id; should one
        raise, the others are still told (what they stored stays), then the first
        error is raised.
        """
        if check is not None:
            check()
        if self.vault.read_only:  # opened on a full disk: it reads, it stores nothing
            raise NoSpace("the disk holding the data dir was full when the store opened: "
                          "nothing was written; free some space and reopen the store")
        kept = [p for p in batch if keep is None or keep(p)]
        own = [p for p in kept if p.alias_of is None]
        try:
            ids = src.store_keyword(self.vault, [src.NewSource(
                p.doc, p.doc_hash, p.chunks, [content_hash(ch.text) for ch in p.chunks],
                p.surrogates, p.project, p.replaces, p.unalias) for p in own])
        finally:  # versions replaced: their vectors go now (or at the next open)
            self._flush_quietly()
        for p, new_id in zip(own, ids, strict=True):
            p.source_id = new_id
        first: BaseException | None = None
        for p in kept:
            try:
                sid = self._store_alias(p) if p.alias_of is not None else p.source_id
                if on_written is not None and sid is not None:
                    on_written(p, sid)
            except BaseException as exc:  # noqa: BLE001 - raised once the rest are told
                first = first or exc
            if p.alias_of is None:
                p.release()
        if first is not None:
            raise first
        return ids

    def _flush_quietly(self) -> None:
        try:
            self.flush_tombstones()
        except CtxError as exc:  # the tombstones stay: the next write or open flushes them
            log.warning("vector tombstones left for later (%s)", exc.name)

    def _store_alias(self, p: Prepared) -> int:
        """Point ``p``'s path at the source that holds the same content."""
        target = p.alias_of if isinstance(p.alias_of, int) else p.alias_of.source_id  # type: ignore[union-attr]
        if target is None:  # its twin earlier in the job was not written: cannot happen
            raise RuntimeError("alias of an unwritten document")
        aliases.attach(self.vault, p.doc.uri, target, p.doc.created_at, p.replaces)
        p.source_id = target
        return target

    def flush_tombstones(self) -> int:
        """Delete vectors of retired sources from the vector store; returns how many sources."""
        pending = src.tombstones(self.vault)
        self.vectors.delete_sources(pending)
        src.clear_tombstones(self.vault, pending)
        return len(pending)


def batched(items: Iterable[Prepared], max_chunks: int) -> Iterable[list[Prepared]]:
    """Group prepared documents so that each group holds about ``max_chunks`` chunks."""
    group: list[Prepared] = []
    size = 0
    for item in items:
        group.append(item)
        size += len(item.chunks)
        if size >= max_chunks:
            yield group
            group, size = [], 0
    if group:
        yield group
