"""Changing how the data key is kept: passphrase, keychain, recovery key. The data never
changes; the old way stops working, the new one works, and a lost keychain is not a
lost store."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engine import (
    ContextEngine,
    KeyUnavailable,
    WrongKey,
    change_passphrase,
    generate_recovery_key,
    init_store,
    renew_recovery_key,
    use_keychain,
    use_passphrase,
)
from engine.crypto import keys
from tests.keyring_file import entries

PASS = os.environ.get("CTX_PASSPHRASE", "correct horse battery staple")


def _fill(root: Path) -> list[tuple[str, str]]:
    with ContextEngine.open(root, create=False) as eng:
        for i in range(6):
            eng.ingest(text=f"Tide table {i}: the harbour floods at {i} in the morning.",
                       title=f"tides {i}", wait=True)
        return sorted((s.uri, s.content_hash) for s in eng.sources())


def _sources(root: Path, *, passphrase: str | None = None, recovery_key: str | None = None
             ) -> list[tuple[str, str]]:
    with ContextEngine.open(root, create=False, passphrase=passphrase,
                            recovery_key=recovery_key) as eng:
        return sorted((s.uri, s.content_hash) for s in eng.sources())


def test_new_passphrase_replaces_the_old(data_dir: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    init_store(data_dir, passphrase=PASS, use_keychain=False)
    before = _fill(data_dir)
    monkeypatch.delenv("CTX_PASSPHRASE")
    change_passphrase(data_dir, "a brand new passphrase", passphrase=PASS)
    with pytest.raises(WrongKey):
        _sources(data_dir, passphrase=PASS)
    assert _sources(data_dir, passphrase="a brand new passphrase") == before
    with pytest.raises(WrongKey):
        change_passphrase(data_dir, "another one here", passphrase=PASS)


def test_recovery_key_resets_a_forgotten_passphrase(data_dir: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    rk = generate_recovery_key()
    init_store(data_dir, passphrase=PASS, use_keychain=False, recovery_key=rk)
    before = _fill(data_dir)
    monkeypatch.delenv("CTX_PASSPHRASE")
    with pytest.raises(KeyUnavailable, match="recovery key"):
        _sources(data_dir)
    assert _sources(data_dir, recovery_key=rk) == before
    assert _sources(data_dir, passphrase=rk) == before  # typed where a passphrase is asked
    change_passphrase(data_dir, "remembered this time", recovery_key=rk)
    assert _sources(data_dir, passphrase="remembered this time") == before


def test_a_new_recovery_key_retires_the_old_one(data_dir: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    old = generate_recovery_key()
    init_store(data_dir, passphrase=PASS, use_keychain=False, recovery_key=old)
    before = _fill(data_dir)
    result = renew_recovery_key(data_dir, passphrase=PASS)
    assert result.recovery_key and result.recovery_key != old and result.has_recovery
    assert result.recovery_key not in (data_dir / "key.json").read_text()
    monkeypatch.delenv("CTX_PASSPHRASE")
    with pytest.raises(WrongKey, match="does not belong"):
        _sources(data_dir, recovery_key=old)
    assert _sources(data_dir, recovery_key=result.recovery_key) == before


def test_switch_to_keychain_and_back(data_dir: Path, file_keyring: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    init_store(data_dir, passphrase=PASS, use_keychain=False)
    before = _fill(data_dir)
    use_keychain(data_dir, passphrase=PASS)
    record = keys.read_record(data_dir)
    assert record is not None and record.method == "keychain" and not record.wrapped
    assert list(entries()) == [f"ctx/{record.keychain_account}"]
    monkeypatch.delenv("CTX_PASSPHRASE")
    assert _sources(data_dir) == before  # nothing to type: the keychain has it
    use_passphrase(data_dir, "back to a passphrase")
    assert entries() == {}  # the keychain entry went with the switch
    with pytest.raises(KeyUnavailable):
        _sources(data_dir)
    assert _sources(data_dir, passphrase="back to a passphrase") == before


def test_lost_keychain_opens_with_the_recovery_key_and_loses_nothing(
        data_dir: Path, file_keyring: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rk = generate_recovery_key()
    monkeypatch.delenv("CTX_PASSPHRASE")
    init_store(data_dir, recovery_key=rk)
    record = keys.read_record(data_dir)
    assert record is not None and record.method == "keychain"
    before = _fill(data_dir)
    with ContextEngine.open(data_dir, create=False) as eng:
        hits = [(h.chunk_id, h.text) for h in eng.search("harbour floods", k=5)]
    file_keyring.write_text("{}")  # a new laptop, a reset keychain
    with pytest.raises(KeyUnavailable, match="missing from the OS keychain"):
        _sources(data_dir)
    assert _sources(data_dir, recovery_key=rk) == before
    monkeypatch.setenv("CTX_RECOVERY_KEY", rk)  # headless, as CI would
    with ContextEngine.open(data_dir, create=False) as eng:
        assert [(h.chunk_id, h.text) for h in eng.search("harbour floods", k=5)] == hits
    monkeypatch.delenv("CTX_RECOVERY_KEY")
    use_keychain(data_dir, recovery_key=rk)  # the key goes back into the keychain
    assert _sources(data_dir) == before


def test_a_version_1_key_record_still_opens_and_is_upgraded(data_dir: Path) -> None:
    init_store(data_dir, passphrase=PASS, use_keychain=False)
    before = _fill(data_dir)
    record = json.loads((data_dir / "key.json").read_text())
    v1 = {k: record[k] for k in ("method", "key_id", "salt", "nonce", "wrapped", "scrypt_n",
                                 "scrypt_r", "scrypt_p")}
    (data_dir / "key.json").write_text(json.dumps({"version": 1, **v1}))
    assert _sources(data_dir) == before
    renew_recovery_key(data_dir)
    upgraded = keys.read_record(data_dir)
    assert upgraded is not None and upgraded.version == 2 and upgraded.store_id
    assert _sources(data_dir) == before
