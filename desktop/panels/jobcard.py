"""One ingestion job drawn as a card: what it ingests, its state, a bar, counts, rate,
time left; an interrupted job from an earlier run, with Resume and Dismiss.

The card says what is true: a queued job waits (no bar that reads as full), a
paused one says paused, a job that waits for the model to load says so, a
staged job says how far its text is searchable and its vectors made, and a sync
or a folder with nothing new says that instead of "0 %".
"""

from __future__ import annotations

import time
from collections.abc import Callable

from desktop.appearance import TONES as APPEARANCE_TONES
from desktop.appearance import paint_tone
from desktop.messages import job_title, plural
from desktop.qt import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPalette,
    QProgressBar,
    QPushButton,
    Qt,
    QVBoxLayout,
    QWidget,
)
from desktop.widgets import fmt_bytes, fmt_time
from engine import FINAL_JOB_STATES, JobSnapshot
from ipc.status_text import progress_text

FINAL = FINAL_JOB_STATES
_KIND_NAMES = {"paths": "Files", "text": "Text", "conversation": "Conversation",
               "sync": "Sync", "delete": "Delete", "adapt": "Learning"}
RATE_AFTER_S = 2.0  # a rate measured over less than this is noise: not shown


def progress(job: JobSnapshot) -> tuple[int, int]:
    """(files processed, files total) of a job snapshot (``files_done`` counts every
    file handled: stored, unchanged or skipped)."""
    total = job.files_total
    return (min(job.files_done, total) if total else job.files_done), total


def rate_and_left(job: JobSnapshot, now: float | None = None
                  ) -> tuple[float | None, float | None]:
    """Bytes per second so far and the seconds left (by files), or None when unknown."""
    started = job.started
    if not started:
        return None, None
    end = job.finished or now or time.time()
    elapsed = max(1e-3, end - started)
    rate = job.bytes / elapsed
    done, total = progress(job)
    if job.final or not total or not done:
        return rate, None
    return rate, (total - done) * elapsed / done


def nothing_new(job: JobSnapshot) -> bool:
    """A finished job that stored nothing because nothing had changed (not a failure)."""
    return (job.state == "done" and job.chunks == 0 and not job.errors
            and job.files_done == job.files_unchanged)


def stage_text(job: JobSnapshot) -> str:
    """Staged ingestion: how far the text is searchable and the vectors made, in the
    engine's description (``job.progress``, as the tray and ``ctx status`` say it); ""
    for a job without stages."""
    to_embed = int(job.to_embed or 0)
    if not to_embed or (not job.stage and job.final):
        return ""
    if job.embedded >= to_embed or (job.state == "done" and job.stage == "vectors"):
        return "Searchable by keyword and by meaning"
    if job.stage != "vectors":
        return ""
    paused = job.waiting == "paused"
    return "Every file stored, searchable by keyword now · " + progress_text(
        job, time_left=not paused)


def summary(job: JobSnapshot, *, paused: bool = False, model_loading: bool = False) -> str:
    """The card's detail line."""
    if job.interrupted:
        done, total = progress(job)
        stored = f"{done} of {plural(total, 'file')} were stored" if total else \
            "it had not started"
        return (f"Interrupted when ctx quit; {stored}. Resume reads the rest (what is "
                "stored is skipped as unchanged).")
    waiting = str(getattr(job, "waiting", "") or "")
    if job.state == "queued":
        if paused:
            return "Waiting: ingestion is paused"
        return "Waiting for the job ahead of it" if waiting == "job" else "Waiting to start"
    if nothing_new(job):
        if job.kind == "sync":
            return ("Nothing new to index: no transcript changed since the last sync"
                    if job.files_total else "No coding sessions were found")
        return (f"Nothing new: {plural(job.files_unchanged, 'file')} unchanged"
                if job.files_unchanged else "Nothing to index: no file was found")
    staged = stage_text(job)
    if job.state == "running" and getattr(job, "stage", "") == "vectors" and staged:
        return staged + (" · paused" if paused else "")  # the text is stored already
    done, total = progress(job)
    parts = [f"{done:,} of {plural(total, 'file')}" if total else plural(done, "file"),
             plural(job.chunks, "chunk"), fmt_bytes(job.bytes)]
    if job.files_unchanged:
        parts.append(f"{job.files_unchanged:,} unchanged")
    if job.errors:
        parts.append(f"{len(job.errors):,} failed")
    if job.files_skipped > len(job.errors):
        parts.append(f"{job.files_skipped - len(job.errors):,} skipped")
    if staged:
        parts.append(staged)
    if job.state != "running":
        return " · ".join(parts)
    if paused or waiting == "paused":  # the stage, as the tray says it, with no time left
        words = progress_text(job, time_left=False)
        parts[0] = words[:1].upper() + words[1:]
        return " · ".join(parts) + " · paused"
    if waiting == "model" or (model_loading and not job.bytes):
        return "Waiting for the embedding model to load (a few seconds at start)"
    # the engine's description first (the stage, its count, its time left), as the
    # tray and ``ctx status`` say it; then what only the card adds
    rate, _ = rate_and_left(job)
    parts[0] = progress_text(job)[:1].upper() + progress_text(job)[1:]
    if rate is not None and job.bytes and time.time() - (job.started or 0) >= RATE_AFTER_S:
        parts.append(f"{fmt_bytes(rate)}/s")
    return " · ".join(parts)


