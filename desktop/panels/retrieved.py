"""Retrieved items panel: ask the engine as a caller would and see what it would send.

A query, a budget, a packing mode and optional live-context text go to
``build_context`` on a pool worker. The items come back listed best first (by
score), each with a word on why it is there ("best match, with its
surroundings", "summary (gist)"), where it is (the file relative to the folder
it was ingested from, with its lines, when the engine says), kind, tokens,
lanes and tier; the selected item's block is previewed; the exact payload is
shown with its token count (recounted with cl100k) and can be copied. While a
build runs, the previous results are cleared, not left under "Building...".
The engine announces the build (BuildDone) to the Budget panel itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from desktop import config_io
from desktop.messages import CHOICE_NAMES, LIVE_KIND_NAMES, error_text, item_kind, stage_name
from desktop.panels.item_blocks import item_blocks
from desktop.panels.table_model import Column, RowsModel, fit_columns, make_view, selected_row
from desktop.qt import (
    QComboBox,
    QGroupBox,
    QGuiApplication,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    Qt,
    QVBoxLayout,
    QWidget,
)
from desktop.widgets import (
    Banner,
    fmt_int,
    fmt_ms,
    heading,
    monospace,
    muted,
)
from engine import CtxError, Payload, PayloadItem, TokenCounter

MODES = ("fast", "dense_cached")
LIVE_KINDS = ("selection", "clipboard", "active_file", "browser_tab", "terminal", "window",
              "other")
# Columns with a most width in px (Source, Lanes): longer text is elided at its end
# and whole in its tooltip, so Why keeps room and nothing needs a horizontal scroll.
CAPPED = {1: 170, 6: 120}
COLUMNS = ["#", "Source", "Why", "Score", "Tokens", "Kind", "Lanes", "Tier", "Stage"]
# The packer's and the lanes' reasons (PayloadItem.why, "|"-joined), in words.
WHY_WORDS = {
    "top_hit_expanded": "best match, with its surroundings", "top_hit": "best match",
    "snippet": "ranked match", "surrogate": "summary", "live": "live context",
    "conversation": "the conversation so far", "cut": "cut to fit",
    # every ranked match has passed the reranker ("rerank"): said on each row it sets
    # none apart (issue 33: 20); its rank is in Score and Lanes
    "rerank": "", "neighbour": "next to a match",
    "recent": "recent session", "related": "related session", "failures": "a failure",
}


def lanes_text(lanes: Mapping[str, int]) -> str:
    return ", ".join(f"{name} #{rank}" for name, rank in sorted(lanes.items(), key=lambda x: x[1]))


# The lanes that found an item, in words: what differs between two "ranked match" rows
# (their ranks are in the Lanes column).
LANE_WORDS = {"keyword": "words", "vector": "meaning", "learned": "your own words",
              "recency": "recency"}
LANE_ORDER = ("keyword", "learned", "vector", "recency")


def found_by(lanes: Mapping[str, int]) -> str:
    """"words and meaning": what the query matched the item on."""
    names = sorted(lanes, key=lambda n: LANE_ORDER.index(n) if n in LANE_ORDER else 9)
    parts = [LANE_WORDS.get(name, name.replace("_", " ")) for name in names]
    if not parts:
        return ""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def why_text(item: PayloadItem) -> str:
    """``item.why`` in words, with what sets this row apart: "Matched on words and
    meaning", "Matched on meaning"; "Best match, with its surroundings; cut to fit"."""
    words: list[str] = []
    for part in item.why.split("|"):
        word = WHY_WORDS.get(part, part.replace("_", " "))
        if part == "surrogate" and item.tier:
            word = f"summary ({item.tier})"
        if part == "snippet" and item.lanes:
            word = f"matched on {found_by(item.lanes)}"
        if word and word not in words:
            words.append(word)
    text = "; ".join(words)
    return text[:1].upper() + text[1:]


def where_text(item: PayloadItem) -> str:
    """Where the item is: the file relative to the folder it was ingested from, with its
    lines ("notes/tides.md:12-40"), when the engine gives them; else its title or source."""
    path = str(getattr(item, "path", "") or "")  # PayloadItem.path/.lines: newer engines
    lines = getattr(item, "lines", None)
    if path:
        return f"{path}:{lines[0]}-{lines[1]}" if lines else path
    return item.title or item.source


def _tip(item: PayloadItem) -> str:
    root = getattr(item, "root", None)
    return item.source + (f"\ningested from {root}" if root else "")


