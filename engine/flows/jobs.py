"""Ingestion jobs: queued, run one at a time by the engine's single writer thread.

A job's progress (files, bytes, chunks, the file being read, per-file errors)
can be polled with ``get()`` or followed with ``subscribe()``. A file that
fails is reported by path and reason and the job goes on with the rest.

``cancel()`` drops a queued job at once and asks a running one to stop at its
next safe point: the job body calls ``job.check()`` (or ``progress()``, which
checks too) only where everything before is either fully stored or not stored
at all, so a cancelled job keeps the sources it finished and nothing else.

Jobs that each store one document (a text, a conversation) and wait in the
queue one behind the other are run together, up to ``MAX_JOINED``: their
chunks are embedded in one pass and written in one vector-store call each
batch, instead of one model call and one vector-store call per document (the
SciFact bench ingests 5,183 abstracts as 5,183 jobs; each alone kept one of two
cores idle whenever it had a single chunk, and paid about 50 ms of Chroma
upsert). Each keeps its own id, state, progress and error.

Ingestion runs in two stages per job. The job body stores text for the keyword
lanes (stage "keyword") and lists what it stored in ``vector_sources``; the job
then stays running in stage "vectors" while a background stage (``Stage``,
``engine.flows.ingest.vector_stage``) makes those sources' vectors. The background
stage runs on the same writer thread, a step of about half a second at a time,
only while no job is queued: a folder dropped while another one's vectors are
being made is stored for keyword search first. Cancelling a job in its vector
stage leaves its sources keyword-searchable; their vectors are made by a
background job of kind "vectors" (started when the next job reaches its vector
stage, or at the next warm-up) that runs after every other job's vector work, so a
new small ingest never waits behind them; an ingest given those files again makes
them as its own work. Vector work goes shortest first.

Should the writer thread itself end by an error, every waiting job fails with it
(``wait`` never hangs), later jobs fail at once, and ``on_death`` is told.
"""

from __future__ import annotations

import builtins
import functools
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from engine.api import FINAL_JOB_STATES, ErrorInfo, JobSnapshot
from engine.errors import CtxError, InternalError, NotFound
from engine.flows.job import Cancelled, Job, JoinableWork, Stage, Work

__all__ = ["Cancelled", "Job", "JobRunner", "JoinableWork", "Stage", "Work"]

log = logging.getLogger("ctx.jobs")

Listener = Callable[[JobSnapshot], None]
FINAL_STATES = FINAL_JOB_STATES
# Jobs run together at most (see the module docstring): 64 abstracts of SciFact are
# about 90 chunks at 300-token chunks (more at the default 200), enough to keep both
# cores busy between writes.
MAX_JOINED = 64
# Jobs their callers run beside the writer (``track``): a dead writer does not end them.
_BESIDE = ("backup", "verify_backup")


