"""`ContextEngine.rotate_key`: the running engine moves its store to a new data key as a
job (kind "rotate") while reads go on: searches and builds are answered throughout,
writes wait behind it; after it, the vault opens with the new key and not the old one,
nothing is lost, and the engine (and a later open) goes on with the new key. A kill -9
at any moment leaves a store that opens, with one key or the other, whole."""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import pytest

from engine import ContextEngine, StoreLocked, init_store, prepare_rotation
from engine import paths as P
from engine.crypto import keys
from engine.flows.keeping import key_changes as keychange
from engine.store.vault.rekey import opens_with
from tests.conftest import TEST_PASSPHRASE
from tests.engine.flows.keeping.stores import write_docs
from tests.engine.flows.keeping.test_kill import KILLS, SEED, _child, _kill_after_ready

QUERY = "lighthouse log"


def _state(eng: ContextEngine) -> tuple[list[tuple[str, str]], list[tuple[int, str]]]:
    return (sorted((s.uri, s.content_hash) for s in eng.sources()),
            [(h.chunk_id, h.text) for h in eng.search(QUERY, k=8)])


@pytest.fixture
def store(tmp_path: Path, data_dir: Path) -> Path:
    init_store(data_dir, passphrase=TEST_PASSPHRASE, use_keychain=False)
    with ContextEngine.open(data_dir, create=False) as eng:
        eng.wait(eng.ingest(paths=[str(write_docs(tmp_path / "docs", 60))]))
    return data_dir


