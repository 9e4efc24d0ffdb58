"""Errors about the caller's input name the parameter (``<method>.<field>``, as the wire
does) and say what is wrong, in process too; a store that could not be made leaves no
lock file, and a lock file is never readable by others (issue 21)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.errors import CtxError, EmptyQuery, InvalidInput, KeyUnavailable, NotFound
from engine.facade import ContextEngine, init_store
from engine.store.vault.lock import DataDirLock


def _error(call: Callable[[], object]) -> CtxError:
    with pytest.raises(CtxError) as info:
        call()
    return info.value


def test_errors_name_their_parameter_in_process(engine: ContextEngine, tmp_path: Path) -> None:
    cases = [
        (lambda: engine.search(""), EmptyQuery, "search.query", "the query is empty"),
        (lambda: engine.search("q", k=0), InvalidInput, "search.k", "k must be between"),
        (lambda: engine.build_context("  "), EmptyQuery, "build_context.query", "empty"),
        (lambda: engine.build_context("q", live=[{"kind": "active_file", "text": "t",
                                                   "captured_at": "yesterday"}]),
         InvalidInput, "build_context.live[0].captured_at", "ISO date"),
        (lambda: engine.recall(), InvalidInput, "recall.query", "give a query"),
        (lambda: engine.recall("   "), EmptyQuery, "recall.query", "the query is empty"),
        (lambda: engine.recall(index=[str(tmp_path / "nope")]), NotFound, "recall.index[0]",
         "no such folder"),
        (lambda: engine.job("secret-job-id"), NotFound, "job.job_id", "no such job"),
        (lambda: engine.delete("/nowhere/secret.md"), NotFound, "delete.source", "no such"),
    ]
    for call, cls, field, words in cases:
        err = _error(call)
        assert type(err) is cls, (field, err)
        assert err.details["field"] == field
        assert words in err.message and "secret" not in err.message
    assert engine.jobs() == []  # nothing was queued for a call refused


def test_a_failed_init_leaves_no_lock_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    monkeypatch.delenv("CTX_PASSPHRASE")
    store = tmp_path / "store"
    with pytest.raises(KeyUnavailable) as info:
        init_store(store)
    for way in ("--passphrase-stdin", "CTX_PASSPHRASE", "CTX_KEY_FILE"):
        assert way in info.value.message
    assert not (store / "engine.lock").exists()
    with pytest.raises(KeyUnavailable):
        ContextEngine.open(store)  # the first-use create fails the same way
    assert not (store / "engine.lock").exists()


def test_a_lock_file_is_owner_only_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        with DataDirLock(tmp_path / "engine.lock"):
            pass
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "engine.lock").stat().st_mode) == 0o600
