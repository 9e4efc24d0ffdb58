"""One ingestion job drawn as a card: what it is, a progress bar, counts, rate, time left."""

from __future__ import annotations

import time
from collections.abc import Callable

from desktop.panels.widgets import fmt_bytes, fmt_duration, fmt_int, fmt_time, is_dark
from desktop.qt import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    Qt,
    QVBoxLayout,
    QWidget,
)
from engine import FINAL_JOB_STATES, JobSnapshot

FINAL = FINAL_JOB_STATES
_KIND_NAMES = {"paths": "Files", "text": "Text", "conversation": "Conversation",
               "sync": "Coding sessions sync", "delete": "Delete"}


def progress(job: JobSnapshot) -> tuple[int, int]:
    """(files processed, files total) of a job snapshot."""
    total = job.files_total
    processed = job.files_done + job.files_skipped
    return min(processed, total) if total else processed, total


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


def summary(job: JobSnapshot) -> str:
    done, total = progress(job)
    skipped, unchanged = job.files_skipped, job.files_unchanged
    parts = [f"{fmt_int(done)} of {fmt_int(total)} files" if total else "0 files",
             _plural(job.chunks, "chunk"), fmt_bytes(job.bytes)]
    if unchanged:
        parts.append(f"{fmt_int(unchanged)} unchanged")
    if skipped:
        parts.append(f"{fmt_int(skipped)} skipped")
    if job.state == "queued":
        return "Waiting for the jobs ahead of it"
    if job.state == "running" and job.stage == "vectors":  # the text is stored already
        return f"Searchable by keyword now · meaning-search {100 * job.embedded // max(1, job.to_embed)}%"
    rate, left = rate_and_left(job)
    if job.state == "running" and rate is not None:
        parts.append(f"{fmt_bytes(rate)}/s")
        parts.append(f"{fmt_duration(left)} left" if left is not None else "estimating…")
    return " · ".join(parts)


def _plural(n: int, word: str) -> str:
    return f"{fmt_int(n)} {word}{'' if n == 1 else 's'}"


def state_line(job: JobSnapshot) -> tuple[str, str]:
    """(text, tone) of a job's state: tone is "ok", "warn", "error" or ""."""
    state, skipped = job.state, job.files_skipped
    if state == "failed":
        return "Failed", "error"
    if state == "cancelled":
        return "Cancelled", "warn"
    if state == "done" and skipped:
        return f"Done, {skipped} file{'s' if skipped != 1 else ''} skipped", "warn"
    if state == "done":
        return "Done", "ok"
    return ("Running" if state == "running" else "Queued"), ""


# State colours (light palette, dark palette), dark enough / light enough to read.
TONES = {"ok": ("#0D6B2E", "#7FD49A"), "warn": ("#8A5300", "#F2C36B"),
         "error": ("#B3261E", "#F2B8B5"), "": ("", "")}


class JobCard(QFrame):
    """A job's live view; ``update_job`` redraws it from a snapshot."""

    def __init__(self, job: JobSnapshot, on_cancel: Callable[[str], None],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.job_id = job.id
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setObjectName("jobcard")
        self.title = QLabel()
        bold = self.title.font()
        bold.setBold(True)
        self.title.setFont(bold)
        self.state = QLabel()
        self.bar = QProgressBar()
        self.bar.setTextVisible(True)
        self.detail = QLabel()
        self.current = QLabel()
        self.current.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.cancel = QPushButton("Cancel")
        self.cancel.setToolTip("Stop this job at the next file; finished files stay stored")
        self.cancel.clicked.connect(lambda: on_cancel(self.job_id))
        top = QHBoxLayout()
        top.addWidget(self.title)
        top.addStretch(1)
        top.addWidget(self.state)
        top.addWidget(self.cancel)
        box = QVBoxLayout(self)
        box.setContentsMargins(10, 8, 10, 8)
        box.setSpacing(4)
        box.addLayout(top)
        box.addWidget(self.bar)
        box.addWidget(self.detail)
        box.addWidget(self.current)
        self.snapshot = job
        self.update_job(job)

    def update_job(self, job: JobSnapshot) -> None:
        self.snapshot = job
        kind = _KIND_NAMES.get(job.kind, job.kind.title())
        self.title.setText(f"{kind} · {fmt_time(job.created, with_date=False)}")
        text, tone = state_line(job)
        self.state.setText(text)
        light, dark = TONES[tone]
        colour = dark if is_dark(self) else light
        self.state.setStyleSheet(f"color: {colour}; font-weight: bold;" if colour else "")
        done, total = progress(job)
        state = job.state
        if state == "queued" or (state == "running" and not total):
            self.bar.setRange(0, 0)  # busy: the file count is not known yet
        else:
            self.bar.setRange(0, max(1, total))
            self.bar.setValue(total if state == "done" else done)
        self.bar.setFormat(f"{done}/{total} files (%p%)" if total else "%p%")
        self.detail.setText(summary(job))
        current = job.current
        if job.final:
            current = job.error.message if job.error and state == "failed" else ""
        shown = self.current.fontMetrics().elidedText(
            current, Qt.TextElideMode.ElideMiddle, max(200, self.width() - 30))
        self.current.setText(shown)
        self.current.setToolTip(current)
        self.current.setVisible(bool(current))
        self.cancel.setVisible(state not in FINAL)