def test_reads_go_on_while_the_running_engine_rotates_its_key(
        store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The export is held at its start until the test has searched, built a context and
    queued an ingest: the reads are answered while the job runs with every write held
    (the ingest waits), then a reader thread keeps searching through the export and the
    file swap. None fails, and each answer is the same as before the rotation."""
    paused, go = threading.Event(), threading.Event()
    real_export = keychange.export_rekeyed

    def held_export(*args: Any, **kwargs: Any) -> Any:
        paused.set()
        assert go.wait(60)
        return real_export(*args, **kwargs)
    monkeypatch.setattr(keychange, "export_rekeyed", held_export)

    with ContextEngine.open(store, create=False) as eng:
        before = _state(eng)
        old = eng._keeping.key
        new_id = prepare_rotation(store)
        started = eng.rotate_key(wait=False)
        assert started.job and started.key_id == new_id != started.old_key_id
        assert paused.wait(60), "the rotation job never reached its export"
        assert eng.job(started.job).kind == "rotate"
        assert eng.job(started.job).state == "running"
        # reads while every write is held: answered, the same as before
        assert _state(eng) == before
        built = eng.build_context(QUERY, budget=400)  # it records access: kept for later
        assert built.items
        assert eng.status().chunks > 0
        with pytest.raises(StoreLocked):
            eng.backup(str(tmp_path / "during.ctxbackup"))  # sealed under which key?
        late = tmp_path / "late"
        write_docs(late, 2, tag="late")
        ingested: list[str] = []
        writer = threading.Thread(target=lambda: ingested.append(
            eng.ingest(paths=[str(late)], wait=True)))
        writer.start()  # a write: held until the rotation is done
        writer.join(0.5)
        assert writer.is_alive() and not ingested

        answers: list[Any] = []
        stop = threading.Event()

        def reader() -> None:  # the answers read wholly while the rotation ran
            while not stop.is_set():
                try:
                    answer = _state(eng)
                    if eng.job(started.job).state == "running":
                        answers.append(answer)
                except Exception as exc:  # noqa: BLE001 - every failure is counted
                    answers.append(exc)
        thread = threading.Thread(target=reader)
        thread.start()
        go.set()
        done = eng.wait(started.job, timeout=120)
        stop.set()
        thread.join(60)
        assert done.state == "done", done.error
        writer.join(120)
        assert ingested and eng.job(ingested[0]).state == "done"
        failures = [a for a in answers if isinstance(a, Exception)]
        assert not failures, failures[:3]
        assert answers and all(a == before for a in answers)
        # the engine goes on with the new key: reads, and the ingest written after
        assert eng._keeping.key != old and keys.key_id(eng._keeping.key) == new_id
        after = _state(eng)
        assert after[1] == before[1]
        assert len(after[0]) == len(before[0]) + 2
        eng.backup(str(tmp_path / "after.ctxbackup"))
    vault = P.vault_path(store)
    assert not opens_with(vault, keys.derive(old, "vault"))  # the old key is refused
    record = keys.read_record(store)
    assert record is not None and record.pending is None and record.key_id == new_id
    assert not (store / "vault.db.rotating").exists()
    with ContextEngine.open(store, create=False) as eng:  # the passphrase opens the new key
        assert keys.key_id(eng._keeping.key) == new_id
        assert _state(eng) == after
        status = eng.status()
        assert status.vectors == status.chunks


def test_a_rotation_not_prepared_or_cancelled_leaves_the_key(
        store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without `prepare_rotation` the engine refuses; a rotation cancelled while queued,
    or while it exports, keeps the old key and forgets the one prepared."""
    from engine import ConfigError

    paused, go = threading.Event(), threading.Event()
    real_export = keychange.export_rekeyed

    def held_export(*args: Any, **kwargs: Any) -> Any:
        paused.set()
        assert go.wait(60)
        return real_export(*args, **kwargs)
    monkeypatch.setattr(keychange, "export_rekeyed", held_export)
    with ContextEngine.open(store, create=False) as eng:
        before, old = _state(eng), keys.key_id(eng._keeping.key)
        with pytest.raises(ConfigError):
            eng.rotate_key()
        eng.pause_ingestion()  # holds the writer's queue: the rotation stays queued
        blocker = eng.ingest(text="a queued text", title="t", wait=False)
        prepare_rotation(store)
        queued = eng.rotate_key(wait=False)
        assert eng.cancel_job(queued.job).state == "cancelled"
        record = keys.read_record(store)
        assert record is not None and record.pending is None
        eng.resume_ingestion()
        eng.wait(blocker, timeout=120)
        before = _state(eng)

        prepare_rotation(store)
        running = eng.rotate_key(wait=False)
        assert paused.wait(60)
        eng.cancel_job(running.job)
        go.set()
        assert eng.wait(running.job, timeout=120).state == "cancelled"
        assert keys.key_id(eng._keeping.key) == old
        record = keys.read_record(store)
        assert record is not None and record.pending is None
        assert not (store / "vault.db.rotating").exists()
        assert _state(eng) == before
    with ContextEngine.open(store, create=False) as eng:
        assert keys.key_id(eng._keeping.key) == old
        assert _state(eng) == before


ROTATE_ONLINE = """
    from engine import ContextEngine, prepare_rotation
    eng = ContextEngine.open(sys.argv[1], create=False)
    eng.search("lighthouse log")
    print("ready", flush=True)
    for i in itertools.count():
        prepare_rotation(sys.argv[1])
        eng.rotate_key()
        print("done", flush=True)
"""


@pytest.mark.slow
def test_kill_during_an_online_rotation(store: Path) -> None:
    """kill -9 at random moments of an engine rotating its key again and again: the store
    opens every time (the rotation finished or undone), whole, with one pending-free key."""
    with ContextEngine.open(store, create=False) as eng:
        before = _state(eng)
    record = keys.read_record(store)
    assert record is not None
    seen = {record.key_id}
    rng = random.Random(SEED + 5)
    finished = 0
    for i in range(KILLS):
        finished += _kill_after_ready(_child(ROTATE_ONLINE, str(store)), rng, 1.5,
                                      after_first=i == KILLS - 1)
        with ContextEngine.open(store, create=False) as eng:  # finishes or undoes it
            assert _state(eng) == before
            status = eng.status()
            assert status.vectors == status.chunks
        record = keys.read_record(store)
        assert record is not None and record.pending is None
        assert not (store / "vault.db.rotating").exists()
        seen.add(record.key_id)
    assert finished > 0 and len(seen) > 1, "no rotation ever finished"


def test_a_second_prepare_during_a_running_rotation_is_refused(
        store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two `ctx key rotate` at once: the second one's prepare, while the first one's job
    runs, is refused (it used to replace the pending key under the job, and the job then
    settled key.json on a key the vault was not under: a store that opens with neither).
    The running rotation ends on its own key and the store opens after it."""
    paused, go = threading.Event(), threading.Event()
    real_swap = keychange.swap_in

    def held_swap(*args: Any, **kwargs: Any) -> Any:
        paused.set()
        assert go.wait(60)
        return real_swap(*args, **kwargs)
    monkeypatch.setattr(keychange, "swap_in", held_swap)

    with ContextEngine.open(store, create=False) as eng:
        before = _state(eng)
        new_id = prepare_rotation(store)
        started = eng.rotate_key(wait=False)
        assert started.job and paused.wait(60)
        with pytest.raises(StoreLocked, match="rotation is under way"):
            prepare_rotation(store)
        record = keys.read_record(store)
        assert record is not None and record.pending is not None
        assert record.pending["key_id"] == new_id  # the running job's key, kept
        go.set()
        assert eng.wait(started.job, timeout=120).state == "done"
        assert keys.key_id(eng._keeping.key) == new_id and _state(eng) == before
    record = keys.read_record(store)
    assert record is not None and record.key_id == new_id and record.pending is None
    with ContextEngine.open(store, create=False) as again:
        assert _state(again) == before
    assert prepare_rotation(store) != new_id  # with no job running, a prepare goes on


def test_a_prepare_that_replaced_the_key_of_a_queued_rotation_fails_it_cleanly(
        store: Path) -> None:
    """A second `ctx key rotate` prepared while the first one's job still waited in the
    queue: the job fails before writing anything (it used to rotate to the second key
    while telling the first caller the first key's id); the store keeps its key."""
    with ContextEngine.open(store, create=False) as eng:
        before = _state(eng)
        old_id = keys.key_id(eng._keeping.key)
        prepare_rotation(store)
        eng.pause_ingestion()  # the job waits in the queue
        started = eng.rotate_key(wait=False)
        assert started.job
        second = prepare_rotation(store)  # no job holds the lock yet: it goes on
        eng.resume_ingestion()
        ended = eng.wait(started.job, timeout=120)
        assert ended.state == "failed" and ended.error is not None
        assert "replaced" in ended.error.message
        assert keys.key_id(eng._keeping.key) == old_id and _state(eng) == before
    record = keys.read_record(store)
    assert record is not None and record.key_id == old_id
    assert record.pending is not None and record.pending["key_id"] == second
    with ContextEngine.open(store, create=False) as again:  # undoes the stale prepare
        assert _state(again) == before
    record = keys.read_record(store)
    assert record is not None and record.key_id == old_id and record.pending is None
