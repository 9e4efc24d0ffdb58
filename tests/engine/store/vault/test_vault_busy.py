"""A vault whose locks another connection holds is busy, not damaged.

After a kill -9 in the middle of a write, the next opener recovers the WAL's locks; on a
loaded machine the open check met that as SQLITE_PROTOCOL ("locking protocol") and said
vault_damaged ("restore it from a backup"): a false alarm (seen in the full suite,
test_kill_during_backup at load 12). The open check now tries again while the vault is
busy, and says store_locked if it stays so. Real SQLCipher files and connections.

A kill as a writer starts a new log leaves a WAL index (-shm) that no read-only reader
can use: SQLite retried for 10 s and said SQLITE_PROTOCOL on every open after, for good
(CI, test_kill_during_an_online_rotation; reproduced 2 in ~1,000 kills). The open check
rebuilds such an index with a read-write connection, as any open after a crash does.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from sqlcipher3 import dbapi2 as sqlite

from engine.errors import StoreLocked, WrongKey
from engine.store.vault import integrity

KEY = "11" * 32


def _vault(path: Path) -> None:
    conn = sqlite.connect(str(path), isolation_level=None)
    conn.execute(f"PRAGMA key = \"x'{KEY}'\"")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.close()


def _hold(path: Path) -> sqlite.Connection:
    """A connection holding the vault exclusively (readers get SQLITE_BUSY)."""
    conn = sqlite.connect(str(path), isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA key = \"x'{KEY}'\"")
    conn.execute("PRAGMA locking_mode = EXCLUSIVE")
    conn.execute("BEGIN EXCLUSIVE")
    conn.execute("INSERT INTO t VALUES (2)")
    return conn


def test_busy_errors_are_told_from_damage(tmp_path: Path) -> None:
    path = tmp_path / "vault.db"
    _vault(path)
    holder = _hold(path)
    try:
        reader = integrity.open_readonly(path, KEY, shm=True)
        with pytest.raises(sqlite.OperationalError) as err:
            reader.execute("SELECT count(*) FROM t").fetchone()
        reader.close()
        assert integrity.is_busy(err.value)
        assert integrity.damage_code(err.value) is None
    finally:
        holder.close()
    assert not integrity.is_busy(sqlite.DatabaseError("file is not a database"))


def test_the_open_check_waits_for_a_busy_vault(tmp_path: Path) -> None:
    path = tmp_path / "vault.db"
    _vault(path)
    holder = _hold(path)
    release = threading.Timer(0.5, holder.close)
    release.start()
    try:
        integrity.probe(path, KEY, pages=False)  # busy at first; sound once released
    finally:
        release.cancel()
        holder.close()


def test_a_vault_that_stays_busy_is_locked_not_damaged(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(integrity, "BUSY_TRIES", 2)
    path = tmp_path / "vault.db"
    _vault(path)
    holder = _hold(path)
    try:
        with pytest.raises(StoreLocked, match="busy"):
            integrity.probe(path, KEY, pages=False)
    finally:
        holder.close()


def _stale(tmp_path: Path, how: str) -> Path:
    """A vault whose content is all in vault.db, beside a log holding only its header and
    an index left as a kill leaves it: ``never set`` (zeros), or ``other log`` (set up
    for the empty log before, as the killed writer found it, not for its new one)."""
    path = tmp_path / how.replace(" ", "-") / "vault.db"
    path.parent.mkdir()
    _vault(path)
    conn = sqlite.connect(str(path), isolation_level=None)
    conn.execute(f"PRAGMA key = \"x'{KEY}'\"")
    conn.execute("SELECT count(*) FROM t").fetchone()  # an index for the empty log
    index = path.with_name("vault.db-shm").read_bytes()
    conn.execute("INSERT INTO t VALUES (2)")  # a new log: its header, with new salts
    log_head = path.with_name("vault.db-wal").read_bytes()[:32]
    conn.close()  # folds the row into vault.db
    path.with_name("vault.db-wal").write_bytes(log_head)
    path.with_name("vault.db-shm").write_bytes(bytes(len(index)) if how == "never set"
                                              else index)
    return path


@pytest.mark.parametrize("how", ["never set", "other log"])
def test_a_wal_index_a_kill_left_stale_is_rebuilt(tmp_path: Path, how: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(integrity, "BUSY_TRIES", 1)  # before the fix: 10 s, then locked
    path = _stale(tmp_path, how)
    assert integrity.stale_index(path)
    integrity.probe(path, KEY, pages=True)
    reader = integrity.open_readonly(path, KEY)
    assert reader.execute("SELECT x FROM t ORDER BY x").fetchall() == [(1,), (2,)]
    reader.close()


def test_a_live_or_absent_wal_index_is_not_stale(tmp_path: Path) -> None:
    path = tmp_path / "vault.db"
    _vault(path)
    assert not integrity.stale_index(path)  # closed cleanly: no log, no index
    writer = sqlite.connect(str(path), isolation_level=None)
    writer.execute(f"PRAGMA key = \"x'{KEY}'\"")
    writer.execute("INSERT INTO t VALUES (2)")
    try:
        assert not integrity.stale_index(path)
        integrity.probe(path, KEY, pages=False)
    finally:
        writer.close()


@pytest.mark.slow
def test_a_stale_index_met_as_locking_protocol_is_rebuilt(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever state the header check misses: SQLITE_PROTOCOL (after SQLite's own 10 s of
    tries) rebuilds the index once, then the check is run again."""
    monkeypatch.setattr(integrity, "BUSY_TRIES", 1)
    monkeypatch.setattr(integrity, "stale_index", lambda path: False)
    path = _stale(tmp_path, "other log")
    kept = tmp_path / "kept"
    shutil.copytree(path.parent, kept)
    integrity.probe(path, KEY, pages=False)
    with pytest.raises(StoreLocked):  # with the rebuild off: what every open said before
        monkeypatch.setattr(integrity, "rebuild_index", lambda path, hexkey: True)
        integrity.probe(kept / "vault.db", KEY, pages=False)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_wrong_key_leaves_a_stale_indexed_vault_as_found(tmp_path: Path) -> None:
    """A log holding committed frames beside an index never set: a read-write connection
    under another store's key folded the log into vault.db as it closed (vault.db
    rewritten, the log and index gone) before the open was refused."""
    live, found = tmp_path / "live", tmp_path / "found"
    live.mkdir()
    found.mkdir()
    _vault(live / "vault.db")
    writer = sqlite.connect(str(live / "vault.db"), isolation_level=None)
    writer.execute(f"PRAGMA key = \"x'{KEY}'\"")
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("INSERT INTO t VALUES (2)")  # in the log only
    for name in ("vault.db", "vault.db-wal", "vault.db-shm"):
        shutil.copy(live / name, found / name)
    writer.close()
    shm = found / "vault.db-shm"
    shm.write_bytes(bytes(shm.stat().st_size))
    path = found / "vault.db"
    assert integrity.stale_index(path)
    before = _files(found)
    with pytest.raises(WrongKey):
        integrity.probe(path, "22" * 32, pages=False)
    assert _files(found) == before
    integrity.probe(path, KEY, pages=False)  # the store's own key: read (rebuilt) as ever
    reader = integrity.open_readonly(path, KEY)
    assert reader.execute("SELECT x FROM t ORDER BY x").fetchall() == [(1,), (2,)]
    reader.close()


@pytest.mark.slow
def test_a_wrong_key_on_a_stuck_index_is_a_wrong_key(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """An index no read-only reader can use, under another store's key: not rebuilt (files
    as found), and said as a wrong key, not as a lock (after SQLite's own 10 s of tries)."""
    monkeypatch.setattr(integrity, "BUSY_TRIES", 1)
    path = _stale(tmp_path, "other log")
    before = _files(path.parent)
    with pytest.raises(WrongKey):
        integrity.probe(path, "22" * 32, pages=False)
    assert _files(path.parent) == before
