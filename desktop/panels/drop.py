"""Drag and drop of files and folders, for any widget (the main window installs it).

``install_file_drop(widget, on_paths)`` makes ``widget`` and everything in it
accept dropped local files and folders; ``on_paths`` gets their paths. The
Ingestion panel's ``accept_drop`` is the usual ``on_paths``.
"""

from __future__ import annotations

from collections.abc import Callable

from desktop.qt import QEvent, QObject, QWidget


def local_paths(mime: object) -> list[str]:
    """The local file paths in a drag's mime data (URLs that are not files are left out)."""
    has_urls = getattr(mime, "hasUrls", None)
    if has_urls is None or not has_urls():
        return []
    out: list[str] = []
    for url in mime.urls():  # type: ignore[attr-defined]
        if url.isLocalFile():
            path = url.toLocalFile()
            if path and path not in out:
                out.append(path)
    return out


class FileDropFilter(QObject):
    """An event filter: drags carrying local files are accepted, drops call ``on_paths``."""

    def __init__(self, on_paths: Callable[[list[str]], None], parent: QObject | None = None
                 ) -> None:
        super().__init__(parent)
        self._on_paths = on_paths

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind in (QEvent.Type.DragEnter, QEvent.Type.DragMove):
            if local_paths(event.mimeData()):  # type: ignore[attr-defined]
                event.acceptProposedAction()  # type: ignore[attr-defined]
                return True
            return False
        if kind == QEvent.Type.Drop:
            paths = local_paths(event.mimeData())  # type: ignore[attr-defined]
            if paths:
                event.acceptProposedAction()  # type: ignore[attr-defined]
                self._on_paths(paths)
                return True
        return False


def install_file_drop(widget: QWidget, on_paths: Callable[[list[str]], None]
                      ) -> FileDropFilter:
    """Accept dropped files and folders anywhere on ``widget`` (kept alive by the widget)."""
    drop = FileDropFilter(on_paths, widget)
    widget.setAcceptDrops(True)
    widget.installEventFilter(drop)
    return drop
