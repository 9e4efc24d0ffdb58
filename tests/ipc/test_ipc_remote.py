"""RemoteEngine: ContextEngine's API over the wire (against an in-process server)."""

from __future__ import annotations

import dataclasses
import inspect
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.errors import NotFound
from ipc.connection import ConnectionInfo, write_connection_file
from ipc.remote import RemoteEngine, connect
from ipc.server import Server
from ipc.wire import validate_result
from tests.ipc.fake_engine import FakeEngine


@pytest.fixture
def remote(info: ConnectionInfo) -> Iterator[RemoteEngine]:
    with RemoteEngine(info, timeout=5) as r:
        yield r


def test_every_method_round_trips(remote: RemoteEngine, engine: FakeEngine) -> None:
    """Each result comes back as the very object the engine returned (from_dict of to_dict)."""
    assert remote.ping()["pong"] is True
    job_id = remote.ingest(text="some text", title="doc", wait=True)
    job = remote.job(job_id)
    validate_result("job", job.to_dict())
    assert job == engine.job(job_id) and job.state == "done"
    assert remote.wait(job_id, timeout=1).id == job_id
    assert remote.jobs() == engine.jobs()
    assert engine.docs == {"doc": "some text"}
    payload = remote.build_context("what", budget=77, live=[{"kind": "clipboard"}], now=5.0)
    validate_result("build_context", payload.to_dict())
    assert payload == engine.build_context("what", budget=77, now=5.0)
    assert payload.budget == 77 and payload.items[0].time == 5.0
    hits = remote.search("q", 3, kinds=["section"])
    validate_result("search", [h.to_dict() for h in hits])
    assert hits == engine.search("q", 3) and [h.chunk_id for h in hits] == [0, 1, 2]
    recalled = remote.recall("r", k=4)
    assert recalled == engine.recall("r", k=4) and len(recalled.hits or ()) == 4
    assert remote.sources() == engine.sources() and remote.sources()[0].uri == "doc"
    assert remote.delete("doc").deleted == 1
    with pytest.raises(NotFound):
        remote.delete("doc")
    assert remote.sync(["/a", "/b"]) == engine.sync(["/a", "/b"])
    status = remote.status()
    assert status.sources == 0 and status.server is not None
    assert status == dataclasses.replace(engine.status(), server=status.server)
    metrics = remote.metrics()
    assert metrics == dataclasses.replace(engine.metrics(), time=metrics.time)
    assert metrics.alerts["context_engine.fake"].count == 1
    engine.audit_event("shutdown", caller_pid=1, ids=["x"], counts={"ok": 1})
    audit = remote.audit(limit=50)
    validate_result("audit", [a.to_dict() for a in audit])
    assert audit == engine.audit(limit=50)
    assert remote.data_dir == engine.data_dir


def test_ingest_paths_are_sent_as_strings(remote: RemoteEngine, engine: FakeEngine,
                                          tmp_path: Path) -> None:
    job_id = remote.ingest(paths=[tmp_path / "a.txt"])  # type: ignore[list-item]
    assert remote.job(job_id).files_total == 1


def test_connect_uses_the_connection_file(server: Server, info: ConnectionInfo,
                                          data_dir: Path) -> None:
    assert connect(data_dir / "nothing-here") is None
    write_connection_file(info)
    remote = connect(data_dir, timeout=5)
    assert remote is not None
    try:
        assert remote.ping()["pid"] == os.getpid()
        assert remote.info == info
    finally:
        remote.close()


def test_signatures_match_the_engine_facade() -> None:
    try:
        from engine.facade import ContextEngine
    except ImportError as exc:  # the facade is written in parallel; skip until it imports
        pytest.skip(f"engine.facade not importable yet: {exc}")
    for name in ("ingest", "job", "jobs", "cancel_job", "wait", "build_context", "search", "sources",
                 "delete", "sync", "status", "metrics", "audit"):
        ours = inspect.signature(getattr(RemoteEngine, name)).parameters
        theirs = inspect.signature(getattr(ContextEngine, name)).parameters
        assert list(ours) == list(theirs), name
        for pname, param in theirs.items():
            assert ours[pname].kind == param.kind, (name, pname)
            assert ours[pname].default == param.default, (name, pname)
