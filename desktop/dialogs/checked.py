"""What the set-up, key and restore dialogs share: a password field, and an OK that
first asks the dialog's ``validate()`` and shows its problem in place of closing."""

from __future__ import annotations

from desktop.appearance import paint_tone
from desktop.qt import QDialog, QLabel, QLineEdit, QWidget


def password_field(placeholder: str) -> QLineEdit:
    field = QLineEdit()
    field.setEchoMode(QLineEdit.EchoMode.Password)
    field.setPlaceholderText(placeholder)
    return field


class CheckedDialog(QDialog):
    """A dialog whose accept runs ``validate()`` first; ``self.error`` (hidden until a
    problem) is for the subclass to place in its layout."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.hide()

    def validate(self) -> str | None:
        """The problem with what was typed, in words, or None to accept."""
        return None

    def show_error(self, text: str) -> None:
        paint_tone(self.error, "error")
        self.error.setText(text)
        self.error.show()

    def _try_accept(self) -> None:
        problem = self.validate()
        if problem:
            self.show_error(problem)
            return
        self.accept()
