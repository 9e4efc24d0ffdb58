"""TaskManager: work on the pool, success and failure back on the GUI thread, nothing lost."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from desktop.tasks import TaskManager, error_dict
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
    name, err = blocker.args
    assert name == "divide"
    assert err["name"] == "internal_error" and "ZeroDivisionError" in err["message"]


def test_an_exception_in_a_success_callback_is_reported(qtbot: Any) -> None:
    tm = TaskManager()

    def bad_callback(_: Any) -> None:
        raise KeyError("oops")

    with qtbot.waitSignal(tm.failed, timeout=5000) as blocker:
        tm.run(lambda: 1, bad_callback, name="cb")
    assert blocker.args[0] == "cb" and "KeyError" in blocker.args[1]["message"]


def test_many_tasks_all_complete(qtbot: Any) -> None:
    tm = TaskManager(max_threads=3)
    results: list[int] = []
    for i in range(20):
        tm.run(lambda i=i: i * i, results.append)
    qtbot.waitUntil(lambda: len(results) == 20, timeout=10000)
    assert sorted(results) == [i * i for i in range(20)]
    assert tm.running() == []


def test_error_dict_keeps_ctx_codes() -> None:
    err = error_dict(EmptyQuery("the query is empty"))
    assert (err["code"], err["name"]) == (1003, "empty_query")
    assert error_dict(RuntimeError())["message"] == "RuntimeError"
