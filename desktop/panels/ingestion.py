"""Ingestion panel: running and recent jobs, their failures, pause/resume/cancel, drops,
jobs an earlier run left unfinished (Resume, Dismiss), and the watched folders.

It follows the host's ``job_progress`` snapshots (never polls the engine on the
GUI thread). Every job that skipped a file says so on its card, in one banner
and in the failures table: there is no silent success, and no second telling.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from desktop import pickers
from desktop.messages import error_color, error_text, job_title, plural
from desktop.panels.jobcard import JobCard, nothing_new, progress
from desktop.panels.watched import WatchedFolders
from desktop.qt import (
    QColor,
    QEvent,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QPushButton,
    QScrollArea,
    QSplitter,
    Qt,
    QVBoxLayout,
    QWidget,
)
from desktop.widgets import (
    Banner,
    cell,
    fmt_time,
    heading,
    make_table,
    muted,
    reason_text,
)
from engine import JobSnapshot

MAX_CARDS = 12
# Jobs shown as cards: ingestion, and the engine's own vectors for what is stored (a
# job an earlier run left without them), so the tray's job is never without its card.
CARD_KINDS = ("paths", "text", "conversation", "sync", "vectors")


class IngestionPanel(QWidget):
    def __init__(self, host: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.cards: dict[str, JobCard] = {}
        self.failures: list[dict[str, Any]] = []
        self._seen_failures: set[tuple[str, str]] = set()
        self._announced: set[str] = set()
        self._watch_jobs: set[str] = set()  # jobs the watched folders queued
        self._quiet: set[str] = set()  # of those, the ones that found nothing new
        self._banner_job = ""  # the job the banner speaks of
        self.setAcceptDrops(True)

        self.banner = Banner(self)
        self.add_files = QPushButton("Ingest files…")
        self.add_folder = QPushButton("Ingest folder…")
        self.pause = QPushButton("Pause")
        self.resume = QPushButton("Resume")
        self.paused_label = QLabel("")
        self.add_files.clicked.connect(self._pick_files)
        self.add_folder.clicked.connect(self._pick_folder)
        self.pause.clicked.connect(self._pause)
        self.resume.clicked.connect(self._resume)
        self.resume.setEnabled(False)
        bar = QHBoxLayout()
        for w in (self.add_files, self.add_folder, self.pause, self.resume):
            bar.addWidget(w)
        bar.addWidget(self.paused_label)
        bar.addWidget(self.banner, 1)  # messages beside the buttons: no band of their own

        self.jobs_box = QVBoxLayout()
        self.jobs_box.setSpacing(6)
        self.no_jobs = muted("No ingestion yet. Drop files or folders anywhere on this window, "
                             "or use the buttons above.")
        self.jobs_box.addWidget(self.no_jobs)
        self.jobs_box.addStretch(1)
        inner = QWidget()
        inner.setLayout(self.jobs_box)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(inner)

        self.failure_table = make_table(["Time", "Path", "Outcome", "Why"], stretch=1)
        self._failed_rows = 0  # failures are the table's first rows, skips after them
        self.failure_count = muted("")
        self.failure_count.setWordWrap(False)  # one line beside the heading
        self.clear_failures = QPushButton("Clear list")
        self.clear_failures.clicked.connect(self._clear_failures)
        fail_head = QHBoxLayout()
        fail_head.addWidget(heading("Files not stored"))
        fail_head.addWidget(self.failure_count)
        fail_head.addStretch(1)
        fail_head.addWidget(self.clear_failures)
        fail_box = QVBoxLayout()
        fail_box.setContentsMargins(0, 0, 0, 0)
        fail_box.addLayout(fail_head)
        fail_box.addWidget(self.failure_table)

        self.watched = WatchedFolders(host, self.banner.show_message)

        lower = QWidget()
        lower_box = QVBoxLayout(lower)
        lower_box.setContentsMargins(0, 0, 0, 0)
        lower_box.addLayout(fail_box, 3)
        lower_box.addWidget(self.watched, 1)
        top = QWidget()
        top_box = QVBoxLayout(top)
        top_box.setContentsMargins(0, 0, 0, 0)
        top_box.addWidget(heading("Jobs"))
        top_box.addWidget(scroll)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(lower)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([400, 300])
        self.failure_table.setMinimumHeight(90)

        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(split, 1)

        host.job_progress.connect(self.on_job)
        host.synced.connect(self._synced)
        host.watch_changed.connect(self._watched)
        host.ready.connect(self._on_ready)
        host.paused_changed.connect(self._set_paused)
        host.state_changed.connect(self._redraw_cards)
        self._set_paused(bool(getattr(host, "ingestion_paused", False)))
        if getattr(host, "engine_open", False):
            self._on_ready()

    # -- host events -------------------------------------------------------------------
    def _on_ready(self) -> None:
        self.host.run(lambda engine: (engine.jobs(), engine.interrupted_jobs(),
                                      engine.status().sources),
                      success=self._load_jobs, failure=self._show_failure)

    def _load_jobs(self, found: tuple[list[JobSnapshot], list[JobSnapshot], int]) -> None:
        jobs, interrupted, stored = found
        if stored:  # a store with sources (restored, or from earlier runs) is not new
            self.no_jobs.setText(f"No ingestion since ctx started; the store holds "
                                 f"{plural(stored, 'source')} (listed in Sources). Drop "
                                 "files or folders anywhere on this window, or use the "
                                 "buttons above.")
        for job in interrupted:
            self.on_job(job)
        for job in sorted(jobs, key=lambda j: j.created)[-MAX_CARDS:]:
            self.on_job(job)

    def _watched(self, report: Any) -> None:
        """A watched folder queued a job: a look that finds nothing new is no card."""
        if report.job:
            self._watch_jobs.add(report.job)
            card = self.cards.get(report.job)
            if card is not None and card.snapshot.final:
                self.on_job(card.snapshot)

    def _redraw_cards(self, *_: Any) -> None:
        paused = bool(getattr(self.host, "ingestion_paused", False))
        loading = not getattr(self.host, "model_loaded", True)
        for card in self.cards.values():
            card.update_job(card.snapshot, paused=paused, model_loading=loading)

    def on_job(self, job: JobSnapshot) -> None:
        """A job snapshot from the host: redraw its card, collect its failures."""
        if job.kind not in CARD_KINDS:
            return
        job_id = job.id
        if job_id in self._quiet:
            return  # a watched folder's look that found nothing new: not a card
        watched = job_id in self._watch_jobs or job_id in getattr(self.host, "watch_jobs", ())
        if job.final and watched and nothing_new(job) \
                and not job.errors and not job.skipped:
            self._quiet.add(job_id)  # every launch re-reads the watched folders
            self._drop_card(job_id)
            if self._banner_job == job_id:
                self.banner.clear_message()
            return
        card = self.cards.get(job_id)
        paused = bool(getattr(self.host, "ingestion_paused", False))
        loading = not getattr(self.host, "model_loaded", True)
        if card is None:
            if not job.final and self.banner.kind in ("ok", "info"):
                self.banner.clear_message()  # it spoke of a job before this one
            card = JobCard(job, self.cancel_job, on_resume=self.resume_interrupted,
                           on_dismiss=self.dismiss_interrupted)
            card.update_job(job, paused=paused, model_loading=loading)
            self.cards[job_id] = card
            self.jobs_box.insertWidget(0, card)
            self.no_jobs.hide()
            self._trim()
        else:
            card.update_job(job, paused=paused, model_loading=loading)
        for err in job.errors:  # could not be read or parsed: listed first, in red
            self._add_failure(job, err.path, reason_text(err.reason, err.detail))
        for err in job.skipped:  # left out on purpose: listed after, never alerted
            self._add_failure(job, err.path, reason_text(err.reason, err.detail),
                              failed=False)
        if job.state == "failed":
            self._add_failure(job, "", error_text(job.error))
        if job.final and not job.interrupted and job_id not in self._announced:
            self._announced.add(job_id)
            self._announce(job)

    def _announce(self, job: JobSnapshot) -> None:
        """One banner when a job ends: what went in, what did not and where to look."""
        self._banner_job = job.id
        done, total = progress(job)
        failed = len(job.errors)  # could not be read or parsed: an alarm
        skipped = max(0, job.files_skipped - failed)  # left out on purpose: a report
        title = job_title(job)
        if job.state == "failed":
            self.banner.show_message("error", f"Ingesting {title} failed: "
                                     + error_text(job.error, advice=False)
                                     + " Nothing already stored was lost.")
        elif job.state == "cancelled":
            self.banner.show_message("info", f"{title}: cancelled after {done} of "
                                     f"{plural(total, 'file')}; the files finished before "
                                     "stay stored.")
        elif failed:
            also = f", {skipped} skipped" if skipped else ""
            self.banner.show_message("error", f"{title}: {total - failed - skipped} of "
                                     f"{plural(total, 'file')} ingested, {failed} could not "
                                     f"be read{also}. The list of files not stored says why.")
        elif skipped:
            self.banner.show_message("info", f"{title}: {total - skipped} of "
                                     f"{plural(total, 'file')} ingested, {skipped} skipped "
                                     "on purpose (empty, binary, unsupported, too large or "
                                     "generated data); each is listed below with its "
                                     "reason.")
        elif nothing_new(job) and job.kind == "sync" and not job.files_total:
            # said with the places looked in when the sync's result comes (``_synced``)
            self.banner.show_message("info", "No coding sessions were found: no Claude Code "
                                     "or Codex transcript folder is on this computer.")
        elif nothing_new(job):
            what = "no transcript changed since the last sync" if job.kind == "sync" else \
                "every file was unchanged"
            self.banner.show_message("info", f"{title}: nothing new ({what}).")
        elif job.kind in ("paths", "sync"):
            unchanged = job.files_unchanged
            extra = f" ({unchanged:,} unchanged)" if unchanged else ""
            self.banner.show_message("ok", f"{title}: {plural(total, 'file')} "
                                     f"ingested{extra}, {plural(job.chunks, 'chunk')}.")

    def _synced(self, result: Any) -> None:
        """A sync this window asked for found no transcript: say where it looked."""
        if result.files:
            return
        places = ", ".join(_home_short(p) for p in result.looked_in) or "nowhere"
        self.banner.show_message("info", "No coding sessions were found: no Claude Code or "
                                 f"Codex transcripts in {places}.")

    def _trim(self) -> None:
        finished = [c for c in self.cards.values()
                    if c.snapshot.final and not c.snapshot.interrupted]
        finished.sort(key=lambda c: c.snapshot.created)
        while len(self.cards) > MAX_CARDS and finished:
            card = finished.pop(0)
            del self.cards[card.job_id]
            card.setParent(None)
            card.deleteLater()

    def _add_failure(self, job: JobSnapshot, path: str, reason: str, *,
                     failed: bool = True) -> None:
        """A file not stored: a failure goes on top (newest first) in the error colour,
        above every skip; a skip (left out on purpose) after the failures."""
        key = (job.id, path or reason)
        if key in self._seen_failures:
            return
        self._seen_failures.add(key)
        self.failures.append({"job": job.id, "path": path, "reason": reason,
                              "failed": failed})
        table = self.failure_table
        table.setSortingEnabled(False)
        row = 0 if failed else self._failed_rows
        table.insertRow(row)
        when = job.finished or job.started or job.created
        items = (cell(fmt_time(when, with_date=False)),
                 cell(path or "(the whole job)", tip=path),
                 cell("Failed" if failed else "Skipped"),
                 cell(reason, tip=reason))
        for col, item in enumerate(items):
            if failed:
                item.setForeground(QColor(error_color(table)))
            table.setItem(row, col, item)
        self._failed_rows += failed
        self._count_failures()

    def changeEvent(self, event: Any) -> None:
        """The palette switched: the failures' red follows it (as toned widgets do)."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            red = QColor(error_color(self.failure_table))
            for row in range(self._failed_rows):
                for col in range(self.failure_table.columnCount()):
                    item = self.failure_table.item(row, col)
                    if item is not None:
                        item.setForeground(red)

    def _count_failures(self) -> None:
        failed = self._failed_rows
        skipped = self.failure_table.rowCount() - failed
        parts = ([plural(failed, "failure")] if failed else []) + (
            [f"{skipped:,} skipped on purpose"] if skipped else [])
        self.failure_count.setText(", ".join(parts))

    def _clear_failures(self) -> None:
        self.failures.clear()
        self.failure_table.setRowCount(0)
        self._failed_rows = 0
        self._count_failures()

    def _show_failure(self, error: BaseException | dict[str, Any] | str) -> None:
        self.banner.show_message("error", error_text(error))

    # -- actions -------------------------------------------------------------------------
    def accept_drop(self, paths: list[str]) -> None:
        """Ingest dropped (or picked) files and folders; a missing path is a clear message."""
        missing = [p for p in paths if not Path(p).exists()]
        present = [p for p in paths if Path(p).exists()]
        if missing:
            self.banner.show_message("error", "Not found, not ingested: " + ", ".join(missing))
        if present:  # its card appears at the top: no banner of its own until it ends
            self.host.ingest_paths(present)

    def dragEnterEvent(self, event: Any) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: Any) -> None:
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.accept_drop(paths)

    def _pick_files(self) -> None:
        files = pickers.open_files(self, "Ingest files")
        if files:
            self.accept_drop(files)

    def _pick_folder(self) -> None:
        folder = pickers.folder(self, "Ingest folder")
        if folder:
            self.accept_drop([folder])

    def _pause(self) -> None:
        self.host.pause_ingestion()  # the host's paused_changed redraws the buttons

    def _resume(self) -> None:
        self.host.resume_ingestion()

    def _set_paused(self, paused: bool) -> None:
        self.pause.setEnabled(not paused)
        self.resume.setEnabled(paused)
        self.paused_label.setText("Ingestion is paused" if paused else "")
        self._redraw_cards()

    def cancel_job(self, job_id: str) -> None:
        self.host.cancel_job(job_id)

    def resume_interrupted(self, job_id: str) -> None:
        """Ingest the rest of a job an earlier run left unfinished (its card goes)."""
        self.host.resume_interrupted(job_id, success=lambda _new: self._drop_card(job_id))

    def dismiss_interrupted(self, job_id: str) -> None:
        self.host.dismiss_interrupted(job_id, success=lambda _: self._drop_card(job_id))

    def _drop_card(self, job_id: str) -> None:
        card = self.cards.pop(job_id, None)
        if card is not None:
            card.setParent(None)
            card.deleteLater()
        self.no_jobs.setVisible(not self.cards)

    @property
    def watch_list(self) -> QListWidget:
        return self.watched.list


def _home_short(path: str) -> str:
    """``path`` with the home folder as ~ (shorter to read)."""
    home = str(Path.home())
    return "~" + path[len(home):] if path == home or path.startswith(home + "/") else path
