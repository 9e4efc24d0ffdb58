"""RemoteEngine: ContextEngine's API over the wire (against an in-process server)."""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.errors import NotFound
from ipc.connection import ConnectionInfo, write_connection_file
from ipc.protocol import validate_result
from ipc.remote import RemoteEngine, connect
from ipc.server import Server
from tests.ipc.fake_engine import FakeEngine


@pytest.fixture
def remote(info: ConnectionInfo) -> Iterator[RemoteEngine]:
    with RemoteEngine(info, timeout=5) as r:
        yield r


def test_every_method_round_trips(remote: RemoteEngine, engine: FakeEngine) -> None:
    assert remote.ping()["pong"] is True
    job_id = remote.ingest(text="some text", title="doc", wait=True)
    job = remote.job(job_id)
    validate_result("job", job)
    assert job["id"] == job_id and job["state"] == "done"
    assert remote.wait(job_id, timeout=1)["id"] == job_id
    assert [j["id"] for j in remote.jobs()] == [job_id]
    assert engine.docs == {"doc": "some text"}
    payload = remote.build_context("what", budget=77, live=[{"kind": "clipboard"}], now=5.0)
    validate_result("build_context", payload)
    assert payload["budget"] == 77 and payload["items"][0]["time"] == 5.0
    hits = remote.search("q", 3, kinds=["section"])
    validate_result("search", hits)
    assert [h["chunk_id"] for h in hits] == [0, 1, 2]
    assert remote.recall("r", k=4)["k"] == 4
    assert remote.sources() == [{"uri": "doc", "chars": 9}]
    assert remote.delete("doc") == {"deleted": "doc"}
    with pytest.raises(NotFound):
        remote.delete("doc")
    assert remote.sync(["/a", "/b"]) == {"synced": 2}
    assert remote.status()["sources"] == 0
    assert "context_engine.build.duration_ms" in remote.metrics()
    audit = remote.audit(limit=50)
    validate_result("audit", audit)
    assert {a["method"] for a in audit} >= {"ingest", "build_context", "search", "delete"}
    assert remote.data_dir == engine.data_dir


def test_ingest_paths_are_sent_as_strings(remote: RemoteEngine, engine: FakeEngine,
                                          tmp_path: Path) -> None:
    job_id = remote.ingest(paths=[tmp_path / "a.txt"])  # type: ignore[list-item]
    assert remote.job(job_id)["files_total"] == 1


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