# A row is (rank, item): rank 1 is the best.
ITEM_COLUMNS = (
    Column("#", lambda r: str(r[0]), key=lambda r: r[0], number=True),
    Column("Source", lambda r: where_text(r[1]), tip=lambda r: _tip(r[1])),
    Column("Why", lambda r: why_text(r[1]), tip=lambda r: why_text(r[1])),
    Column("Score", lambda r: f"{r[1].score:.3f}", key=lambda r: r[1].score, number=True),
    Column("Tokens", lambda r: fmt_int(r[1].tokens), key=lambda r: r[1].tokens, number=True),
    Column("Kind", lambda r: item_kind(r[1].kind)),
    Column("Lanes", lambda r: lanes_text(r[1].lanes) or "—",
           tip=lambda r: lanes_text(r[1].lanes) or "—"),
    Column("Tier", lambda r: r[1].tier or "—"),
    Column("Stage", lambda r: stage_name(r[1].stage) if r[1].stage else "—",
           tip=lambda r: stage_name(r[1].stage, short=False) if r[1].stage else ""),
)


def ranked(items: tuple[PayloadItem, ...]) -> list[int]:
    """The items' indexes, best first (score, then their order in the payload)."""
    return sorted(range(len(items)), key=lambda i: (-items[i].score, i))


