"""Round trip: a store of documents, conversations and a coding-session transcript, backed
up while an ingest runs, restored on a fresh HOME with only the passphrase (and again with
only the recovery key), has the same sources and gives the same build_context payloads,
byte for byte. The real model makes the vectors."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from engine import ContextEngine, generate_recovery_key, init_store
from engine.embedding.base import Embedder
from tests.conftest import TEST_PASSPHRASE
from tests.engine.flows.keeping.stores import ctx, fill, fresh_env, state, write_docs


def _wait_for(eng: ContextEngine, job_id: str, files: int, *, unchanged: int = 0) -> None:
    end = time.monotonic() + 120
    while eng.job(job_id).files_done < files or eng.job(job_id).files_unchanged < unchanged:
        assert not eng.job(job_id).final, "the ingest ended before the backup could start"
        assert time.monotonic() < end
        time.sleep(0.01)


def _settled(eng: ContextEngine, job_id: str) -> None:
    """Wait until a paused job stops moving (it waits at its next safe point)."""
    last, still = -1, 0
    while still < 10:
        done = eng.job(job_id).files_done
        still = still + 1 if done == last else 0
        last = done
        time.sleep(0.05)


@pytest.mark.integration
def test_backup_during_ingest_restores_the_same_store(tmp_path: Path, data_dir: Path,
                                                      minilm: Embedder,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX_EMBEDDER", "minilm")
    rk = generate_recovery_key()
    init_store(data_dir, passphrase=TEST_PASSPHRASE, use_keychain=False, recovery_key=rk)
    eng = ContextEngine.open(data_dir, embedder=minilm)
    try:
        fill(eng, tmp_path)
        more = write_docs(tmp_path / "more", 150, tag="more")
        eng.wait(eng.ingest(paths=[str(more)]))
        write_docs(more, 150, tag="a-new")  # stored first; then the 150 unchanged are walked
        # An ingest runs: held at a safe point among the unchanged files, where every file
        # it wrote is ready and none is half written (a half-written one counts in the
        # keyword index's statistics until a restore, like a crash, drops it), so that the
        # store stands still for the comparison. The next test backs up while it writes.
        job = eng.ingest(paths=[str(more)])
        _wait_for(eng, job, 0, unchanged=10)
        eng.pause_ingestion()
        _settled(eng, job)
        snap = eng.job(job)
        assert snap.state == "running" and 0 < snap.files_unchanged < 150 and snap.sources
        before = state(eng)
        # staged ingestion: what the job stored so far is keyword-ready, its vectors wait
        waiting = eng.status().chunks_waiting
        backup = eng.backup(str(tmp_path / "during.ctxbackup"))
        assert state(eng) == before  # a backup changes nothing a search sees
        eng.resume_ingestion()
        assert eng.wait(job).state == "done"
    finally:
        eng.close()
    assert backup.sources == len(before["sources"]) and waiting > 0
    assert backup.vectors == backup.chunks - waiting

    # a fresh machine, only the passphrase (CTX_PASSPHRASE is how a headless one gives it)
    env = fresh_env(tmp_path / "home-a", CTX_PASSPHRASE=TEST_PASSPHRASE, CTX_EMBEDDER="minilm")
    done = ctx(["restore", backup.path], env)
    assert done.returncode == 0, done.stderr
    restored = Path(env["CTX_HOME"])
    monkeypatch.delenv("CTX_PASSPHRASE")
    with ContextEngine.open(restored, create=False, passphrase=TEST_PASSPHRASE,
                            embedder=minilm) as again:
        assert state(again) == before
        assert again.status().chunks_waiting == waiting
        again.warm_up(background=False)  # the restored store makes the vectors that waited
        end = time.monotonic() + 300
        while again.status().sources_waiting and time.monotonic() < end:
            time.sleep(0.1)
        assert again.status().vectors == again.status().chunks

    # another fresh machine, only the recovery key
    env = fresh_env(tmp_path / "home-b", CTX_EMBEDDER="minilm")
    done = ctx(["restore", backup.path, "--recovery-key-stdin"], env, stdin=rk + "\n")
    assert done.returncode == 0, done.stderr
    with ContextEngine.open(Path(env["CTX_HOME"]), create=False, recovery_key=rk,
                            embedder=minilm) as again:
        assert state(again) == before


def test_backup_while_the_writer_writes_is_a_whole_store(tmp_path: Path, data_dir: Path
                                                         ) -> None:
    """Taken while files are being stored: the restored store holds each source whole or
    not at all, exactly as the original holds it, with a vector for every chunk once the
    vectors that waited (staged ingestion) are made."""
    eng = ContextEngine.open(data_dir)
    try:
        fill(eng, tmp_path, docs=8)
        base = {s.uri for s in eng.sources()}
        job = eng.ingest(paths=[str(write_docs(tmp_path / "more", 150, tag="more"))])
        _wait_for(eng, job, 2)
        backup = eng.backup(str(tmp_path / "busy.ctxbackup"))
        assert not eng.job(job).final, "the ingest ended before the backup did"
        eng.wait(job)
        final = {s.uri: (s.content_hash, s.n_chunks, s.tokens) for s in eng.sources()}
    finally:
        eng.close()
    env = fresh_env(tmp_path / "home", CTX_PASSPHRASE=TEST_PASSPHRASE)
    done = ctx(["restore", backup.path], env)
    assert done.returncode == 0, done.stderr
    with ContextEngine.open(Path(env["CTX_HOME"]), create=False) as again:
        got = {s.uri: (s.content_hash, s.n_chunks, s.tokens) for s in again.sources()}
        status = again.status()
        pending = again.rt.vault._query("SELECT count(*) FROM sources WHERE state != 'ready'")
        # sources stored for keyword search whose vectors waited get them at warm-up
        again.warm_up(background=False)
        end = time.monotonic() + 120
        while again.status().sources_waiting and time.monotonic() < end:
            time.sleep(0.05)
        warm = again.status()
    assert base <= set(got) and len(got) < len(final)
    assert all(final[uri] == v for uri, v in got.items())
    assert status.chunks == sum(v[1] for v in got.values())
    assert status.vectors == status.chunks - status.chunks_waiting
    assert warm.vectors == warm.chunks == status.chunks
    assert pending[0][0] == 0
