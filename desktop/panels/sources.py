"""Sources panel: every stored source with kind, chunks, tokens and when it was ingested;
a filter box; delete (after a confirmation) and re-ingest. A coding session is one row
however many syncs stored it, as the engine lists it (``SourceInfo.segments``), and its
delete removes all of it.

The list is read on a pool worker whenever the host says sources changed (one read
at a time: changes that come meanwhile make one more read after it). The table is a
model (``desktop.panels.table_model``): a keystroke in the filter or a new list is
one model reset, and the view draws only the rows in sight; column widths are set
once, never re-measured per row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from desktop.messages import error_text, item_kind, plural, stage_name
from desktop.panels.table_model import Column, RowsModel, fit_columns, make_view, selected_row
from desktop.qt import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    Qt,
    QVBoxLayout,
    QWidget,
)
from desktop.widgets import Banner, fmt_int, fmt_time, muted
from engine import DeleteResult, SourceInfo

LOCATION_WIDTH = 300  # px: the Location column's start width (it can be dragged wider)
INGESTED = 5  # the column sorted by at first (newest first)
SOURCE_COLUMNS = (
    Column("Title", lambda s: s.title or s.uri, tip=lambda s: s.uri),
    Column("Kind", lambda s: item_kind(s.kind)),
    Column("Stage", lambda s: stage_name(s.stage),  # found by keywords only until vectors
           tip=lambda s: stage_name(s.stage, short=False)),
    Column("Chunks", lambda s: fmt_int(s.n_chunks), key=lambda s: s.n_chunks, number=True,
           tip=lambda s: parts_line(s)),
    Column("Tokens", lambda s: fmt_int(s.tokens), key=lambda s: s.tokens, number=True),
    Column("Ingested", lambda s: fmt_time(s.ingested_at), key=lambda s: s.ingested_at or 0,
           number=True),
    Column("Location", lambda s: s.uri, tip=lambda s: s.uri),
)
COLUMNS = [c.header for c in SOURCE_COLUMNS]


def parts_line(source: SourceInfo) -> str:
    """What a session's row sums up: its chunks from every sync that stored some ("" for
    a source stored at once)."""
    if source.segments <= 1:
        return ""
    return f"{plural(source.n_chunks, 'chunk')}, stored by {fmt_int(source.segments)} syncs"


def delete_question(source: SourceInfo) -> str:
    """The confirmation a delete asks: a coding session goes whole, every sync's part."""
    title = source.title or source.uri
    if source.kind == "transcript":
        parts = (f", stored by {fmt_int(source.segments)} syncs" if source.segments > 1
                 else "")
        return (f"Delete the session “{title}” and all its {fmt_int(source.n_chunks)} "
                f"chunks{parts} from the store? This cannot be undone; the transcript "
                "file on disk is not touched.")
    return (f"Delete “{title}” and its {fmt_int(source.n_chunks)} chunks from the "
            "store? This cannot be undone; the file on disk is not touched.")


def haystack(source: SourceInfo) -> str:
    return " ".join((source.title, source.kind, source.uri, source.project or ""))


