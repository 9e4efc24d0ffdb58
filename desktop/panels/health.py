"""Health panel: latency percentiles, store size and counts, model, vector backend,
the IPC endpoint and requests served, alerts, and the audit log.

Status, metrics and audit are read together on a pool worker when the engine
announces a change that moves them (a build, sources changed, a job ended, an
alert raised or cleared, the model loaded), coalesced, and on Refresh. Some
figures change without any event (a search or a status call from another
process adds an audit row and a request; the store's size grows with its
write-ahead log; uptime): a slow timer reads those while the panel is shown.
Alerts come from the host's ``alert`` signal and its list of active engine alerts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from desktop.messages import (
    CHOICE_NAMES,
    audit_name,
    describe,
    error_text,
    in_user_words,
    sentence_case,
)
from desktop.notices import Notice
from desktop.qt import (
    QAbstractItemView,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    Qt,
    QTimer,
    QVBoxLayout,
    QWidget,
)
from desktop.widgets import (
    Banner,
    cell,
    fmt_bytes,
    fmt_duration,
    fmt_int,
    fmt_ms,
    fmt_time,
    heading,
    make_table,
)
from engine import AuditEntry, JobSnapshot, MetricsSnapshot, Status, Warming
from ipc.status_text import adapt_line, memory_line, waiting_line

BUILD_MS = "context_engine.build.duration_ms"
QUERY_MS = "context_engine.rag_query.duration_ms"
ALERT_NAMES = {"context_engine.vector_db.unavailable": "Vector store unavailable",
               "context_engine.ingestion.failed": "Ingestion failed",
               "context_engine.vault.damaged": "Vault damaged",
               "context_engine.vector_db.incomplete": "Vectors incomplete",
               "context_engine.vector_db.rebuilding": "Vectors being rebuilt"}
VERBATIM = ("Data folder", "Model", "Endpoint", "Chroma server")  # names, shown as they are
STATE_WORDS = {"starting": "The store is opening.", "opening": "The store is opening.",
               "loading": "The embedding model is loading.", "locked": "The store is locked.",
               "needs_setup": "ctx is not set up yet.", "stopping": "The store is closing.",
               "stopped": "The store is closed."}
# Figures no event announces (requests and audit rows of other processes' searches, the
# store's size, uptime) are read this often while the panel is shown; the rest on events.
SLOW_REFRESH_MS = 30_000
EVENT_SETTLE_MS = 300  # events close together make one read


@dataclass(frozen=True)
class Health:
    """Everything the panel shows, read in one trip."""

    status: Status
    metrics: MetricsSnapshot
    audit: list[AuditEntry]


def snapshot(engine: Any) -> Health:
    """Worker: everything the panel shows, in one trip."""
    return Health(engine.status(), engine.metrics(), engine.audit(limit=200))


class HealthPanel(QWidget):
    def __init__(self, host: Any, parent: QWidget | None = None, *,
                 refresh_ms: int = SLOW_REFRESH_MS) -> None:
        super().__init__(parent)
        self.host = host
        self.data: Health | None = None
        self.alerts: list[tuple[float, Notice]] = []  # (when, notice), newest first
        self._busy = False
        self._stale = False
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.clicked.connect(self.refresh)
        self.updated = QLabel("")
        self.banner = Banner(self)
        top = QHBoxLayout()
        top.addWidget(heading("Health"))
        top.addWidget(self.banner, 1)  # messages beside the title: no band of their own
        top.addWidget(self.updated)
        top.addWidget(self.refresh_button)

        self.fields: dict[str, QLabel] = {}
        store = self._group("Store", ["Data folder", "Size on disk", "Sources", "Chunks",
                                      "Tokens", "Vectors", "Last backup",
                                      "Learned from your sessions"])
        model = self._group("Model and vectors", ["Model", "Dimensions", "Model loaded",
                                                  "Vector backend", "Vector store",
                                                  "Vectors in memory", "Chroma server"])
        ipc = self._group("IPC", ["Endpoint", "Requests served", "In flight", "Up for"])
        self.latency = make_table(["Latency", "Count", "Median", "P95", "P99", "Slowest"],
                                  stretch=0)
        self.latency.setRowCount(2)
        self.latency.setFixedHeight(self.latency.horizontalHeader().sizeHint().height()
                                    + 2 * self.latency.verticalHeader().defaultSectionSize()
                                    + 2 * self.latency.frameWidth() + 2)
        # Alerts wrap (never a sideways scroll), take the room they need, and can be
        # dismissed one by one: a dismissed alert comes back only when raised again.
        self.alert_list = QListWidget()
        self.alert_list.setWordWrap(True)
        self.alert_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.alert_list.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.alert_list.setMinimumHeight(self.alert_list.fontMetrics().lineSpacing() * 4)
        self.alert_list.itemSelectionChanged.connect(self._alert_selected)
        self.dismiss = QPushButton("Dismiss")
        self.dismiss.setToolTip("Hide the selected alert; it comes back if it happens again")
        self.dismiss.setEnabled(False)
        self.dismiss.clicked.connect(self.dismiss_selected)
        self._dismissed: set[tuple[str, float]] = set()  # engine alerts: (name, since)
        self.audit = make_table(["Time", "Operation", "Caller pid", "Ids", "Counts"], stretch=4)
        self.audit.setWordWrap(True)  # counts wrap onto a second line rather than being cut
        self.audit.verticalHeader().setSectionResizeMode(
            QHeaderView.ResizeMode.ResizeToContents)

        left = QVBoxLayout()
        left.addWidget(store)
        left.addWidget(model)
        left.addWidget(ipc)
        left.addStretch(1)
        right = QVBoxLayout()
        alerts_head = QHBoxLayout()
        alerts_head.addWidget(heading("Alerts"))
        alerts_head.addStretch(1)
        alerts_head.addWidget(self.dismiss)
        right.addLayout(alerts_head)
        right.addWidget(self.alert_list, 1)
        right.addWidget(heading("Latency (engine, last 2048 calls)"))
        right.addWidget(self.latency)
        right.addWidget(heading("Audit log (ids and counts only)"))
        right.addWidget(self.audit, 2)
        body = QHBoxLayout()
        body.addLayout(left, 2)
        body.addLayout(right, 3)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addLayout(body, 1)

        self.timer = QTimer(self)
        self.timer.setInterval(refresh_ms)
        self.timer.timeout.connect(self.refresh)
        self._settle = QTimer(self)
        self._settle.setSingleShot(True)
        self._settle.setInterval(EVENT_SETTLE_MS)
        self._settle.timeout.connect(self.refresh)
        host.ready.connect(self.refresh)
        host.alert.connect(self.add_alert)
        host.alert_cleared.connect(lambda _name: self._changed())
        host.build_finished.connect(lambda _build: self._changed())
        host.sources_changed.connect(self._changed)
        host.job_progress.connect(self._job_moved)
        host.warming.connect(self._warmed)
        host.state_changed.connect(lambda _state: self._draw_alerts())
        self._draw_alerts()
        if getattr(host, "engine_ready", False):
            self.refresh()

    def _group(self, title: str, names: list[str]) -> QGroupBox:
        box = QGroupBox(title)
        form = QFormLayout(box)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft)
        for name in names:
            value = QLabel("—")
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            value.setWordWrap(True)
            self.fields[name] = value
            form.addRow(name, value)
        return box

    # -- refresh -------------------------------------------------------------------------
    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        self.timer.start()
        self._stale = False
        self.refresh()

    def hideEvent(self, event: Any) -> None:
        super().hideEvent(event)
        self.timer.stop()

    def _changed(self, *_: Any) -> None:
        """An event moved what the panel shows: read it again once events settle."""
        if self.isVisible():
            self._settle.start()
        else:
            self._stale = True

    def _job_moved(self, job: JobSnapshot) -> None:
        if job.final:
            self._changed()

    def _warmed(self, event: Warming) -> None:
        if event.done:
            self._changed()

    def refresh(self) -> None:
        if self._busy or not getattr(self.host, "engine_open", False):
            return
        self._busy = True
        self.host.run(snapshot, success=self._loaded, failure=self._failed)

    def _failed(self, error: BaseException) -> None:
        self._busy = False
        self.banner.show_message("error", "Health could not be read: " + error_text(error))

    def _loaded(self, data: Health) -> None:
        self._busy = False
        self.banner.clear_message()
        self.data = data
        status, metrics = data.status, data.metrics
        f = self.fields
        f["Data folder"].setText(status.data_dir)
        f["Size on disk"].setText(fmt_bytes(status.store_bytes))
        f["Sources"].setText(fmt_int(status.sources))
        f["Chunks"].setText(fmt_int(status.chunks))
        f["Tokens"].setText(fmt_int(status.tokens))
        f["Vectors"].setText(vectors_label(status))
        f["Vectors"].setToolTip(waiting_line(status) if status.sources_waiting else "")
        f["Last backup"].setText(fmt_time(status.last_backup) if status.last_backup else "never")
        f["Learned from your sessions"].setText(adapt_line(status))
        f["Model"].setText(status.model)
        f["Dimensions"].setText(fmt_int(status.dim))
        f["Model loaded"].setText(model_loaded_label(status))
        backend = status.vector_backend
        f["Vector backend"].setText(CHOICE_NAMES.get(backend, backend))
        f["Vector store"].setText("available" if status.vector_store_ok
                                  else "UNAVAILABLE: searches use keywords only")
        f["Vectors in memory"].setText(memory_line(status.vectors_in_memory))
        config = getattr(self.host, "config", None)
        url = getattr(getattr(config, "store", None), "chroma_url", "")
        f["Chroma server"].setText(url if backend == "http" else
                                   "— (embedded store)" if backend == "embedded" else "—")
        self._draw_ipc()
        hist = metrics.histograms
        for row, (label, name) in enumerate((("Build context", BUILD_MS),
                                             ("Query (search)", QUERY_MS))):
            h = hist.get(name)
            count = h.count if h else 0
            self.latency.setItem(row, 0, cell(label))
            self.latency.setItem(row, 1, cell(fmt_int(count), number=count))
            values = (h.p50, h.p95, h.p99, h.max) if h and count else (None,) * 4
            for col, value in enumerate(values, start=2):
                self.latency.setItem(row, col, cell(fmt_ms(value), number=value or 0))
        self._draw_audit(data.audit)
        self._draw_alerts()
        self.updated.setText("Updated " + time.strftime("%H:%M:%S"))

    def _draw_ipc(self) -> None:
        stats = self.host.server_stats() if hasattr(self.host, "server_stats") else {}
        f = self.fields
        endpoint = getattr(self.host, "ipc_info", None) or stats.get("endpoint")
        f["Endpoint"].setText(str(endpoint) if endpoint else "not serving")
        running = bool(stats.get("running"))
        f["Requests served"].setText(fmt_int(stats.get("requests_served", 0)) if running
                                     else "—")
        f["In flight"].setText(fmt_int(stats.get("in_flight", 0)) if running else "—")
        f["Up for"].setText(fmt_duration(stats.get("uptime_s")) if running else "—")
        self._sentence_case()

    def _sentence_case(self) -> None:
        """Values in words start upper-case ("Never", "Available"); names kept as they are
        (a folder, a model, an endpoint, a URL)."""
        for name, label in self.fields.items():
            if name not in VERBATIM:
                label.setText(sentence_case(label.text()))

    def _draw_audit(self, rows: list[AuditEntry]) -> None:
        table = self.audit
        table.setRowCount(len(rows))
        for r, entry in enumerate(sorted(rows, key=lambda e: e.time, reverse=True)):
            ids, counts = list(entry.ids), entry.counts
            table.setItem(r, 0, cell(fmt_time(entry.time, with_date=False), number=entry.time,
                                     tip=fmt_time(entry.time)))
            table.setItem(r, 1, cell(audit_name(entry.method)))
            pid = entry.caller_pid
            table.setItem(r, 2, cell("—" if pid is None else str(pid), number=pid or 0))
            table.setItem(r, 3, cell(fmt_int(len(ids)), number=len(ids), tip=", ".join(ids[:20])))
            text = counts_text(counts)
            table.setItem(r, 4, cell(text, tip=text))

    # -- alerts ----------------------------------------------------------------------------
    def add_alert(self, notice: Notice) -> None:
        self.alerts.insert(0, (time.time(), notice))
        del self.alerts[50:]
        self._draw_alerts()

    def active_alerts(self) -> list[str]:
        """Lines for the alert list: engine alerts still active, then notices, newest first."""
        return [line for line, _key in self._alert_lines()]

    def _alert_lines(self) -> list[tuple[str, Any]]:
        """(line, what dismisses it): engine alerts still active and not dismissed since
        they were raised, then notices, newest first."""
        lines: list[tuple[str, Any]] = []
        active = getattr(self.host, "active_alerts", {})
        for name, info in active.items():
            if (name, info.since) in self._dismissed:
                continue
            lines.append((f"{ALERT_NAMES.get(name, 'Needs attention')}, ongoing since "
                          f"{fmt_time(info.since)}"
                          + (f": {in_user_words(info.detail)}" if info.detail else ""),
                          ("alert", name, info.since)))
        for when, notice in self.alerts:
            lines.append((f"{fmt_time(when, with_date=False)} · {notice.message}",
                          ("notice", when, notice)))
        return lines

    def _draw_alerts(self) -> None:
        self.alert_list.clear()
        lines = self._alert_lines()
        state = getattr(self.host, "state", "")
        if state and state not in ("ready",):
            error = getattr(self.host, "open_error", None) if state == "error" else None
            lines.insert(0, (STATE_WORDS.get(state, "The store is not open.")
                             if error is None else describe("open", error), None))
        if not lines:
            lines = [("No alerts. Everything is working.", None)]
        for text, key in lines:
            item = QListWidgetItem(text)
            item.setData(Qt.ItemDataRole.UserRole, key)
            self.alert_list.addItem(item)
        self._alert_selected()

    def _alert_selected(self) -> None:
        item = self.alert_list.currentItem()
        self.dismiss.setEnabled(item is not None and item.isSelected()
                                and item.data(Qt.ItemDataRole.UserRole) is not None)

    def dismiss_selected(self) -> None:
        """Hide the selected alert (an engine alert until it is raised again)."""
        item = self.alert_list.currentItem()
        key = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
        if key is None:
            return
        if key[0] == "alert":
            self._dismissed.add((key[1], key[2]))
        else:
            self.alerts = [(w, n) for w, n in self.alerts if (w, n) != (key[1], key[2])]
        self._draw_alerts()


def counts_text(counts: Any) -> str:
    """An audit record's counts, short: "budget 900 · items 5 · tokens 880 · 46 ms"."""
    parts = []
    for key, value in sorted(counts.items()):
        if key == "ok":
            continue
        if key == "duration_ms":
            parts.append(f"{value} ms")
        else:
            parts.append(f"{key.replace('total_tokens', 'tokens')} {value:,}"
                         if isinstance(value, int) else f"{key} {value}")
    return " · ".join(parts)


def vectors_label(status: Status) -> str:
    """The vector count, with the chunks still waiting for theirs (a paused or running
    job's vector stage): fewer vectors than chunks is then no fault."""
    n = fmt_int(status.vectors)
    c = status.chunks_waiting
    if not c:
        return n
    return f"{n} (1 chunk waits for its vector)" if c == 1 else \
        f"{n} ({fmt_int(c)} chunks wait for theirs)"


def model_loaded_label(status: Status) -> str:
    """"yes (onnx, int8 documents)", "yes", "loading…": whether the model is loaded,
    on which runtime, and which texts its int8 model embeds (``ctx status``'s fields)."""
    if not status.model_loaded:
        return "loading…"
    runtime = status.model_backend
    if not runtime:
        return "yes"
    int8 = [part for part, precision in (("documents", status.model_document_precision),
                                         ("queries", status.model_query_precision))
            if precision == "int8"]
    return f"yes ({runtime}, int8 {' and '.join(int8)})" if int8 else f"yes ({runtime})"
