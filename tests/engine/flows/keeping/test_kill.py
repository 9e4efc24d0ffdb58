"""kill -9 at random moments, 20 times each, during a backup, a restore, a passphrase
change and a key rotation: the store always opens, with the old key or the new one, and
loses nothing; a backup cut short never has a whole backup's name, nor reads as whole.

Each child process repeats its operation in a loop, so that a kill at a random moment
falls inside one; the parent checks the store after every kill."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine import BackupDamaged, ContextEngine, init_store, verify_backup_file
from engine.crypto import keys
from tests.conftest import TEST_PASSPHRASE
from tests.engine.flows.keeping.stores import REPO, write_docs

KILLS = 20
SEED = int(os.environ.get("CTX_KILL_SEED", "24"))
FIRST_WITHIN = 300  # seconds: a child that takes longer to start or finish a loop is stuck
PREAMBLE = "import sys, itertools\nfrom pathlib import Path\n"


def _child(code: str, *args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen([sys.executable, "-c", PREAMBLE + textwrap.dedent(code), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=env, cwd=REPO)


def _kill_after_ready(proc: subprocess.Popen[str], rng: random.Random, most: float, *,
                      after_first: bool = False) -> int:
    """Kill ``proc`` a random time after it says "ready" (with ``after_first``: after its
    first "done", so that a loaded machine cannot make every kill fall before the first
    loop ends); how many loops it finished. A child that never gets there is killed after
    ``FIRST_WITHIN`` seconds, and the test fails saying so."""
    assert proc.stdout is not None
    watchdog = threading.Timer(FIRST_WITHIN, proc.kill)
    watchdog.start()
    try:
        line = proc.stdout.readline()
        assert line.strip() == "ready", f"the child did not start: {line!r}"
        done = 0
        if after_first:
            line = proc.stdout.readline()
            assert line.startswith("done"), f"no loop finished in {FIRST_WITHIN} s: {line!r}"
            done = 1
    finally:
        watchdog.cancel()
    time.sleep(rng.uniform(0.0, most))
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    done += sum(1 for ln in proc.stdout if ln.startswith("done"))
    proc.stdout.close()
    return done


@pytest.fixture
def store(tmp_path: Path, data_dir: Path) -> Iterator[tuple[Path, list[tuple[str, str]]]]:
    """A passphrase store of a few hundred chunks, and its sources (uri, content hash)."""
    init_store(data_dir, passphrase=TEST_PASSPHRASE, use_keychain=False)
    with ContextEngine.open(data_dir, create=False) as eng:
        eng.wait(eng.ingest(paths=[str(write_docs(tmp_path / "docs", 80))]))
        sources = sorted((s.uri, s.content_hash) for s in eng.sources())
    yield data_dir, sources


def _sources(root: Path, *, passphrase: str | None = None, recovery_key: str | None = None
             ) -> list[tuple[str, str]]:
    with ContextEngine.open(root, create=False, passphrase=passphrase,
                            recovery_key=recovery_key) as eng:
        status = eng.status()
        assert status.vectors == status.chunks
        return sorted((s.uri, s.content_hash) for s in eng.sources())


BACKUP = """
    from engine import ContextEngine
    eng = ContextEngine.open(sys.argv[1], create=False)
    print("ready", flush=True)
    for i in itertools.count():
        eng.backup(sys.argv[2])
        print("done", flush=True)
"""


@pytest.mark.slow
def test_kill_during_backup(store: tuple[Path, list[tuple[str, str]]], tmp_path: Path) -> None:
    root, sources = store
    out = tmp_path / "backups"
    out.mkdir()
    dest = out / "store.ctxbackup"
    rng = random.Random(SEED)
    finished = 0
    for i in range(KILLS):
        finished += _kill_after_ready(_child(BACKUP, str(root), str(dest)), rng, 0.6,
                                      after_first=i == KILLS - 1)
        for path in out.iterdir():
            if path == dest:
                assert verify_backup_file(path, passphrase=TEST_PASSPHRASE).verified
            else:  # what a killed backup leaves: never a whole backup's name, never whole
                assert path.name.endswith(".partial"), path.name
                with pytest.raises(BackupDamaged):
                    verify_backup_file(path, passphrase=TEST_PASSPHRASE)
        assert _sources(root) == sources
    assert finished > 0, "no backup ever finished: the kills all fell before the first"
    with ContextEngine.open(root, create=False) as eng:
        eng.backup(str(dest))  # a later backup to the same name clears what was left
    assert [p.name for p in out.iterdir()] == [dest.name]


RESTORE = """
    from engine import restore_backup
    print("ready", flush=True)
    for i in itertools.count():
        if sys.argv[3] == "replace":
            restore_backup(sys.argv[1], sys.argv[2], replace=True)
        else:
            restore_backup(sys.argv[1], Path(sys.argv[2]) / f"r{i}")
        print("done", flush=True)