def matches(source: SourceInfo, words: list[str]) -> bool:
    """True when every word of the filter is in the source's title, kind, uri or project."""
    hay = haystack(source).lower()
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
        self._loading = False  # a read of the list is under way
        self._again = False  # sources changed meanwhile: read once more after it
        # ``confirm(title, text) -> bool``; a dialog by default, replaceable in tests.
        self.confirm = confirm or self._ask
        self.banner = Banner(self)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter by title, kind, path or project")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._filtered)
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
        top.addWidget(self.banner, 1)  # messages beside the filter: no band of their own
        top.addWidget(self.count)
        top.addWidget(self.refresh)
        top.addWidget(self.reingest)
        top.addWidget(self.delete)
        self.model = RowsModel(SOURCE_COLUMNS, key=lambda s: s.id, haystack=haystack,
                               parent=self)
        # Titles get the room; a long path is cut in its middle (whole in its tooltip).
        self.table = make_view(self.model, stretch=0,
                               widths={len(COLUMNS) - 1: LOCATION_WIDTH})
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(INGESTED, Qt.SortOrder.DescendingOrder)  # newest first
        self._measured = False
        self.model.modelAboutToBeReset.connect(self._remember_selection)
        self.model.modelReset.connect(self._restore_selection)
        self._keep: int | None = None
        self.table.selectionModel().selectionChanged.connect(self._selection)
        self.empty = muted("No sources yet: ingest files or folders in the Ingestion panel.")
        layout = QVBoxLayout(self)
        layout.addLayout(top)
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
        if self._loading:  # one read at a time; the last change gets one more
            self._again = True
            return
        self._loading = True
        self.host.run(lambda engine: engine.sources(), success=self._loaded,
                      failure=self._failed)

    def _loaded(self, sources: list[SourceInfo]) -> None:
        self._loading = False
        self.sources = sorted(sources, key=lambda s: s.ingested_at or 0, reverse=True)
        self.model.set_rows(self.sources)
        if not self._measured and self.sources:  # once: a sample of rows, never per change
            self._measured = True
            fit_columns(self.table, range(1, len(COLUMNS) - 1))
        self._counted()
        if self._again:
            self._again = False
            self.reload()

    def _failed(self, error: BaseException) -> None:
        self._loading = False
        self.banner.show_message("error", error_text(error))

    def _filtered(self, text: str) -> None:
        self.model.set_filter(text)
        self._counted()

    def _counted(self) -> None:
        shown, total = self.model.rowCount(), len(self.sources)
        # a count says what it counts: "40 sources", "12 of 40 sources shown"
        self.count.setText(f"{shown:,} of {plural(total, 'source')} shown" if shown != total
                           else plural(total, "source"))
        self.empty.setVisible(total == 0)
        self._selection()

    def visible(self) -> list[SourceInfo]:
        """The sources in the table, in its order."""
        return self.model.visible()

    def rows(self) -> int:
        return self.model.rowCount()

    def text(self, row: int, column: int) -> str:
        """The text of a cell in the table (row in view order)."""
        return self.model.text(row, column)

    def _remember_selection(self) -> None:
        source = self.selected()
        self._keep = source.id if source is not None else None

    def _restore_selection(self) -> None:
        """The source selected before a new list stays selected; when it is gone (deleted),
        nothing is: the selection never moves on to a row the person did not choose."""
        if self._keep is None or self.model.view_row_of(self._keep) is None:
            self._clear_selection()
        else:
            self.select_id(self._keep)
        self._keep = None

    def _clear_selection(self) -> None:
        self.table.clearSelection()
        self.table.selectionModel().clearCurrentIndex()
        self._selection()

    def selected(self) -> SourceInfo | None:
        row = selected_row(self.table)
        if row is None or row >= self.model.rowCount():
            return None
        info: SourceInfo = self.model.row(row)
        return info

    def select_id(self, source_id: int) -> None:
        row = self.model.view_row_of(source_id)
        if row is not None:
            self.table.selectRow(row)

    def _selection(self, *_: Any) -> None:
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
        if not self.confirm("Delete source", delete_question(source)):
            return
        self._clear_selection()  # it is going: no row is chosen in its place
        sid = source.id
        self.host.run(lambda engine: engine.delete(sid),
                      success=lambda result: self._deleted(title, result),
                      failure=self._failed)

    def _deleted(self, title: str, result: DeleteResult) -> None:
        self.banner.show_message("ok", f"Deleted “{title}”.")
        self._clear_selection()
        self.reload()

    def _reingest(self) -> None:
        source = self.selected()
        if source is None or not reingestable(source):
            return
        self.host.ingest_paths([source.uri])
        self.banner.show_message("info", f"Re-ingesting {source.uri}: progress is in the "
                                 "Ingestion panel.")