class RetrievedPanel(QWidget):
    def __init__(self, host: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.payload: Payload | None = None
        self.items: tuple[PayloadItem, ...] = ()
        self.blocks: list[str] = []
        self.order: list[int] = []  # table row -> index in items (best first)
        self.recount: int | None = None

        self.query = QLineEdit()
        self.query.setPlaceholderText("Ask what a caller would ask, e.g. how do I rotate the keys?")
        self.query.returnPressed.connect(self.build)
        self.budget = QSpinBox()
        self.budget.setRange(1, 1_000_000)
        self.budget.setSingleStep(100)
        self.budget.setValue(config_io.DEFAULT_BUDGET)
        self.budget.setSuffix(" tokens")
        self.mode = QComboBox()
        for value in MODES:  # shown by name, sent by value
            self.mode.addItem(CHOICE_NAMES[value], value)
        self.mode.setToolTip("Fast: the stored text; Dense: summaries by tier where they fit")
        self.go = QPushButton("Build context")
        self.go.setDefault(True)
        self.go.clicked.connect(self.build)
        row = QHBoxLayout()
        row.addWidget(self.query, 1)
        row.addWidget(QLabel("Budget"))
        row.addWidget(self.budget)
        row.addWidget(QLabel("Mode"))
        row.addWidget(self.mode)
        row.addWidget(self.go)

        self.live_box = QGroupBox("Live context (optional)")
        self.live_box.setCheckable(True)
        self.live_box.setChecked(False)
        self.live_kind = QComboBox()
        for value in LIVE_KINDS:
            self.live_kind.addItem(LIVE_KIND_NAMES[value], value)
        self.live_text = QPlainTextEdit()
        self.live_text.setPlaceholderText("Text the caller sees right now (a selection, a file…)")
        self.live_text.setMaximumHeight(70)
        live = QHBoxLayout(self.live_box)
        live.addWidget(self.live_kind)
        live.addWidget(self.live_text, 1)

        self.banner = Banner(self)
        # Why takes the width left; Source and Lanes are capped (CAPPED).
        self.model = RowsModel(ITEM_COLUMNS, key=lambda r: r[0], parent=self)
        self.table = make_view(self.model, stretch=2)
        self.table.horizontalHeader().setMinimumSectionSize(24)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.table.selectionModel().selectionChanged.connect(self._preview)
        self.preview = QPlainTextEdit()
        self.preview.setReadOnly(True)
        self.preview.setFont(monospace())
        self.preview.setPlaceholderText("Select an item to see its block of the payload.")
        self.tokens = QLabel("")
        self.copy = QPushButton("Copy payload")
        self.copy.setEnabled(False)
        self.copy.clicked.connect(self.copy_payload)
        self.payload_text = QPlainTextEdit()
        self.payload_text.setReadOnly(True)
        self.payload_text.setFont(monospace())
        self.payload_text.setPlaceholderText("The exact text a caller would receive appears here.")

        upper = QSplitter(Qt.Orientation.Horizontal)
        left = QWidget()
        lbox = QVBoxLayout(left)
        lbox.setContentsMargins(0, 0, 0, 0)
        ranked_head = QHBoxLayout()
        ranked_head.addWidget(heading("Ranked items"))
        ranked_head.addWidget(self.banner, 1)  # messages beside the title: no band of their own
        lbox.addLayout(ranked_head)
        lbox.addWidget(self.table)
        right = QWidget()
        rbox = QVBoxLayout(right)
        rbox.setContentsMargins(0, 0, 0, 0)
        rbox.addWidget(heading("Selected item"))
        rbox.addWidget(self.preview)
        upper.addWidget(left)
        upper.addWidget(right)
        upper.setStretchFactor(0, 3)  # the ranked table's columns need the room: Why whole
        upper.setStretchFactor(1, 1)
        lower = QWidget()
        low = QVBoxLayout(lower)
        low.setContentsMargins(0, 0, 0, 0)
        head = QHBoxLayout()
        head.addWidget(heading("Payload as sent"))
        head.addWidget(self.tokens, 1)
        head.addWidget(self.copy)
        low.addLayout(head)
        low.addWidget(self.payload_text)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(upper)
        split.addWidget(lower)

        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.live_box)
        layout.addWidget(split, 1)
        self.hint = muted("")
        layout.addWidget(self.hint)
        self._set_ready(bool(getattr(host, "engine_open", False)))
        host.ready.connect(lambda: self._set_ready(True))
        host.ready.connect(self._load_defaults)
        host.config_changed.connect(self._load_defaults)
        if getattr(host, "engine_ready", False):
            self._load_defaults()

    def _set_ready(self, ready: bool) -> None:
        self.go.setEnabled(ready)
        self.hint.setText("" if ready else "The store is opening…")
        self.hint.setVisible(not ready)

    def _load_defaults(self) -> None:
        try:
            settings = config_io.read(self.host.data_dir)
        except CtxError:
            return  # the Settings panel shows what is wrong with config.toml
        self.budget.setValue(settings.desktop.default_budget)
        self.mode.setCurrentIndex(max(0, self.mode.findData(settings.engine.packing.mode)))

    # -- build ---------------------------------------------------------------------------
    def live_items(self) -> list[dict[str, Any]]:
        text = self.live_text.toPlainText()
        if not self.live_box.isChecked() or not text.strip():
            return []
        return [{"kind": str(self.live_kind.currentData()), "source": "ctx window",
                 "title": "typed in the Retrieved items panel", "text": text}]

    def build(self) -> None:
        query, budget, mode, live = (self.query.text(), self.budget.value(),
                                     str(self.mode.currentData()), self.live_items())

        def work(engine: Any) -> tuple[Payload, int]:
            payload = engine.build_context(query, live=live or None, budget=budget, mode=mode)
            return payload, TokenCounter.shared().count(payload.context)

        self.go.setEnabled(False)
        self._clear_results()
        self.banner.show_message("info", "Building…")
        self.host.run(work, success=self._built, failure=self._failed)

    def _clear_results(self) -> None:
        self.payload, self.items, self.blocks, self.order = None, (), [], []
        self.model.set_rows([])
        self.preview.clear()
        self.payload_text.clear()
        self.tokens.setText("")
        self.copy.setEnabled(False)

    def _failed(self, error: BaseException) -> None:
        self.go.setEnabled(True)
        self.banner.show_message("error", "Nothing was built: " + error_text(error))

    def _built(self, built: tuple[Payload, int]) -> None:
        self.go.setEnabled(True)
        payload, self.recount = built
        self.payload = payload
        self.items = payload.items
        self.blocks = item_blocks(payload.context, self.items)
        self.order = ranked(self.items)
        table = self.table
        self.model.set_rows([(row + 1, self.items[i]) for row, i in enumerate(self.order)])
        fit_columns(table, [c for c in range(len(ITEM_COLUMNS)) if c != 2], most=CAPPED)
        context = payload.context
        self.payload_text.setPlainText(context)
        total, budget = payload.total_tokens, payload.budget
        exact = "exact" if self.recount == total else f"recounted {fmt_int(self.recount)}"
        self.tokens.setText(f"{fmt_int(total)} of {fmt_int(budget)} tokens "
                            f"({exact}, cl100k) · {len(self.items)} items · "
                            f"{fmt_ms(payload.timings.get('total'))}")
        self.copy.setEnabled(bool(context))
        if self.items:
            self.banner.clear_message()
            table.selectRow(0)
        else:
            self.banner.show_message("info", "Nothing in the store matched this query.")
            self.preview.clear()

    def rows(self) -> int:
        return self.model.rowCount()

    def text(self, row: int, column: int) -> str:
        """The text of a cell of the ranked table."""
        return self.model.text(row, column)

    def tip(self, row: int, column: int) -> str:
        return str(self.model.data(self.model.index(row, column),
                                   Qt.ItemDataRole.ToolTipRole) or "")

    def _preview(self, *_: Any) -> None:
        row = selected_row(self.table)
        if row is None or row >= len(self.items):
            self.preview.clear()
            return
        i = self.order[self.model.row(row)[0] - 1]
        item = self.items[i]
        block = self.blocks[i] if i < len(self.blocks) else ""
        meta = (f"{item.kind} · {fmt_int(item.tokens)} tokens · "
                f"score {item.score:.3f} · {why_text(item)}\n{where_text(item)}\n\n")
        self.preview.setPlainText(meta + (block or "(this item's block could not be located "
                                          "in the payload's format)"))

    def copy_payload(self) -> None:
        if self.payload is None:
            return
        QGuiApplication.clipboard().setText(self.payload.context)
        self.banner.show_message("ok", "Payload copied to the clipboard "
                                 f"({fmt_int(self.payload.total_tokens)} tokens).")
