"""Settings panel: the typed config (budgets, packing mode, tier policy, vector backend and
Chroma server, watched folders, start at login) written back to config.toml.

Only the values changed here are written, over what the file already holds.
Before anything is written the whole file is checked by the engine's own config
(and the ``[desktop]`` table by ``desktop.config_io``): an invalid value shows
the config's message and the file stays as it was.
"""

from __future__ import annotations

import os
from typing import Any

from desktop import config_io
from desktop.panels.settings_form import FIELDS, SettingsForm
from desktop.panels.widgets import Banner, error_text, heading, muted
from desktop.qt import (
    QCheckBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QListWidget,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)
from engine import CtxError


def env_overrides(environ: dict[str, str] | None = None) -> list[str]:
    """Environment variables that override config.toml for the running engine."""
    env = os.environ if environ is None else environ
    return sorted(k for k in env if k in ("CTX_EMBEDDER", "CTX_CHROMA_URL")
                  or k.startswith("CTX__"))


class SettingsPanel(QWidget):
    def __init__(self, host: Any, parent: QWidget | None = None, *,
                 autostart: Any = None) -> None:
        super().__init__(parent)
        self.host = host
        self._autostart = autostart
        self.loaded: dict[str, Any] = {}
        self.banner = Banner(self)
        self.form = SettingsForm()

        self.folders = QListWidget()
        self.folders.setMinimumHeight(80)
        add = QPushButton("Add folder…")
        remove = QPushButton("Remove")
        add.clicked.connect(self._pick_folder)
        remove.clicked.connect(self._remove_folder)
        folder_buttons = QHBoxLayout()
        folder_buttons.addWidget(add)
        folder_buttons.addWidget(remove)
        folder_buttons.addStretch(1)
        watched = QGroupBox("Watched folders")
        wbox = QVBoxLayout(watched)
        wbox.addWidget(muted("Files that change in these folders are ingested again; files "
                             "deleted there leave the store."))
        wbox.addWidget(self.folders)
        wbox.addLayout(folder_buttons)

        self.start_at_login = QCheckBox("Start ctx when I log in")
        login = QGroupBox("Start at login")
        QVBoxLayout(login).addWidget(self.start_at_login)

        self.save = QPushButton("Save")
        self.save.setDefault(True)
        self.revert = QPushButton("Revert")
        self.save.clicked.connect(self.save_settings)
        self.revert.clicked.connect(self.load)
        buttons = QHBoxLayout()
        self.path_label = muted("")
        buttons.addWidget(self.path_label, 1)
        buttons.addWidget(self.revert)
        buttons.addWidget(self.save)
        self.env_note = muted("")

        inner = QWidget()
        columns = QHBoxLayout(inner)
        left, right = QVBoxLayout(), QVBoxLayout()
        for name in ("Budgets", "Packing", "Vector store"):
            left.addWidget(self.form.boxes[name])
        right.addWidget(self.form.boxes["Tier policy"])
        right.addWidget(watched)
        right.addWidget(login)
        left.addStretch(1)
        right.addStretch(1)
        columns.addLayout(left, 1)
        columns.addLayout(right, 1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(inner)
        layout = QVBoxLayout(self)
        layout.addWidget(heading("Settings"))
        layout.addWidget(self.banner)
        layout.addWidget(self.env_note)
        layout.addWidget(scroll, 1)
        layout.addLayout(buttons)
        self.load()

    @property
    def autostart(self) -> Any:
        if self._autostart is None:
            from ipc.cli.login_item import Autostart

            self._autostart = Autostart()
        return self._autostart

    # -- load ------------------------------------------------------------------------------
    def load(self) -> None:
        """Show config.toml's values (defaults where it is silent)."""
        data_dir = self.host.data_dir
        self.path_label.setText(f"Saved to {config_io.config_path(data_dir)}")
        overrides = env_overrides()
        self.env_note.setText("Set in the environment, overriding config.toml for this run: "
                              + ", ".join(overrides) if overrides else "")
        self.env_note.setVisible(bool(overrides))
        try:
            settings = config_io.read(data_dir)
        except CtxError as exc:
            self.banner.show_message("error", "config.toml cannot be used: " + error_text(exc)
                                     + ". Fix the file by hand; nothing will be written "
                                     "over it from here.")
            self.save.setEnabled(False)
            return
        self.save.setEnabled(True)
        values = self.form.values_from(settings.engine)
        values["desktop.default_budget"] = settings.desktop.default_budget
        try:
            login = bool(self.autostart.enabled())
        except Exception:  # noqa: BLE001 - the setting is then what the file says
            login = settings.desktop.start_at_login
        values["desktop.start_at_login"] = login
        self.form.set_values(values)
        self.start_at_login.setChecked(login)
        self.folders.clear()
        self.folders.addItems(list(settings.desktop.watched_folders))
        self.loaded = self.values()  # as the editors show them (rounding included)

    def values(self) -> dict[str, Any]:
        out = self.form.values()
        out["desktop.start_at_login"] = self.start_at_login.isChecked()
        out["desktop.watched_folders"] = [self.folders.item(i).text()
                                          for i in range(self.folders.count())]
        return out

    def changed(self) -> dict[str, Any]:
        return {k: v for k, v in self.values().items() if self.loaded.get(k) != v}

    # -- save ------------------------------------------------------------------------------
    def save_settings(self) -> bool:
        """Validate and write the changed values; True when config.toml was written."""
        changes = self.changed()
        if not changes:
            self.banner.show_message("info", "Nothing changed.")
            return False
        data_dir = self.host.data_dir
        try:
            raw = config_io.with_values(config_io.read_raw(data_dir), changes)
            config_io.write(data_dir, raw)
        except CtxError as exc:
            self.banner.show_message("error", "Not saved: " + error_text(exc)
                                     + ". config.toml is unchanged.")
            return False
        except OSError as exc:
            self.banner.show_message("error", f"Not saved: config.toml cannot be written "
                                     f"({exc.strerror or type(exc).__name__}).")
            return False
        notes = []
        if "desktop.start_at_login" in changes:
            try:
                self.autostart.set_enabled(bool(changes["desktop.start_at_login"]))
            except Exception as exc:  # noqa: BLE001 - shown, never lost
                notes.append("start at login could not be changed: " + error_text(exc))
        self.loaded = self.values()
        engine_keys = [k for k in changes if not k.startswith("desktop.")]
        message = "Saved."
        if engine_keys:
            message += (" Engine settings (" + ", ".join(sorted(engine_keys)) + ") apply when "
                        "ctx next opens the store.")
        if notes:
            self.banner.show_message("error", message + " But " + "; ".join(notes) + ".")
        else:
            self.banner.show_message("ok", message)
        reload = getattr(self.host, "reload_config", None)
        if reload is not None:
            reload()
        return True

    # -- watched folders -----------------------------------------------------------------
    def add_folder(self, folder: str) -> None:
        existing = [self.folders.item(i).text() for i in range(self.folders.count())]
        if folder and folder not in existing:
            self.folders.addItem(folder)

    def _pick_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Watch folder")
        if folder:
            self.add_folder(folder)

    def _remove_folder(self) -> None:
        for item in self.folders.selectedItems():
            self.folders.takeItem(self.folders.row(item))


__all__ = ["FIELDS", "SettingsPanel", "env_overrides"]
