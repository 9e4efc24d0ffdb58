"""Server behaviour: routing under concurrency, pools, shutdown, limits, audit."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import zmq

from engine.errors import EmptyQuery, NotFound
from ipc.client import Client
from ipc.connection import ConnectionInfo, default_endpoint, make_info
from ipc.errors import InternalError, IpcTimeout, MessageTooLarge, ServerUnavailable
from ipc.server import Server
from ipc.wire import IpcConfig, validate_result
from tests.ipc.conftest import KEY, wait_for
from tests.ipc.fake_engine import FakeEngine


def _info(server: Server, engine: FakeEngine) -> ConnectionInfo:
    return make_info(server.endpoint, KEY, engine.data_dir)


def test_threads_get_their_own_replies(server: Server, engine: FakeEngine) -> None:
    info = _info(server, engine)

    def worker(n: int) -> list[str]:
        problems = []
        with Client(info, timeout=10) as client:
            for i in range(40):
                query = f"t{n}-q{i}"
                if i % 2:
                    hits = client.call("search", {"query": query, "k": 2})
                    validate_result("search", hits)
                    got = hits[0]["title"]
                else:
                    payload = client.call("build_context", {"query": query, "budget": 50})
                    validate_result("build_context", payload)
                    got = payload["context"].removeprefix("echo:")
                if got != query:
                    problems.append(f"{query} -> {got}")
        return problems

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(worker, range(8)))
    assert results == [[]] * 8
    assert server.stats()["method:search"] == 160
    assert server.stats()["max_in_flight"] >= 2  # requests really overlapped


def test_one_client_shared_by_threads_is_serialized(client: Client) -> None:
    def call(i: int) -> str:
        return client.call("build_context", {"query": f"s{i}"})["context"]

    with ThreadPoolExecutor(6) as pool:
        assert list(pool.map(call, range(60))) == [f"echo:s{i}" for i in range(60)]


def test_ping_and_status_do_not_wait_behind_an_ingest(
        make_server: Callable[..., Server], engine: FakeEngine) -> None:
    server = make_server(workers=1)
    info = _info(server, engine)
    engine.release_ingest.clear()
    slow = Client(info, timeout=20)
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(slow.call, "ingest", {"text": "big", "wait": True})
        wait_for(lambda: server.stats()["in_flight"] >= 1)
        with Client(info, timeout=2, retries=0) as quick:
            started = time.monotonic()
            assert quick.call("ping")["pong"] is True
            assert quick.call("status")["sources"] == 0
            assert quick.call("metrics")
            assert time.monotonic() - started < 1.0
        assert not pending.done()
        engine.release_ingest.set()
        assert pending.result(timeout=10)["job_id"]
    slow.close()


def test_shutdown_replies_then_stops(server: Server, client: Client,
                                     engine: FakeEngine) -> None:
    assert client.call("shutdown") == {"stopping": True}
    assert server.wait(10)
    assert [a[0] for a in engine.audits] == ["shutdown"]


def test_stop_lets_in_flight_requests_finish_and_refuses_new_ones(
        server: Server, engine: FakeEngine) -> None:
    info = _info(server, engine)
    with ThreadPoolExecutor(1) as pool, Client(info, timeout=5) as late:
        slow = Client(info, timeout=10)
        pending = pool.submit(slow.call, "search", {"query": "sleep:0.6", "k": 1})
        wait_for(lambda: server.stats()["in_flight"] >= 1)
        server.stop()
        with pytest.raises(ServerUnavailable):
            late.call("ping", retries=0)
        assert pending.result(timeout=10)[0]["title"] == "sleep:0.6"
        slow.close()
    assert server.wait(10)


def test_busy_server_refuses_beyond_max_pending(make_server: Callable[..., Server],
                                                engine: FakeEngine) -> None:
    server = make_server(config=IpcConfig(max_pending=1))
    info = _info(server, engine)
    with ThreadPoolExecutor(1) as pool, Client(info, timeout=5) as other:
        slow = Client(info, timeout=10)
        pending = pool.submit(slow.call, "search", {"query": "sleep:0.5", "k": 1})
        wait_for(lambda: server.stats()["in_flight"] >= 1)
        with pytest.raises(ServerUnavailable) as info_exc:
            other.call("search", {"query": "x"}, retries=0)
        assert info_exc.value.details["reason"] == "busy"
        assert pending.result(timeout=10)
        slow.close()


def test_reply_over_the_limit_becomes_an_error(make_server: Callable[..., Server],
                                               engine: FakeEngine) -> None:
    server = make_server(max_message_bytes=64 * 1024)
    with Client(_info(server, engine), timeout=5) as client:
        assert client.call("search", {"query": "big:1000"})
        with pytest.raises(MessageTooLarge):
            client.call("search", {"query": "big:70000"})
        assert client.call("ping")["pong"]


def test_engine_errors_travel_with_their_class(client: Client) -> None:
    with pytest.raises(NotFound) as info:
        client.call("search", {"query": "raise:not_found"})
    assert info.value.details == {"what": "test"}
    with pytest.raises(EmptyQuery):
        client.call("build_context", {"query": "   "})


def test_bugs_become_internal_errors_without_their_message(client: Client,
                                                           server: Server) -> None:
    with pytest.raises(InternalError) as info:
        client.call("search", {"query": "raise:bug"})
    assert "secret" not in str(info.value.to_dict())
    assert info.value.details["type"] == "RuntimeError"
    assert server.stats()["internal_errors"] == 1


def test_the_engine_audits_each_served_call_once(tmp_path: Path) -> None:
    """A served call is audited by the engine (the server only says who calls): one
    record per call, with the caller's pid and request id, counts and never content;
    a failed call too, with its error code; status is not audited."""
    from engine import ContextEngine

    eng = ContextEngine.open(tmp_path / "real")
    server = Server(eng, default_endpoint(tmp_path / "real"), KEY)
    server.start()
    try:
        with Client(make_info(server.endpoint, KEY, eng.data_dir), timeout=20) as client:
            job = client.call("ingest", {"text": "private text about otters", "wait": True})
            client.call("build_context", {"query": "private words", "budget": 40,
                                          "live": [{"kind": "clipboard", "text": "secret"}]})
            client.call("search", {"query": "otters", "k": 3})
            client.call("status")
            with pytest.raises(EmptyQuery):
                client.call("search", {"query": "   "})
        rows = [r for r in eng.audit(limit=20) if r.method != "ingest_job"]
    finally:
        server.close(timeout=10)
        eng.close()
    assert [r.method for r in reversed(rows)] == ["ingest", "build_context", "search", "search"]
    failed, search, build, ingest = rows
    assert {r.caller_pid for r in rows} == {os.getpid()}
    assert all(len(r.ids[0]) == 32 for r in rows)  # each request's msg_id
    assert job["job_id"] in ingest.ids
    assert build.counts["ok"] == 1 and build.counts["budget"] == 40
    assert build.counts["items"] >= 1 and build.counts["live"] == 1
    assert search.counts["results"] >= 1
    assert failed.counts["ok"] == 0 and failed.counts["error_code"] == EmptyQuery.code
    assert "private" not in repr(rows) and "secret" not in repr(rows)


def test_status_carries_server_counters(client: Client) -> None:
    client.call("ping")
    status = client.call("status")
    assert status["server"]["method:ping"] == 1
    assert status["server"]["received"] >= 2


def test_tcp_endpoint_gets_a_free_port(make_server: Callable[..., Server],
                                       engine: FakeEngine) -> None:
    server = make_server(endpoint="tcp://127.0.0.1:*")
    assert server.endpoint.startswith("tcp://127.0.0.1:")
    assert int(server.endpoint.rsplit(":", 1)[1]) > 0
    with Client(_info(server, engine), timeout=5) as client:
        assert client.call("ping")["pong"]


def test_close_without_run_releases_the_endpoint(engine: FakeEngine) -> None:
    server = Server(engine, "tcp://127.0.0.1:*", KEY)
    endpoint = server.endpoint
    server.close()
    again = Server(engine, endpoint, KEY)
    again.close()
    assert again.wait(0)


def test_loop_survives_an_exception_in_handling(server: Server, client: Client,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}
    real = server._handle

    def flaky(frames: list[bytes]) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("boom")
        real(frames)

    monkeypatch.setattr(server, "_handle", flaky)
    with pytest.raises(IpcTimeout):  # the request that hit the bug is lost, not the loop
        client.call("ping", timeout=0.3, retries=0)
    assert client.call("ping")["pong"]
    assert server.stats()["loop_errors"] == 1


def test_busy_address_fails_at_construction(server: Server, engine: FakeEngine) -> None:
    tcp = Server(engine, "tcp://127.0.0.1:*", KEY)
    try:
        with pytest.raises(zmq.ZMQError):
            Server(engine, tcp.endpoint, KEY)
    finally:
        tcp.close()
