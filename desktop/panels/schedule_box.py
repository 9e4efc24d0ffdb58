"""The "Scheduled backups" box of Settings -> Security: on or off (off by default), a
folder, how many of the app's backups to keep there, how often.

It edits config.toml's [backup] table, which the engine's config checks first (an
absolute folder, keep 1..1000, every 1..8784 hours); ``save(data_dir)`` writes only
when the values pass and returns the config's own message when they do not.
``desktop.backup_schedule`` runs the backups.
"""

from __future__ import annotations

import os

from desktop import config_io, pickers
from desktop.messages import error_text
from desktop.qt import (
    QCheckBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QPushButton,
    QSpinBox,
    QWidget,
)
from engine import CtxError


class ScheduleBox(QGroupBox):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Scheduled backups", parent)
        form = QFormLayout(self)
        self.schedule = QCheckBox("Back the store up automatically")
        self.folder, where = pickers.path_row("a folder, ideally on another disk",
                                              lambda: pickers.folder(self, "Backup folder"))
        self.keep = QSpinBox()
        self.keep.setRange(1, 1000)
        self.keep.setSuffix(" backups")
        self.every = QDoubleSpinBox()
        self.every.setRange(1.0, 24 * 366)
        self.every.setDecimals(0)
        self.every.setSuffix(" hours")
        for field in (self.keep, self.every):
            field.setMaximumWidth(160)
        self.save_button = QPushButton("Save schedule")
        save_row = QHBoxLayout()
        save_row.addStretch(1)
        save_row.addWidget(self.save_button)
        form.addRow(self.schedule)
        form.addRow("Folder", where)
        form.addRow("Keep the newest", self.keep)
        form.addRow("Every", self.every)
        form.addRow(save_row)

    def load(self, data_dir: str | os.PathLike[str]) -> None:
        """Show the [backup] table of ``data_dir``'s config (left as is if it is invalid:
        the Settings panel says what is wrong with config.toml)."""
        try:
            cfg = config_io.read(data_dir).engine.backup
        except CtxError:
            return
        self.schedule.setChecked(cfg.schedule)
        self.folder.setText(cfg.folder)
        self.keep.setValue(cfg.keep)
        self.every.setValue(float(cfg.every_hours))

    def save(self, data_dir: str | os.PathLike[str]) -> str | None:
        """Write the values to config.toml; None when written, else what is wrong."""
        values = {"backup.schedule": self.schedule.isChecked(),
                  "backup.folder": self.folder.text().strip(),
                  "backup.keep": self.keep.value(), "backup.every_hours": self.every.value()}
        try:
            raw = config_io.with_values(config_io.read_raw(data_dir), values)
            config_io.write(data_dir, raw)
        except CtxError as exc:
            return error_text(exc)
        return None

