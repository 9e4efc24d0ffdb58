"""Sources panel: every stored source with kind, chunks, tokens and when it was ingested;
a filter box; delete (after a confirmation) and re-ingest.

The list is read on a pool worker whenever the host says sources changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from desktop.panels.widgets import Banner, cell, error_text, fmt_int, fmt_time, make_table, muted
from desktop.qt import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    Qt,
    QVBoxLayout,
    QWidget,
)
from engine import DeleteResult, SourceInfo

COLUMNS = ["Title", "Kind", "Chunks", "Tokens", "Ingested", "Location"]
LOCATION_WIDTH = 300  # px: the Location column's start width (it can be dragged wider)


def matches(source: SourceInfo, words: list[str]) -> bool:
    """True when every word of the filter is in the source's title, kind, uri or project."""
    hay = " ".join((source.title, source.kind, source.uri, source.project or "")).lower()
    return all(w in hay for w in words)


def reingestable(source: SourceInfo) -> bool:
    """A source read from a file that is still there can be ingested again."""
    uri = source.uri
    local = uri.startswith("/") or (len(uri) > 2 and uri[1] == ":")
    return local and Path(uri).exists()


class SourcesPanel(QWidget):
    def __init__(self, host: Any, parent: QWidget | None = None, *,
                 confirm: Any = None) -> None:
        super().__init__(parent)
        self.host = host
        self.sources: list[SourceInfo] = []
        # ``confirm(title, text) -> bool``; a dialog by default, replaceable in tests.
        self.confirm = confirm or self._ask
        self.banner = Banner(self)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter by title, kind, path or project")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._draw)
        self.count = QLabel("")
        self.reingest = QPushButton("Re-ingest")
        self.reingest.setToolTip("Read the selected file again (unchanged files are skipped)")
        self.delete = QPushButton("Delete…")
        self.delete.setToolTip("Remove the selected source and all its chunks from the store")
        self.refresh = QPushButton("Refresh")
        self.reingest.clicked.connect(self._reingest)
        self.delete.clicked.connect(self._delete)
        self.refresh.clicked.connect(self.reload)
        top = QHBoxLayout()
        top.addWidget(self.filter, 1)
        top.addWidget(self.count)
        top.addWidget(self.refresh)
        top.addWidget(self.reingest)
        top.addWidget(self.delete)
        self.table = make_table(COLUMNS, stretch=0)
        # Titles get the room; a long path is cut in its middle (whole in its tooltip).
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(len(COLUMNS) - 1, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(len(COLUMNS) - 1, LOCATION_WIDTH)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(4, Qt.SortOrder.DescendingOrder)  # newest first
        self.table.itemSelectionChanged.connect(self._selection)
        self.empty = muted("No sources yet: ingest files or folders in the Ingestion panel.")
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.banner)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.empty)
        self._selection()
        host.sources_changed.connect(self.reload)
        host.ready.connect(self.reload)
        if getattr(host, "engine_ready", False):
            self.reload()

    # -- data ----------------------------------------------------------------------------
    def reload(self) -> None:
        if not getattr(self.host, "engine_ready", False):
            return
        self.host.run(lambda engine: engine.sources(), success=self._loaded,
                      failure=self._failed)

    def _loaded(self, sources: list[SourceInfo]) -> None:
        self.sources = sorted(sources, key=lambda s: s.ingested_at or 0, reverse=True)
        self._draw()

    def _failed(self, error: BaseException) -> None:
        self.banner.show_message("error", error_text(error))

    def visible(self) -> list[SourceInfo]:
        words = self.filter.text().lower().split()
        return [s for s in self.sources if matches(s, words)]

    def _draw(self) -> None:
        shown = self.visible()
        selected = self.selected()
        table = self.table
        table.setSortingEnabled(False)
        table.setRowCount(len(shown))
        for row, s in enumerate(shown):
            uri = s.uri
            table.setItem(row, 0, cell(s.title or uri, tip=uri, data=s.id))
            table.setItem(row, 1, cell(s.kind))
            table.setItem(row, 2, cell(fmt_int(s.n_chunks), number=s.n_chunks))
            table.setItem(row, 3, cell(fmt_int(s.tokens), number=s.tokens))
            table.setItem(row, 4, cell(fmt_time(s.ingested_at), number=s.ingested_at or 0))
            table.setItem(row, 5, cell(uri, tip=uri))
            if selected and s.id == selected.id:
                table.selectRow(row)
        table.setSortingEnabled(True)
        total = len(self.sources)
        self.count.setText(f"{len(shown)} of {total}" if len(shown) != total else f"{total}")
        self.empty.setVisible(total == 0)
        self._selection()

    def selected(self) -> SourceInfo | None:
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        if not rows:
            return None
        item = self.table.item(rows[0].row(), 0)
        sid = item.data(Qt.ItemDataRole.UserRole) if item else None
        return next((s for s in self.sources if s.id == sid), None)

    def select_id(self, source_id: int) -> None:
        for row in range(self.table.rowCount()):
            item = self.table.item(row, 0)
            if item and item.data(Qt.ItemDataRole.UserRole) == source_id:
                self.table.selectRow(row)
                return

    def _selection(self) -> None:
        source = self.selected()
        self.delete.setEnabled(source is not None)
        self.reingest.setEnabled(source is not None and reingestable(source))

    # -- actions ---------------------------------------------------------------------------
    def _ask(self, title: str, text: str) -> bool:
        answer = QMessageBox.question(self, title, text,
                                      QMessageBox.StandardButton.Yes
                                      | QMessageBox.StandardButton.Cancel,
                                      QMessageBox.StandardButton.Cancel)
        return answer == QMessageBox.StandardButton.Yes

    def _delete(self) -> None:
        source = self.selected()
        if source is None:
            return
        title = source.title or source.uri
        text = (f"Delete “{title}” and its {fmt_int(source.n_chunks)} chunks from the "
                "store? This cannot be undone; the file on disk is not touched.")
        if not self.confirm("Delete source", text):
            return
        self.delete.setEnabled(False)
        sid = source.id
        self.host.run(lambda engine: engine.delete(sid),
                      success=lambda result: self._deleted(title, result),
                      failure=self._failed)

    def _deleted(self, title: str, result: DeleteResult) -> None:
        self.banner.show_message("ok", f"Deleted “{title}”.")
        self.reload()

    def _reingest(self) -> None:
        source = self.selected()
        if source is None or not reingestable(source):
            return
        self.host.ingest_paths([source.uri])
        self.banner.show_message("info", f"Re-ingesting {source.uri}: progress is in the "
                                 "Ingestion panel.")
