"""Audit happens once, in the engine: a call from a caller process leaves one record of ids
and counts (success or failure, never content); a call without one leaves none."""

from __future__ import annotations

import pytest

from engine.api import AuditEntry
from engine.calls import audit_record, caller, current_caller
from engine.errors import EmptyQuery, InternalError
from engine.facade import ContextEngine


def _calls(engine: ContextEngine) -> list[AuditEntry]:
    """The audit records of calls, oldest first (the engine's own job records aside)."""
    return [r for r in reversed(engine.audit(limit=50)) if r.method != "ingest_job"]


def test_only_calls_from_a_caller_process_are_audited(engine: ContextEngine) -> None:
    engine.ingest(text="private text about herons", title="birds", wait=True)
    engine.search("herons")
    assert _calls(engine) == []  # the library user, a bench: nothing to record
    with caller("cli", pid=4242):
        job = engine.ingest(text="more private words", title="more", wait=True)
        engine.build_context("herons", live=[{"kind": "clipboard", "text": "secret"}],
                             budget=120)
        with pytest.raises(EmptyQuery):
            engine.search("  ")
        engine.sources()
    ingest, build, failed, sources = _calls(engine)
    assert (ingest.method, ingest.caller_pid, ingest.ids) == ("ingest", 4242, (job,))
    assert build.counts["budget"] == 120 and build.counts["live"] == 1
    assert build.counts["ok"] == 1 and "duration_ms" in build.counts
    assert failed.counts == {"ok": 0, "duration_ms": failed.counts["duration_ms"],
                             "error_code": EmptyQuery.code}
    assert sources.counts["results"] == 2
    assert "private" not in repr(_calls(engine)) and "secret" not in repr(_calls(engine))


def test_the_caller_lives_in_its_block_only() -> None:
    assert current_caller().origin == "local" and current_caller().pid is None
    with caller("gui") as who:
        assert current_caller() is who and who.pid is None
        with caller("ipc", pid=7, request="abc"):
            assert current_caller().request == "abc"
        assert current_caller() is who
    assert current_caller().origin == "local"


def test_a_bug_is_recorded_as_internal_error() -> None:
    with caller("ipc", pid=1, request="m" * 32):
        ids, counts = audit_record(current_caller(), {}, None, ZeroDivisionError(), 3)
    assert ids == ["m" * 32] and counts == {"ok": 0, "duration_ms": 3,
                                            "error_code": InternalError.code}
