"""Settings panel: the typed config (budgets, packing mode, tier policy, vector backend and
Chroma server, watched folders, appearance, start at login) written back to config.toml.

Only the values changed here are written, over what the file already holds.
Before anything is written the whole file is checked by the engine's own check
(``engine.check_config``, what store open runs; the ``[desktop]`` table by
``desktop.config_io``): an invalid value shows the config's message and the
file stays as it was. A file the store refuses is still shown (its values, the
bad one included, with the config's message), so it can be corrected here.
"""

from __future__ import annotations

import os
from typing import Any

from desktop import config_io, pickers
from desktop.messages import error_text, setting_name
from desktop.panels.settings_form import FIELDS, SettingsForm
from desktop.qt import (
    QCheckBox,
    QComboBox,
    QGroupBox,
    QHBoxLayout,
    QListWidget,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
    Signal,
)
from desktop.widgets import Banner, heading, muted
from engine import Config, CtxError


def env_overrides(environ: dict[str, str] | None = None) -> list[str]:
    """Environment variables that override config.toml for the running engine."""
    env = os.environ if environ is None else environ
    return sorted(k for k in env if k in ("CTX_EMBEDDER", "CTX_CHROMA_URL")
                  or k.startswith("CTX__"))


APPEARANCE_LABELS = {"system": "As the system", "light": "Light", "dark": "Dark"}