class JobRunner:
    """One worker thread; jobs run in submission order (the single-writer rule), and a
    background ``stage`` between them (see the module docstring)."""

    def __init__(self, on_finish: Callable[[Job], None] | None = None, *,
                 stage: Stage | None = None,
                 on_stage: Callable[[Job], None] | None = None,
                 on_death: Callable[[ErrorInfo], None] | None = None) -> None:
        self._stage = stage
        self._on_death = on_death  # the writer thread ended by an error (see _died)
        self._dead: ErrorInfo | None = None
        self._on_stage = on_stage  # a job's keyword stage is done: its sources are stored
        self._staged: list[Job] = []  # jobs in their vector stage, in order
        self._running: Job | None = None  # the job whose body runs now
        self._last = ""  # the job submitted last
        self._stopping = False
        self._jobs: dict[str, Job] = {}
        self._queue: queue.Queue[tuple[Job, Work] | None] = queue.Queue()
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []
        # Listeners are called one at a time, in order, whichever thread emits.
        self._emit_lock = threading.RLock()
        self._resume = threading.Event()
        self._resume.set()
        self._on_finish = on_finish
        self._thread = threading.Thread(target=self._run, name="ctx-writer", daemon=True)
        self._thread.start()

    def submit(self, kind: str, work: Work, *, inputs: tuple[str, ...] = ()) -> Job:
        job = Job(id=uuid.uuid4().hex[:16], kind=kind, inputs=inputs)
        with self._lock:
            job.ahead = self._last
            self._last = job.id
            self._jobs[job.id] = job
            dead = self._dead
        if dead is not None:  # no writer runs it: it fails at once with the writer's error
            self._fail(job, dead)
            return job
        self._queue.put((job, work))
        self._emit(job)
        return job

    @property
    def dead(self) -> ErrorInfo | None:
        """Why the writer thread ended, when an error ended it (None while it runs)."""
        return self._dead

    def track(self, kind: str) -> Job:
        """A job its caller runs on its own thread, beside the writer (a backup reads while
        the writer writes): listed, followed, cancelled and waited for like the others;
        ``progress(job)`` announces it, ``finish(job, outcome)`` ends it."""
        job = Job(id=uuid.uuid4().hex[:16], kind=kind, state="running", started=time.time())
        with self._lock:
            self._jobs[job.id] = job
        self._emit(job)
        return job

    def progress(self, job: Job) -> None:
        """A tracked job moved on (announced); a safe point (Cancelled when asked to stop)."""
        self._emit(job)
        job.check()

    def finish(self, job: Job, outcome: BaseException | None) -> None:
        """End a tracked job: done (None), cancelled or failed, as a writer job ends."""
        self._settle(job, outcome)

    def get(self, job_id: str) -> JobSnapshot:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                raise NotFound("no such job", field="job_id")
            return self._snap(job)

    def list(self) -> list[JobSnapshot]:
        with self._lock:
            return [self._snap(j) for j in self._jobs.values()]

    def _snap(self, job: Job) -> JobSnapshot:
        """``job``'s snapshot, saying which job a queued one waits behind (under _lock):
        the one running now, else the one submitted before it while that is unfinished."""
        behind = ""
        if job.state == "queued":
            ahead = self._running or self._jobs.get(job.ahead)
            if ahead is not None and ahead is not job and ahead.state in ("queued", "running"):
                behind = ahead.id
        return job.snapshot(behind, self.paused)

    def wait(self, job_id: str, timeout: float | None = None) -> JobSnapshot:
        """The job's snapshot once it ends (or after ``timeout``). Should the writer
        thread end with the job unfinished, the job fails with the writer's error."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            snap = self.get(job_id)
            if snap.final:
                return snap
            if not self._thread.is_alive() and not snap.final:
                self._writer_gone()
                continue
            if deadline is not None and time.monotonic() > deadline:
                return snap
            time.sleep(0.02)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(snapshot)`` on every progress change; returns an unsubscribe."""
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)
        return unsubscribe

    def cancel(self, job_id: str) -> JobSnapshot:
        """Drop a queued job, or ask a running one to stop at its next safe point.

        Returns the job's snapshot: "cancelled" at once for a queued job; a
        running one stays "running" until it reaches a safe point (poll with
        ``get`` or ``wait``). A finished job is left as it is.
        """
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                raise NotFound("no such job", field="job_id")
            job.cancel_event.set()
            dropped = job.state == "queued"
            if dropped:
                job.state, job.finished = "cancelled", time.time()
        if dropped:
            self._emit(job)
        return job.snapshot()

    def cancel_all(self) -> builtins.list[JobSnapshot]:
        """Cancel every queued and running job (an app that quits); returns their snapshots."""
        with self._lock:
            live = [j.id for j in self._jobs.values() if j.state in ("queued", "running")]
        return [self.cancel(jid) for jid in live]

    def pause(self) -> None:
        self._resume.clear()
        self._announce_unfinished()

    def resume(self) -> None:
        self._resume.set()
        self._announce_unfinished()

    def _announce_unfinished(self) -> None:
        """Every queued or running job's snapshot, now that ``waiting`` changed for it
        (a job between steps would otherwise say "paused" only at its next step)."""
        with self._lock:
            unfinished = [j for j in self._jobs.values() if j.state in ("queued", "running")]
        for job in unfinished:
            self._emit(job)

    @property
    def paused(self) -> bool:
        return not self._resume.is_set()

    def busy(self) -> bool:
        with self._lock:
            return any(j.state in ("queued", "running") for j in self._jobs.values())

    def _emit(self, job: Job) -> None:
        with self._emit_lock:
            with self._lock:
                snap = self._snap(job)
                listeners = list(self._listeners)
            for fn in listeners:
                try:
                    fn(snap)
                except Exception:  # a listener must never break ingestion
                    log.exception("job listener failed")

    def _run(self) -> None:
        """The writer thread: the loop, and should anything end it by an error, every
        unfinished job fails with that error and the engine is told (never a hang)."""
        try:
            self._loop()
        except BaseException as exc:  # reported to every waiting job
            log.error("the writer thread failed", exc_info=exc)
            self._died(exc)

    def _died(self, exc: BaseException) -> None:
        err = exc if isinstance(exc, CtxError) else InternalError.of(exc, "the writer thread")
        info = ErrorInfo.of(err)
        with self._lock:
            self._dead = info
        self._writer_gone()
        _call_hook(self._on_death, info, "writer death")

    def _writer_gone(self) -> None:
        """Fail every unfinished job: no writer is left to run or finish them."""
        info = self._dead or ErrorInfo.of(InternalError(
            "the writer thread ended", type="WriterGone"))
        with self._lock:
            self._dead = info
            live = [j for j in self._jobs.values() if j.state in ("queued", "running")
                    and j.kind not in _BESIDE]
        self._staged.clear()
        for job in live:
            self._fail(job, info)

    def _fail(self, job: Job, info: ErrorInfo) -> None:
        job.state, job.error = "failed", info
        job.finished, job.current = time.time(), ""
        self._emit(job)
        _call_hook(self._on_finish, job, "job finish")

    def _loop(self) -> None:
        while True:
            item = self._next()
            if item is None:
                self._finish_staged()
                return
            job, work = item
            self._wait_resumed(job)
            group = [(job, work)] + self._queued_behind(work)
            if len(group) > 1:
                self._run_joined(group)
                continue
            with self._lock:
                if job.state == "cancelled":  # dropped while queued
                    continue
                job.state, job.started = "running", time.time()
                job.stage = self._first_stage(job)
                self._running = job
            self._begin(job)
            self._emit(job)
            outcome: BaseException | None = None
            try:
                job.check()
                work(job, functools.partial(self._progress, job))
            except Exception as exc:  # noqa: BLE001 - _settle records and reports it
                outcome = exc
            with self._lock:
                self._running = None
            self._settle(job, outcome)

    def _next(self) -> tuple[Job, Work] | None:
        """The next queued job; while none is queued, the background stage's steps."""
        while True:
            if not self._staged:
                return self._queue.get()
            try:
                return self._queue.get_nowait()
            except queue.Empty:
                pass
            if self.paused or not self._stage_step():
                try:
                    return self._queue.get(timeout=0.1)
                except queue.Empty:
                    continue

    def _stage_step(self) -> bool:
        """One step of the background stage for the jobs in it; settles those that end.
        False when it could do nothing now."""
        for job in [j for j in self._staged if j.cancel_requested]:
            self._staged.remove(job)
            self._settle(job, Cancelled(job.id))
        if not self._staged:
            return True
        assert self._stage is not None
        jobs = list(self._staged)
        try:
            moved = self._stage.step(jobs)
        except Exception as exc:  # noqa: BLE001 - every job of the stage fails with it
            self._staged.clear()
            for job in jobs:
                self._settle(job, exc)
            return True
        for job in jobs:
            if not job.vector_sources:
                self._staged.remove(job)
                self._settle(job, None)
            else:
                self._emit(job)
        return moved

    def _finish_staged(self) -> None:
        """At stop: finish the vector stage of the jobs in it (cancelled ones end at the
        next step); a background job of the engine's own (kind "vectors") ends now."""
        self._stopping = True
        for job in [j for j in self._staged if j.kind == "vectors"]:
            job.cancel_event.set()
        while self._staged:
            if not self._stage_step():
                time.sleep(0.05)

    def _begin(self, job: Job) -> None:
        if self._stage is not None:
            self._stage.begin(job)

    def _first_stage(self, job: Job) -> str:
        return "keyword" if self._stage is not None and self._stage.staged(job.kind) else ""

    def _enter_stage(self, job: Job) -> bool:
        """After ``job``'s body: True (and announced) when it goes on to its vector stage."""
        if self._stage is None or self._stopping and job.kind == "vectors":
            job.vector_sources = []
        else:
            with self._lock:
                others = [j for j in self._jobs.values()
                          if j is not job and j.state in ("queued", "running")]
            if self._stage.adopt(job, others) and not self._stopping:
                self._background_vectors([job, *others])
        if not job.vector_sources:
            return False
        job.stage = "vectors"
        job.stage_started = time.time()
        job.current = ""
        self._staged.append(job)
        # the shortest vector work first; the engine's own background work ("vectors",
        # what an interrupted job or a crash left) last: a new small ingest never waits
        # behind it (stable: among equals, the order they came in)
        self._staged.sort(key=lambda j: (j.kind == "vectors", j.to_embed - j.embedded))
        self._emit(job)
        if self._on_stage is not None:
            try:
                self._on_stage(job)
            except Exception:
                log.exception("job stage hook failed")
        return True

    def _background_vectors(self, others: builtins.list[Job]) -> None:
        """Waiting sources nobody owns (an interrupted job's): a background job of kind
        "vectors" makes their vectors, after every other job's vector work."""
        assert self._stage is not None
        job = Job(id=uuid.uuid4().hex[:16], kind="vectors", state="running",
                  started=time.time(), stage="vectors")
        self._stage.adopt(job, others)
        if not job.vector_sources:
            return
        with self._lock:
            self._jobs[job.id] = job
        self._staged.append(job)
        self._emit(job)

    def _queued_behind(self, work: Work) -> builtins.list[tuple[Job, Work]]:
        """The jobs queued right behind ``work`` that may join it (taken off the queue)."""
        if not isinstance(work, JoinableWork):
            return []
        out: list[tuple[Job, Work]] = []
        with self._queue.mutex:  # an unbounded queue: nothing waits on its not_full
            waiting = self._queue.queue
            while waiting and len(out) + 1 < MAX_JOINED:
                nxt = waiting[0]
                if nxt is None or not work.joins(nxt[1]):
                    break
                out.append(waiting.popleft())
        return out

    def _run_joined(self, group: builtins.list[tuple[Job, Work]]) -> None:
        live: list[tuple[Job, Work]] = []
        with self._lock:
            for job, work in group:
                if job.state != "cancelled":  # those dropped while queued stay dropped
                    job.state, job.started = "running", time.time()
                    job.stage = self._first_stage(job)
                    live.append((job, work))
            self._running = live[0][0] if live else None
        for job, _ in live:
            self._begin(job)
            self._emit(job)
        if not live:
            return
        first = live[0][1]
        assert isinstance(first, JoinableWork)
        try:
            outcomes = first.run_joined(live, self._progress_joined)
        except Exception as exc:  # a bug in the group runner: every job reports it
            log.exception("joined jobs failed")
            outcomes = {job.id: exc for job, _ in live}
        with self._lock:
            self._running = None
        for job, _ in live:
            self._settle(job, outcomes.get(job.id))

    def _settle(self, job: Job, outcome: BaseException | None) -> None:
        """Record how ``job`` ended (None: done, or on to its vector stage), announce it,
        run the finish hook."""
        if outcome is None and job.stage != "vectors":
            try:
                if self._enter_stage(job):
                    return
            except Exception as exc:  # noqa: BLE001 - the vault failed: the job fails
                outcome = exc
        if outcome is None:
            job.state = "done"
        elif isinstance(outcome, Cancelled):
            job.state = "cancelled"
            log.info("job %s cancelled after %d sources", job.id, len(job.sources))
        elif isinstance(outcome, CtxError):
            job.state, job.error = "failed", ErrorInfo.of(outcome)
        else:  # a bug: internal_error, with the exception's type and never its message
            log.error("job %s failed", job.id, exc_info=outcome)
            job.state, job.error = "failed", ErrorInfo.of(InternalError.of(outcome, "job"))
        job.finished, job.current = time.time(), ""
        self._emit(job)
        _call_hook(self._on_finish, job, "job finish")

    def _wait_resumed(self, job: Job) -> None:
        """Wait while ingestion is paused, unless the job is cancelled meanwhile."""
        while not self._resume.wait(0.1):
            if job.cancel_requested:
                return

    def _progress(self, job: Job) -> None:
        self._emit(job)
        self._wait_resumed(job)
        job.check()

    def _progress_joined(self, job: Job) -> None:
        """Progress of one job of a group: announced; a pause holds the whole group."""
        self._emit(job)
        self._wait_resumed(job)

    def stop(self, timeout: float = 30.0) -> bool:
        """Run what is queued, then end the worker; past ``timeout`` seconds the jobs
        still queued or running are cancelled (they stop at a safe point).
        Returns whether the worker has ended."""
        self._resume.set()
        self._queue.put(None)
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("jobs still running after %.0f s: cancelling them", timeout)
            self.cancel_all()
            self._thread.join(timeout)
        return not self._thread.is_alive()


def _call_hook(hook: Callable[[Any], object] | None, arg: Any, what: str) -> None:
    """Call a host's hook; its failure is logged, never the writer's."""
    if hook is None:
        return
    try:
        hook(arg)
    except Exception:
        log.exception("%s hook failed", what)
