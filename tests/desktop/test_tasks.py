"""TaskManager: work on the pool, success and failure back on the GUI thread, nothing lost."""

from __future__ import annotations

import functools
import threading
from typing import Any

import pytest

from desktop.notices import Failure, error_info
from desktop.tasks import TaskManager
from engine.errors import EmptyQuery

pytestmark = pytest.mark.gui


def test_success_runs_on_the_gui_thread_with_the_result(qtbot: Any) -> None:
    tm = TaskManager()
    seen: dict[str, Any] = {}

    def work() -> int:
        seen["worker"] = threading.current_thread()
        return 42

    def success(value: int) -> None:
        seen["value"], seen["callback"] = value, threading.current_thread()

    with qtbot.waitSignal(tm.finished, timeout=5000):
        task = tm.run(work, success, name="answer")
        assert task in tm.running()  # a reference is kept while it runs
    assert seen["value"] == 42
    assert seen["worker"] is not threading.main_thread()
    assert seen["callback"] is threading.main_thread()
    assert task.done.is_set() and tm.running() == []


def test_failure_callback_gets_the_exception_on_the_gui_thread(qtbot: Any) -> None:
    tm = TaskManager()
    got: list[tuple[BaseException, threading.Thread]] = []

    def boom() -> None:
        raise EmptyQuery("the query is empty")

    with qtbot.waitSignal(tm.finished, timeout=5000):
        tm.run(boom, failure=lambda exc: got.append((exc, threading.current_thread())))
    assert isinstance(got[0][0], EmptyQuery)
    assert got[0][1] is threading.main_thread()


def test_a_failure_without_a_callback_is_reported_not_swallowed(qtbot: Any) -> None:
    tm = TaskManager()

    def bug() -> None:
        raise ZeroDivisionError("bad math")

    with qtbot.waitSignal(tm.failed, timeout=5000) as blocker:
        tm.run(bug, name="divide")
    [failure] = blocker.args
    assert isinstance(failure, Failure) and failure.operation == "divide"
    assert failure.error.name == "internal_error"
    assert "ZeroDivisionError" in failure.error.message


def test_an_exception_in_a_success_callback_is_reported(qtbot: Any) -> None:
    tm = TaskManager()

    def bad_callback(_: Any) -> None:
        raise KeyError("oops")

    with qtbot.waitSignal(tm.failed, timeout=5000) as blocker:
        tm.run(lambda: 1, bad_callback, name="cb")
    assert blocker.args[0].operation == "cb" and "KeyError" in blocker.args[0].error.message


def test_many_tasks_all_complete(qtbot: Any) -> None:
    tm = TaskManager(max_threads=3)
    results: list[int] = []
    for i in range(20):
        tm.run(functools.partial(pow, i, 2), results.append)
    qtbot.waitUntil(lambda: len(results) == 20, timeout=10000)
    assert sorted(results) == [i * i for i in range(20)]
    assert tm.running() == []


def test_error_info_keeps_ctx_codes() -> None:
    err = error_info(EmptyQuery("the query is empty"))
    assert (err.code, err.name) == (1003, "empty_query")
    assert error_info(RuntimeError()).message == "RuntimeError"


def test_one_bridge_runs_posts_in_order_on_the_gui_thread(qtbot: Any) -> None:
    """Posts from many threads run on the GUI thread, each thread's in its order."""
    from desktop.bridge import GuiBridge

    bridge = GuiBridge()
    seen: list[tuple[int, int, threading.Thread]] = []

    def record(n: int, i: int) -> None:
        seen.append((n, i, threading.current_thread()))

    def poster(n: int) -> None:
        for i in range(200):
            bridge.post(functools.partial(record, n, i))
    threads = [threading.Thread(target=poster, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    qtbot.waitUntil(lambda: len(seen) == 800, timeout=10000)
    assert all(thread is threading.main_thread() for _, _, thread in seen)
    for n in range(4):
        assert [i for m, i, _ in seen if m == n] == list(range(200))