class SettingsPanel(QWidget):
    saved = Signal()  # config.toml was written

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
        self.folders.setMaximumHeight(140)  # about six folders; Appearance and login stay in sight
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
        self.appearance = QComboBox()
        for key, label in APPEARANCE_LABELS.items():
            self.appearance.addItem(label, key)
        self.appearance.setToolTip("The app's own light or dark palette; 'As the system' "
                                   "follows the desktop's colour scheme where it says one")
        look = QGroupBox("Appearance")
        QVBoxLayout(look).addWidget(self.appearance)

        self.save = QPushButton("Save")
        self.save.setDefault(True)
        self.revert = QPushButton("Revert")
        self.save.clicked.connect(self.save_settings)
        self.revert.clicked.connect(self.load)
        buttons = QHBoxLayout()
        self.path_label = muted("")
        self.unsaved = muted("")
        buttons.addWidget(self.path_label, 1)
        buttons.addWidget(self.unsaved)
        buttons.addWidget(self.revert)
        buttons.addWidget(self.save)
        self.env_note = muted("")

        inner = QWidget()
        columns = QHBoxLayout(inner)
        left, right = QVBoxLayout(), QVBoxLayout()
        # Two columns of about the same height, so the whole form fits the window's
        # default 1100x720 without scrolling (Start at login included).
        for name in ("Budgets", "Packing", "Vector store"):
            left.addWidget(self.form.boxes[name])
        left.addWidget(look)
        left.addWidget(login)
        right.addWidget(self.form.boxes["Tier policy"])
        right.addWidget(watched)
        left.addStretch(1)
        right.addStretch(1)
        columns.addLayout(left, 1)
        columns.addLayout(right, 1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(inner)
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        top.addWidget(heading("Settings"))
        top.addWidget(self.banner, 1)  # messages beside the title: no band of their own
        layout.addLayout(top)
        layout.addWidget(self.env_note)
        layout.addWidget(scroll, 1)
        layout.addLayout(buttons)
        for editor in (*self.form.editors.values(), self.appearance):
            for signal in ("valueChanged", "currentIndexChanged", "textChanged"):
                if hasattr(editor, signal):
                    getattr(editor, signal).connect(self._edited)
                    break
        self.start_at_login.toggled.connect(self._edited)
        self.folders.model().rowsInserted.connect(self._edited)
        self.folders.model().rowsRemoved.connect(self._edited)
        self.load()

    def _edited(self, *_: Any) -> None:
        """After an edit, a past "Saved." or "Nothing changed." no longer holds: it goes,
        and the footer says what is not saved yet."""
        if not self.loaded:
            return
        pending = self.changed()
        if pending and self.banner.kind in ("ok", "info"):
            self.banner.clear_message()
        self.unsaved.setText(f"{len(pending)} unsaved change" + ("s" if len(pending) > 1
                                                                 else "") if pending else "")

    @property
    def autostart(self) -> Any:
        if self._autostart is None:
            from ipc.login_item import Autostart

            self._autostart = Autostart()
        return self._autostart

    # -- load ------------------------------------------------------------------------------
    def load(self) -> None:
        """Show config.toml's values (defaults where it is silent)."""
        data_dir = self.host.data_dir
        self.path_label.setText(f"Settings file: {config_io.config_path(data_dir)}")
        overrides = env_overrides()
        self.env_note.setText("Set in the environment, overriding config.toml for this run: "
                              + ", ".join(overrides) if overrides else "")
        self.env_note.setVisible(bool(overrides))
        self.save.setEnabled(True)
        try:
            settings = config_io.read(data_dir)
            raw: dict[str, Any] = settings.raw
            engine_cfg, desktop = settings.engine, settings.desktop
            self.banner.clear_message()
        except CtxError as exc:
            try:
                raw = config_io.read_raw(data_dir)
            except CtxError:  # not even TOML: nothing to show, nothing to write over
                self.banner.show_message("error", "The settings file cannot be used: "
                                         + error_text(exc, advice=False) + " Fix the file "
                                         "by hand, or reset it from the window.")
                self.save.setEnabled(False)
                return
            self.banner.show_message("error", "The settings file holds a value the store "
                                     "refuses: " + error_text(exc, advice=False)
                                     + " Correct it here and save.")
            engine_cfg, desktop = Config(), config_io.DesktopSettings()
        values = self.form.values_from(engine_cfg)
        values.update(_raw_values(raw, list(values)))
        values["desktop.default_budget"] = _raw_or(raw, "desktop.default_budget",
                                                   desktop.default_budget)
        try:
            login = bool(self.autostart.enabled())
        except Exception:  # noqa: BLE001 - the setting is then what the file says
            login = desktop.start_at_login
        values["desktop.start_at_login"] = login
        self.form.set_values(values)
        self.start_at_login.setChecked(login)
        appearance = _raw_or(raw, "desktop.appearance", desktop.appearance)
        index = self.appearance.findData(appearance)
        self.appearance.setCurrentIndex(max(0, index))
        self.folders.clear()
        folders = _raw_or(raw, "ingest.watched_folders", engine_cfg.ingest.watched_folders)
        self.folders.addItems([str(f) for f in folders] if isinstance(folders, (list, tuple))
                              else [])
        self.loaded = self.values()  # as the editors show them (rounding included)
        self._edited()

    def values(self) -> dict[str, Any]:
        out = self.form.values()
        out["desktop.start_at_login"] = self.start_at_login.isChecked()
        out["desktop.appearance"] = str(self.appearance.currentData())
        out["ingest.watched_folders"] = [self.folders.item(i).text()
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
            self.banner.show_message("error", "Not saved: " + error_text(exc, advice=False)
                                     + " The settings file is unchanged.")
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
                notes.append("start at login could not be changed: "
                             + error_text(exc, advice=False).rstrip("."))
        self.loaded = self.values()
        self._edited()
        engine_keys = [k for k in changes if not k.startswith("desktop.")
                       and k != "ingest.watched_folders"]
        message = f"Saved to {config_io.config_path(data_dir)}."
        if "ingest.watched_folders" in changes:
            message += " Watched folders follow at once."
        if engine_keys:
            message += (" " + ", ".join(f"\u201c{setting_name(k)}\u201d"
                                        for k in sorted(engine_keys))
                        + " apply when ctx next opens the store.")
        if notes:
            self.banner.show_message("error", message + " But " + "; ".join(notes) + ".")
        else:
            self.banner.show_message("ok", message)
        if getattr(self.host, "engine_open", False):
            self.host.reload_config()
        self.saved.emit()
        return True

    # -- watched folders -----------------------------------------------------------------
    def add_folder(self, folder: str) -> None:
        existing = [self.folders.item(i).text() for i in range(self.folders.count())]
        if folder and folder not in existing:
            self.folders.addItem(folder)

    def _pick_folder(self) -> None:
        folder = pickers.folder(self, "Watch folder")
        if folder:
            self.add_folder(folder)

    def _remove_folder(self) -> None:
        for item in self.folders.selectedItems():
            self.folders.takeItem(self.folders.row(item))


def _raw_or(raw: dict[str, Any], dotted: str, default: Any) -> Any:
    node: Any = raw
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def _raw_values(raw: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    """The form's values as config.toml writes them (a value the store refused included),
    for the keys it sets; the rest keep the defaults."""
    missing = object()
    out = {}
    for key in keys:
        value = _raw_or(raw, key, missing)
        if value is not missing and isinstance(value, (str, int, float, bool)):
            out[key] = value
    return out


__all__ = ["FIELDS", "SettingsPanel", "env_overrides"]