def state_line(job: JobSnapshot, *, paused: bool = False) -> tuple[str, str]:
    """(text, tone) of a job's state: tone is "ok", "warn", "error" or ""."""
    state, skipped = job.state, job.files_skipped
    if job.interrupted:
        return "Interrupted", "warn"
    if state == "failed":
        return "Failed", "error"
    if state == "cancelled":
        return "Cancelled", "warn"
    if state == "done" and job.errors:
        failed = len(job.errors)
        also = f", {skipped - failed} skipped" if skipped > failed else ""
        return f"Done, {plural(failed, 'file')} failed{also}", "warn"
    if state == "done" and skipped:  # skips on purpose are a report, not a warning
        return f"Done, {plural(skipped, 'file')} skipped", "ok"
    if state == "done":
        return "Done", "ok"
    if paused:
        return "Paused", "warn"
    return ("Running" if state == "running" else "Queued"), ""


# State colours (light palette, dark palette), dark enough / light enough to read.
TONES = {k: v for k, v in APPEARANCE_TONES.items() if k != "info"} | {"": ("", "")}


class JobCard(QFrame):
    """A job's live view; ``update_job`` redraws it from a snapshot. An interrupted job's
    card has Resume and Dismiss (``on_resume`` / ``on_dismiss``) instead of Cancel."""

    def __init__(self, job: JobSnapshot, on_cancel: Callable[[str], None],
                 parent: QWidget | None = None, *,
                 on_resume: Callable[[str], None] | None = None,
                 on_dismiss: Callable[[str], None] | None = None) -> None:
        super().__init__(parent)
        self.job_id = job.id
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setObjectName("jobcard")
        self.title = QLabel()
        bold = self.title.font()
        bold.setBold(True)
        self.title.setFont(bold)
        self.when = QLabel()
        self.when.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.state = QLabel()
        self.bar = QProgressBar()
        self.bar.setTextVisible(True)
        self.detail = QLabel()
        self.detail.setWordWrap(True)
        self.current = QLabel()
        self.current.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.cancel = QPushButton("Cancel")
        self.cancel.setToolTip("Stop this job at the next file; finished files stay stored")
        self.cancel.clicked.connect(lambda: on_cancel(self.job_id))
        self.resume = QPushButton("Resume")
        self.resume.setToolTip("Ingest the rest: files stored before are skipped as unchanged")
        self.dismiss = QPushButton("Dismiss")
        if on_resume is not None:
            self.resume.clicked.connect(lambda: on_resume(self.job_id))
        if on_dismiss is not None:
            self.dismiss.clicked.connect(lambda: on_dismiss(self.job_id))
        top = QHBoxLayout()
        top.addWidget(self.title)
        top.addWidget(self.when)
        top.addStretch(1)
        top.addWidget(self.state)
        for button in (self.cancel, self.resume, self.dismiss):
            top.addWidget(button)
        box = QVBoxLayout(self)
        box.setContentsMargins(10, 8, 10, 8)
        box.setSpacing(4)
        box.addLayout(top)
        box.addWidget(self.bar)
        box.addWidget(self.detail)
        box.addWidget(self.current)
        self.snapshot = job
        self.paused = False
        self.model_loading = False
        self.update_job(job)

    def update_job(self, job: JobSnapshot, *, paused: bool | None = None,
                   model_loading: bool | None = None) -> None:
        self.snapshot = job
        if paused is not None:
            self.paused = paused
        if model_loading is not None:
            self.model_loading = model_loading
        paused_now = self.paused and not job.final
        self.title.setText(job_title(job))
        self.title.setToolTip("\n".join(job.inputs))
        kind = _KIND_NAMES.get(job.kind, job.kind.title())
        self.when.setText(f"{kind} · {fmt_time(job.created, with_date=job.interrupted)}")
        text, tone = state_line(job, paused=paused_now)
        self.state.setText(text)
        paint_tone(self.state, tone)  # painted again when the palette switches
        self._draw_bar(job, paused_now)
        self.detail.setText(summary(job, paused=paused_now, model_loading=self.model_loading))
        current = job.progress.current  # in the vector stage: the file being embedded
        if job.final:
            current = job.error.message if job.error and job.state == "failed" else ""
        shown = self.current.fontMetrics().elidedText(
            current, Qt.TextElideMode.ElideMiddle, max(200, self.width() - 30))
        self.current.setText(shown)
        self.current.setToolTip(current)
        self.current.setVisible(bool(current))
        self.cancel.setVisible(job.state not in FINAL)
        self.resume.setVisible(job.interrupted)
        self.dismiss.setVisible(job.interrupted)

    def _draw_bar(self, job: JobSnapshot, paused: bool) -> None:
        done, total = progress(job)
        bar = self.bar
        if job.state == "queued" or job.interrupted or nothing_new(job):
            bar.hide()  # nothing is moving: no bar that reads as full or as busy
            return
        bar.show()
        if job.state == "running" and not total and not paused:
            bar.setRange(0, 0)  # busy: the file count is not known yet
            return
        p = job.progress
        if job.state == "running" and p.stage == "vectors" and p.total:
            # the stage under way, not the files (all stored): chunks with vectors
            bar.setRange(0, p.total)
            bar.setValue(p.done)
            bar.setFormat(f"Vectors: {p.done:,} of {plural(p.total, 'chunk')} (%p%)")
            return
        bar.setRange(0, max(1, total))
        bar.setValue(total if job.state == "done" else min(done, max(1, total)))
        bar.setFormat(f"{done:,} of {plural(total, 'file')} (%p%)" if total else "%p%")
