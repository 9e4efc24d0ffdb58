"""The typed fields of the Settings panel: one editor per config key, grouped.

Ranges here are wide on purpose: the config itself decides what is valid, so
an out-of-range value reaches ``engine.load_config`` and its message is shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from desktop.qt import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLineEdit,
    QSpinBox,
    QWidget,
)


@dataclass(frozen=True)
class Field:
    key: str  # dotted config key
    label: str
    kind: str  # "int" | "float" | "choice" | "text"
    group: str
    choices: tuple[str, ...] = ()
    lo: float = 0
    hi: float = 1_000_000
    step: float = 1
    tip: str = ""


FIELDS: tuple[Field, ...] = (
    Field("desktop.default_budget", "Budget in Retrieved items", "int", "Budgets", step=100,
          tip="The token budget the Retrieved items panel starts with"),
    Field("recall.auto_budget", "Recall --auto budget", "int", "Budgets", step=500,
          tip="Tokens for `ctx recall --auto` and the coding-agent hook"),
    Field("packing.expansion_max_tokens", "Expanded top hit, max tokens", "int", "Budgets",
          step=50),
    Field("packing.max_item_tokens", "Any other item, max tokens", "int", "Budgets", step=50),
    Field("packing.live_max_share", "Live items' share of the budget", "float", "Budgets",
          lo=-1, hi=2, step=0.05),
    Field("packing.mode", "Packing mode", "choice", "Packing", ("fast", "dense_cached"),
          tip="fast: stored text; dense_cached: summaries by tier where they fit"),
    Field("tiers.mode", "Tier policy", "choice", "Tier policy",
          ("disabled", "age_only", "importance")),
    Field("tiers.recent_days", "Full text up to (days old)", "float", "Tier policy",
          lo=-1, hi=100_000, step=1),
    Field("tiers.old_days", "Micro summary from (days old)", "float", "Tier policy",
          lo=-1, hi=100_000, step=1),
    Field("tiers.full", "Importance for full text", "float", "Tier policy", lo=-1, hi=10,
          step=0.05),
    Field("tiers.gist", "Importance for a gist", "float", "Tier policy", lo=-1, hi=10,
          step=0.05),
    Field("tiers.query_boost", "Boost when the query matches", "float", "Tier policy",
          lo=-1, hi=10, step=0.05),
    Field("store.vector_backend", "Vector backend", "choice", "Vector store",
          ("memory", "embedded", "http"), tip="memory (the default): vectors in memory, "
          "sealed with your key on disk; embedded: Chroma in the data folder (rotated vectors "
          "in the clear: see the threat model); http: a Chroma server"),
    Field("store.chroma_url", "Chroma server URL", "text", "Vector store",
          tip="Used when the backend is http, e.g. http://127.0.0.1:8000"),
)
GROUPS = ("Budgets", "Packing", "Tier policy", "Vector store")


def lookup(config: Any, key: str) -> Any:
    node = config
    for part in key.split("."):
        node = getattr(node, part)
    return node


class SettingsForm:
    """Editors for :data:`FIELDS` in group boxes (``boxes``, placed by the panel);
    ``values()`` by dotted key."""

    def __init__(self) -> None:
        self.editors: dict[str, QWidget] = {}
        self.boxes: dict[str, QGroupBox] = {}
        for group in GROUPS:
            box = QGroupBox(group)
            form = QFormLayout(box)
            for field in (f for f in FIELDS if f.group == group):
                editor = self._editor(field)
                if field.tip:
                    editor.setToolTip(field.tip)
                editor.setMaximumWidth(460 if field.kind == "text" else 260)
                self.editors[field.key] = editor
                form.addRow(field.label, editor)
            self.boxes[group] = box
        backend = self.editors["store.vector_backend"]
        assert isinstance(backend, QComboBox)
        backend.currentTextChanged.connect(self._backend_changed)

    @staticmethod
    def _editor(field: Field) -> QWidget:
        if field.kind == "int":
            spin = QSpinBox()
            spin.setRange(int(field.lo), int(field.hi))
            spin.setSingleStep(int(field.step))
            spin.setGroupSeparatorShown(True)
            return spin
        if field.kind == "float":
            dspin = QDoubleSpinBox()
            dspin.setDecimals(2)
            dspin.setRange(field.lo, field.hi)
            dspin.setSingleStep(field.step)
            return dspin
        if field.kind == "choice":
            combo = QComboBox()
            combo.addItems(list(field.choices))
            return combo
        line = QLineEdit()
        line.setMinimumWidth(280)
        return line

    def _backend_changed(self, backend: str) -> None:
        self.editors["store.chroma_url"].setEnabled(backend == "http")

    def values_from(self, config: Any) -> dict[str, Any]:
        """The fields' values in a typed Config (desktop.* fields are left out)."""
        return {f.key: lookup(config, f.key) for f in FIELDS if not f.key.startswith("desktop.")}

    def set_values(self, values: dict[str, Any]) -> None:
        for key, value in values.items():
            editor = self.editors.get(key)
            if isinstance(editor, (QSpinBox, QDoubleSpinBox)) and (
                    isinstance(value, bool) or not isinstance(value, (int, float))):
                continue  # a value of the wrong type (a hand-edited file): the default stays
            if isinstance(editor, QSpinBox):
                editor.setValue(int(value))
            elif isinstance(editor, QDoubleSpinBox):
                editor.setValue(float(value))
            elif isinstance(editor, QComboBox):
                editor.setCurrentText(str(value))
            elif isinstance(editor, QLineEdit):
                editor.setText(str(value))
        self._backend_changed(str(values.get("store.vector_backend", "memory")))

    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, editor in self.editors.items():
            if isinstance(editor, QSpinBox):
                out[key] = editor.value()
            elif isinstance(editor, QDoubleSpinBox):
                out[key] = round(editor.value(), 4)
            elif isinstance(editor, QComboBox):
                out[key] = editor.currentText()
            elif isinstance(editor, QLineEdit):
                out[key] = editor.text().strip()
        return out
