"""The server's method table: every engine method on the wire has its entry, the wire's
audited column is what the engine audits, and results are encoded by their to_dict."""

from __future__ import annotations

import re

from engine import jsonable
from engine.api import DeleteResult, JobSnapshot
from engine.calls import AUDITED
from ipc.dispatch import CALLS
from ipc.wire import METHODS
from tests.ipc.processes import REPO

SERVER_OWN = {"ping", "shutdown"}  # answered by the server, not the engine


def test_every_engine_method_on_the_wire_has_an_entry() -> None:
    assert set(CALLS) == set(METHODS) - SERVER_OWN


def test_the_docs_audited_column_is_what_the_engine_audits() -> None:
    doc = (REPO / "docs" / "wire.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \| [^|]+ \| [^|]+ \| (yes|no) \|", doc, re.MULTILINE)
    audited = {name for name, flag in rows if flag == "yes"}
    assert {name for name, _ in rows} == set(METHODS)
    assert audited == set(AUDITED) | {"shutdown"}  # shutdown: the server records it


def test_results_are_encoded_by_their_to_dict() -> None:
    job = JobSnapshot(id="j", kind="text", state="done", created=1.0, sources=(3,))
    assert jsonable(job) == job.to_dict() and jsonable(job)["sources"] == [3]
    assert jsonable([DeleteResult(2, (1, 2), "j")]) == [{"deleted": 2, "sources": [1, 2], "job": "j"}]
    assert jsonable({"job_id": "j"}) == {"job_id": "j"}
