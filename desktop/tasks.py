"""Background operations on a QThreadPool, results back on the GUI thread.

After Anki's ``aqt/taskman.py``: ``TaskManager.run(fn, success, failure)``
runs ``fn()`` on a pool thread; its result or exception comes back through the
:class:`~desktop.bridge.GuiBridge`, so ``success``/``failure`` always run on
the thread that owns the manager (the GUI thread). A worker never swallows an
exception: every one reaches ``failure``, or the manager's ``failed`` signal (a
:class:`~desktop.notices.Failure`) when no failure callback was given. The
manager keeps a reference to each running task until its completion has been
delivered (Spyder's workers), so nothing is collected mid-flight.
"""

from __future__ import annotations

import itertools
import logging
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from desktop.bridge import GuiBridge
from desktop.notices import Failure, error_info
from desktop.qt import QObject, QRunnable, QThreadPool, Signal
from engine import CtxError

log = logging.getLogger("ctx.desktop.tasks")

Success = Callable[[Any], None]
FailureCallback = Callable[[BaseException], None]


@dataclass
class Task:
    """One submitted operation; ``done`` is set once success/failure has run."""

    id: int
    name: str
    fn: Callable[[], Any]
    success: Success | None
    failure: FailureCallback | None
    thread_name: str = ""
    done: threading.Event = field(default_factory=threading.Event)


class _Runnable(QRunnable):
    def __init__(self, task: Task, deliver: Callable[[Task, bool, Any], None]) -> None:
        super().__init__()
        self.setAutoDelete(True)
        self._task = task
        self._deliver = deliver

    def run(self) -> None:  # a pool thread
        self._task.thread_name = threading.current_thread().name
        try:
            result = self._task.fn()
        except BaseException as exc:  # noqa: BLE001 - reported to failure, never lost
            self._deliver(self._task, False, exc)
            return
        self._deliver(self._task, True, result)


class TaskManager(QObject):
    """Runs callables on its own QThreadPool; completions arrive on the owner's thread.

    ``failed(Failure)`` is emitted for a failure that has no failure callback, and
    for an exception raised inside a success or failure callback.
    """

    failed = Signal(object)  # Failure
    finished = Signal(int)  # a task id, after its callback ran

    def __init__(self, max_threads: int = 4, parent: QObject | None = None, *,
                 bridge: GuiBridge | None = None) -> None:
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(max_threads)
        self.bridge = bridge or GuiBridge(self)
        self._ids = itertools.count(1)
        self._running: dict[int, Task] = {}
        self._lock = threading.Lock()

    def run(self, fn: Callable[[], Any], success: Success | None = None,
            failure: FailureCallback | None = None, *, name: str = "task") -> Task:
        """Run ``fn()`` on the pool; then ``success(result)`` or ``failure(exc)`` here."""
        task = Task(next(self._ids), name, fn, success, failure)
        with self._lock:
            self._running[task.id] = task
        self.pool.start(_Runnable(task, self._completed))
        return task

    def _completed(self, task: Task, ok: bool, value: Any) -> None:  # a pool thread
        self.bridge.post(lambda: self._deliver(task, ok, value))

    def running(self) -> list[Task]:
        """Tasks submitted whose completion has not been delivered yet."""
        with self._lock:
            return list(self._running.values())

    def wait_for_done(self, timeout_ms: int = -1) -> bool:
        """Block until the pool has no running work (completions are delivered later)."""
        return bool(self.pool.waitForDone(timeout_ms))

    def _deliver(self, task: Task, ok: bool, value: Any) -> None:
        try:
            if ok:
                if task.success is not None:
                    task.success(value)
            elif task.failure is not None:
                task.failure(value)
            else:
                self._report(task.name, value)
        except Exception as exc:  # noqa: BLE001 - a callback's bug is reported too
            self._report(task.name, exc)
        finally:
            with self._lock:
                self._running.pop(task.id, None)
            task.done.set()
            self.finished.emit(task.id)

    def _report(self, name: str, exc: BaseException) -> None:
        if not isinstance(exc, CtxError):
            log.error("task %s failed (%s):\n%s", name, type(exc).__name__,
                      "".join(traceback.format_tb(exc.__traceback__)))
        self.failed.emit(Failure(name, error_info(exc)))
