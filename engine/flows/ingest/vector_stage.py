"""Stage 2 of ingestion: the vectors of sources already stored for keyword search.

Sources are stored for the keyword lanes first (``Writer.write_batch``); this
stage then makes their vectors on the writer thread, between jobs
(``JobRunner``), a step at a time: a job queued meanwhile waits one step at
most (``STEP_TEXTS`` texts through the model, about half a second).

It works on a window of the oldest waiting sources (about ``WINDOW_TEXTS``
chunks). Each step embeds the window's longest texts not yet embedded (the
model pads a call's texts to its longest, so texts of like length go
together) and keeps their vectors in the vault's embedding cache; a source
whose every chunk has its vector is then added to the vector store and marked
embedded, in that step. A big file's progress so moves within the file, and a
crash loses nothing: the next open's warm-up, or the next ingest, resumes from
the cache. The model is loaded in a helper thread: while it loads, the stage
yields at once, so that new jobs' keyword stages never wait for it.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.flows.ingest.alerts import IngestAlerts
from engine.flows.ingest.writer import Writer
from engine.flows.job import Job
from engine.flows.runtime import Runtime
from engine.ingest.embedtext import cache_key, embed_text
from engine.store.vault import embed_cache
from engine.store.vault import sources as src
from engine.store.vault.sources import EmbedRow

log = logging.getLogger("ctx.ingest")

# texts per model step, about 0.5 s on 2 cores: bench.ingest_stages (docs/tuning.md)
STEP_TEXTS = 64
# chunks whose texts are embedded longest first: bench.recall_bench (docs/tuning.md)
WINDOW_TEXTS = 512
WINDOW_SOURCES = 256  # sources in the window at most (many small ones)
# Jobs whose stored sources go on to the vector stage (others: delete, repair...).
STAGED_KINDS = ("paths", "text", "conversation", "sync", "vectors")


@dataclass
class _Window:
    """The sources being embedded, with what is known of their chunks."""

    owner: dict[int, Job]  # source id -> the job it is embedded for
    rows: dict[int, list[EmbedRow]]  # source id -> its chunks
    keys: dict[int, str]  # chunk id -> cache key
    texts: dict[str, str]  # cache key -> the text the model reads
    order: list[str]  # keys, longest text first
    done: set[str]  # keys whose vectors are cached
    vecs: dict[str, np.ndarray] = field(default_factory=dict)  # embedded in this window
    generation: int = -1  # the vault's write generation it was read at


class VectorStage:
    def __init__(self, rt: Runtime, writer: Writer, alerts: IngestAlerts) -> None:
        self.rt, self.writer, self.alerts = rt, writer, alerts
        self._sizes: dict[int, int] = {}  # source id -> chunks, for the sources owned
        # source id -> (job, its chunks counted as embedded for that job so far)
        self._counted: dict[int, tuple[str, int]] = {}
        self._window: _Window | None = None
        self._loader: threading.Thread | None = None
        self._marks: dict[str, int] = {}  # job id -> the last source id when it began

    # -- ownership -------------------------------------------------------------------
    @staticmethod
    def staged(kind: str) -> bool:
        return kind in STAGED_KINDS

    def begin(self, job: Job) -> None:
        """``job`` starts: sources stored from now on are its own (see ``adopt``)."""
        if job.kind in STAGED_KINDS and job.kind != "vectors":
            self._marks[job.id] = src.last_id(self.rt.vault)

    def adopt(self, job: Job, others: list[Job]) -> list[int]:
        """``job``'s vector work: the stored sources waiting for vectors that it stored
        (since it began) or was given again unchanged, and no job in ``others`` (the other unfinished jobs) owns; for
        the engine's background job (kind "vectors"), every waiting source no other job
        owns. Returns the orphans: waiting sources older than ``job`` that nobody owns
        (a cancelled job's, a failed step's, a crash's), left to a background job so
        that a new small ingest never waits behind them."""
        mark = self._marks.pop(job.id, None)
        if job.kind not in STAGED_KINDS:
            job.vector_sources = []
            return []
        owned = {sid for j in others for sid in (*j.vector_sources, *j.sources)}
        unowned = [(sid, n) for sid, n in src.waiting(self.rt.vault) if sid not in owned]
        if mark is None:  # the background job (or a job that never began): all of them
            mine, orphans = unowned, []
        else:
            own = {*job.sources, *job.unchanged}
            mine = [(sid, n) for sid, n in unowned if sid > mark or sid in own]
            orphans = [sid for sid, n in unowned if not (sid > mark or sid in own)]
        job.vector_sources = [sid for sid, _ in mine]
        self._sizes.update(mine)
        job.to_embed += sum(n for _, n in mine)
        if mine:
            self.preload()
        return orphans

    def preload(self) -> None:
        """Start loading a lazy model in a helper thread (once), so that it is warm by
        the time the vector stage needs it."""
        load = getattr(self.writer.embedder, "load", None)
        if load is None or self._loaded():
            return
        if self._loader is None or not self._loader.is_alive():
            self._loader = threading.Thread(target=self._try_load, name="ctx-model-load",
                                            daemon=True)
            self._loader.start()

    def _loaded(self) -> bool:
        return bool(getattr(self.writer.embedder, "loaded", True))

    def _try_load(self) -> None:
        try:
            self.writer.embedder.load()  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - the next step's encode loads again, and fails
            log.warning("model load failed in the helper thread")

    # -- one step --------------------------------------------------------------------
    def step(self, jobs: list[Job]) -> bool:
        """Embed a little for ``jobs`` (see the module docstring); False when the model
        is still loading. A failure (the vector store, the model) raises the ingestion
        alert until a later step succeeds; the jobs fail, their sources stay
        keyword-searchable."""
        try:
            moved = self._step(jobs)
        except Exception:
            self._window = None
            self.alerts.write_failed("vectors")
            raise
        if moved:
            self.alerts.write_ok("vectors")
        return moved

    def _step(self, jobs: list[Job]) -> bool:
        win = self._current(jobs)
        if win is None:
            return True
        new = [k for k in win.order if k not in win.done][:STEP_TEXTS]
        if new and not self._loaded():
            self.preload()
            if self._loader is not None and self._loader.is_alive():
                for job in jobs:
                    job.waiting = "model"
                return False
        for job in jobs:
            job.waiting = ""
        if new:
            self._embed(win, new)
        self._finish(win)
        return True

    def _current(self, jobs: list[Job]) -> _Window | None:
        """The window for ``jobs``: the one being embedded while nothing else wrote to
        the vault and its sources still lead the queue, else read again."""
        owner: dict[int, Job] = {}
        size = 0
        for job in jobs:
            for sid in job.vector_sources:
                if size >= WINDOW_TEXTS or len(owner) >= WINDOW_SOURCES:
                    break
                owner[sid] = job
                size += self._sizes.get(sid, 1)
        win = self._window
        if win is not None and win.generation == self.rt.vault.generation and \
                set(win.owner) <= set(owner) and win.owner:
            win.owner = {sid: owner[sid] for sid in win.owner}
            return win
        self._window = win = self._read(owner)
        return win if win.rows else None

    def _read(self, owner: dict[int, Job]) -> _Window:
        rows: dict[int, list[EmbedRow]] = {}
        for r in src.embed_rows(self.rt.vault, list(owner)):
            rows.setdefault(r.source_id, []).append(r)
        for sid in [s for s in owner if s not in rows]:  # replaced, deleted, done
            self._drop(owner.pop(sid), sid)
        model = self.writer.embedder.name
        keys: dict[int, str] = {}
        texts: dict[str, str] = {}
        for rs in rows.values():
            for r in rs:
                text = embed_text(r.title, r.heading, r.kind, r.text)
                keys[r.id] = k = cache_key(model, text)
                texts.setdefault(k, text)
        done = embed_cache.present(self.rt.vault, list(texts))
        count = self.writer.counter.count
        order = sorted((k for k in texts if k not in done), key=lambda k: -count(texts[k]))
        return _Window(owner, rows, keys, texts, order, done,
                       generation=self.rt.vault.generation)

    def _embed(self, win: _Window, new: list[str]) -> None:
        """Embed ``new`` (keys of the window), cache them, count them for their jobs."""
        vecs = self.writer.encode([win.texts[k] for k in new], longest_first=True)
        embed_cache.put(self.rt.vault, [(k, v.astype(np.float32).tobytes())
                                        for k, v in zip(new, vecs, strict=True)],
                        chunks=False)
        win.vecs.update(zip(new, vecs, strict=True))
        win.done.update(new)
        fresh = set(new)
        named: set[str] = set()  # jobs whose current file is set for this step
        for sid, rs in win.rows.items():  # each new text is the model's work for one job
            for r in rs:
                if win.keys[r.id] in fresh:
                    fresh.discard(win.keys[r.id])
                    job = win.owner[sid]
                    job.model_texts += 1
                    if job.id not in named:  # what its card says it works on now
                        named.add(job.id)
                        job.current = r.uri

    def _finish(self, win: _Window) -> None:
        """Add the vectors of the window's sources that have them all, mark them
        embedded (one transaction), and count every source's progress."""
        whole = [sid for sid, rs in win.rows.items()
                 if all(win.keys[r.id] in win.done for r in rs)]
        if whole:
            rows = [r for sid in whole for r in win.rows[sid]]
            need = list({win.keys[r.id] for r in rows} - set(win.vecs))
            for k, blob in self.rt.vault.cached_vectors(need).items():
                win.vecs[k] = np.frombuffer(blob, dtype=np.float32)
            matrix = np.stack([win.vecs[win.keys[r.id]] for r in rows]).astype(np.float32)
            self.rt.vectors.add([r.id for r in rows], matrix, [self._meta(r) for r in rows])
            src.mark_embedded(self.rt.vault, whole)
        for sid, rs in list(win.rows.items()):
            job = win.owner[sid]
            have = sum(1 for r in rs if win.keys[r.id] in win.done)
            job.embedded += have - self._done_for(job, sid)
            self._counted[sid] = (job.id, have)
        for sid in whole:
            job = win.owner.pop(sid)
            del win.rows[sid]
            job.vector_sources.remove(sid)
            self._sizes.pop(sid, None)
            self._counted.pop(sid, None)
        win.generation = self.rt.vault.generation  # our own writes keep the window valid
        if not win.rows:
            self._window = None

    def _done_for(self, job: Job, sid: int) -> int:
        """Chunks of a source already counted as embedded for ``job``."""
        held = self._counted.get(sid)
        return held[1] if held is not None and held[0] == job.id else 0

    def _drop(self, job: Job, sid: int) -> None:
        """A source that no longer waits (replaced or deleted meanwhile): not counted."""
        job.vector_sources.remove(sid)
        job.to_embed -= self._sizes.pop(sid, 0)
        job.embedded -= self._done_for(job, sid)
        self._counted.pop(sid, None)

    def _meta(self, r: EmbedRow) -> dict[str, Any]:
        meta: dict[str, Any] = {"source_id": r.source_id, "kind": r.kind,
                                "source_kind": r.source_kind,
                                "source_h": self.rt.hasher(r.uri)}
        when = r.time if r.time is not None else r.created_at
        if when is not None:
            meta["time"] = float(when)
        if r.project:
            meta["project_h"] = self.rt.hasher(r.project)
        return meta
