"""The typed fields of the Settings panel: one editor per config key, grouped.

Ranges here are wide on purpose: the config itself decides what is valid, so
an out-of-range value reaches ``engine.load_config`` and its message is shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from desktop.messages import CHOICE_NAMES, SETTING_NAMES
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
    kind: str  # "int" | "float" | "choice" | "text"
    group: str
    choices: tuple[str, ...] = ()
    lo: float = 0
    hi: float = 1_000_000
    step: float = 1
    tip: str = ""

    @property
    def label(self) -> str:
        """Its name on screen, the one messages use too (desktop.messages)."""
        return SETTING_NAMES[self.key]


FIELDS: tuple[Field, ...] = (
    Field("desktop.default_budget", "int", "Budgets", step=100,
          tip="The token budget the Retrieved items panel starts with"),
    Field("recall.auto_budget", "int", "Budgets", step=500,
          tip="Tokens for what ctx recalls by itself for a coding agent (ctx recall --auto)"),
    Field("packing.expansion_max_tokens", "int", "Budgets",
          step=50),
    Field("packing.max_item_tokens", "int", "Budgets", step=50),
    Field("packing.live_max_share", "float", "Budgets",
          lo=-1, hi=2, step=0.05),
    Field("packing.mode", "choice", "Packing", ("fast", "dense_cached"),
          tip="Fast: the stored text; Dense: summaries by tier where they fit"),
    Field("tiers.mode", "choice", "Tier policy",
          ("disabled", "age_only", "importance")),
    Field("tiers.recent_days", "float", "Tier policy",
          lo=-1, hi=100_000, step=1),
    Field("tiers.old_days", "float", "Tier policy",
          lo=-1, hi=100_000, step=1),
    Field("tiers.full", "float", "Tier policy", lo=-1, hi=10,
          step=0.05),
    Field("tiers.gist", "float", "Tier policy", lo=-1, hi=10,
          step=0.05),
    Field("tiers.query_boost", "float", "Tier policy",
          lo=-1, hi=10, step=0.05),
    Field("store.vector_backend", "choice", "Vector store",
          ("memory", "embedded", "http"), tip="On this computer (the default): vectors in "
          "memory, sealed with your key on disk; Chroma in the data folder: vectors kept "
          "unencrypted (see the threat model); a Chroma server: at the URL below"),
    Field("store.chroma_url", "text", "Vector store",
          tip="Used with a Chroma server, e.g. http://127.0.0.1:8000"),
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
        backend.currentIndexChanged.connect(
            lambda _i: self._backend_changed(str(backend.currentData())))

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
            for value in field.choices:  # shown by name, stored by value
                combo.addItem(CHOICE_NAMES.get(value, value), value)
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
                index = editor.findData(str(value))
                if index < 0:  # a value the config refuses: shown as it is, to correct
                    editor.addItem(str(value), str(value))
                    index = editor.count() - 1
                editor.setCurrentIndex(index)
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
                out[key] = str(editor.currentData())
            elif isinstance(editor, QLineEdit):
                out[key] = editor.text().strip()
        return out