"""


@pytest.mark.slow
def test_kill_during_restore(store: tuple[Path, list[tuple[str, str]]], tmp_path: Path
                             ) -> None:
    root, sources = store
    with ContextEngine.open(root, create=False) as eng:
        backup = eng.backup(str(tmp_path / "store.ctxbackup")).path
    rng = random.Random(SEED + 1)
    same = tmp_path / "replaced" / "same"
    same.parent.mkdir()
    from engine import restore_backup

    restore_backup(backup, same)
    for n in range(KILLS):
        if n % 2:
            _kill_after_ready(_child(RESTORE, backup, str(same), "replace"), rng, 0.8)
            assert _sources(same) == sources  # the old store or the restored one: whole
            for kept in same.parent.iterdir():  # each store swapped out is whole too
                if kept != same and not (kept / "restore.partial").exists() \
                        and any(kept.iterdir()):
                    assert (kept / "key.json").is_file() and (kept / "vault.db").is_file()
            continue
        fresh = tmp_path / f"fresh{n}"
        fresh.mkdir()
        done = _kill_after_ready(_child(RESTORE, backup, str(fresh), "new"), rng, 0.8)
        dirs = sorted((p.name for p in fresh.iterdir() if not p.name.startswith(".")),
                      key=lambda name: int(name[1:]))
        assert dirs == [f"r{i}" for i in range(len(dirs))] and len(dirs) in (done, done + 1)
        last = fresh / f"r{len(dirs) - 1}" if dirs else None
        if last is not None:  # the restore the kill may have cut: there whole, or not at all
            assert _sources(last) == sources
        for staging in (p for p in fresh.iterdir() if p.name.startswith(".")):
            # marked, or still empty: the next restore clears it
            assert (staging / "restore.partial").exists() or not any(staging.iterdir())
        restore_backup(backup, fresh / f"r{len(dirs)}")
        assert not [p for p in fresh.iterdir() if p.name.startswith(".")]


PASSPHRASE = """
    from engine import change_passphrase
    a, b = sys.argv[2], sys.argv[3]
    print("ready", flush=True)
    for i in itertools.count():
        change_passphrase(sys.argv[1], b, passphrase=a)
        print("done", flush=True)
        a, b = b, a
"""


@pytest.mark.slow
def test_kill_during_passphrase_change(store: tuple[Path, list[tuple[str, str]]],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    root, sources = store
    monkeypatch.setenv("CTX__KEYS__SCRYPT_N", str(2 ** 14))  # a change takes ~0.1 s
    monkeypatch.delenv("CTX_PASSPHRASE")
    old, new = TEST_PASSPHRASE, "the other passphrase"
    key = keys.unlock_key(root, passphrase=old)
    rng = random.Random(SEED + 2)
    for _ in range(KILLS):
        done = _kill_after_ready(_child(PASSPHRASE, str(root), old, new), rng, 0.8)
        if done % 2:
            old, new = new, old
        # a kill between the change's rename and its "done" line leaves one change more
        # than counted: either passphrase may be in force, but exactly one, never both
        opens = []
        for candidate in (old, new):
            try:
                assert keys.unlock_key(root, passphrase=candidate) == key  # the same data key
                opens.append(candidate)
            except keys.WrongKey:
                pass
        assert len(opens) == 1, "exactly one of the two passphrases opens the store"
        if opens[0] != old:
            old, new = new, old
        assert _sources(root, passphrase=old) == sources


ROTATE = """
    from engine import rotate_key
    print("ready", flush=True)
    for i in itertools.count():
        rotate_key(sys.argv[1])
        print("done", flush=True)
"""


@pytest.mark.slow
def test_kill_during_key_rotation(store: tuple[Path, list[tuple[str, str]]]) -> None:
    root, sources = store
    with ContextEngine.open(root, create=False) as eng:
        hits = [(h.chunk_id, h.text) for h in eng.search("lighthouse log", k=8)]
    record = keys.read_record(root)
    assert record is not None
    seen = {record.key_id}
    rng = random.Random(SEED + 3)
    finished = 0
    for i in range(KILLS):
        finished += _kill_after_ready(_child(ROTATE, str(root)), rng, 1.0,
                                      after_first=i == KILLS - 1)
        with ContextEngine.open(root, create=False) as eng:  # finishes or undoes it
            assert sorted((s.uri, s.content_hash) for s in eng.sources()) == sources
            assert [(h.chunk_id, h.text) for h in eng.search("lighthouse log", k=8)] == hits
            status = eng.status()
            assert status.vectors == status.chunks
        record = keys.read_record(root)
        assert record is not None and record.pending is None
        seen.add(record.key_id)
    assert finished > 0 and len(seen) > 1, "no rotation ever finished"
