"""A vault whose locks another connection holds is busy, not damaged.

After a kill -9 in the middle of a write, the next opener recovers the WAL's locks; on a
loaded machine the open check met that as SQLITE_PROTOCOL ("locking protocol") and said
vault_damaged ("restore it from a backup"): a false alarm (seen in the full suite,
test_kill_during_backup at load 12). The open check now tries again while the vault is
busy, and says store_locked if it stays so. Real SQLCipher files and connections.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlcipher3 import dbapi2 as sqlite

from engine.errors import StoreLocked
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
