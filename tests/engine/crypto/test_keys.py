from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.crypto import keys
from engine.crypto.config import KeyConfig
from engine.errors import KeyUnavailable, StoreNotInitialized, WrongKey

CHEAP = KeyConfig(scrypt_n=1024)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    path.mkdir()
    return path


def test_passphrase_wrap_roundtrip(root: Path) -> None:
    key = keys.create_key(root, CHEAP, passphrase="pw-1", use_keychain=False)
    assert len(key) == 32
    assert keys.unlock_key(root, passphrase="pw-1") == key
    raw = (root / "key.json").read_bytes()
    assert key not in raw and key.hex().encode() not in raw
    assert oct((root / "key.json").stat().st_mode & 0o777) == "0o600"


def test_wrong_passphrase_changes_nothing(root: Path) -> None:
    keys.create_key(root, CHEAP, passphrase="right", use_keychain=False)
    before = {p.name: p.read_bytes() for p in root.iterdir()}
    with pytest.raises(WrongKey):
        keys.unlock_key(root, passphrase="wrong")
    assert {p.name: p.read_bytes() for p in root.iterdir()} == before


def test_missing_store_and_missing_passphrase(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(StoreNotInitialized):
        keys.unlock_key(root)
    keys.create_key(root, CHEAP, passphrase="x", use_keychain=False)
    monkeypatch.delenv("CTX_PASSPHRASE")
    with pytest.raises(KeyUnavailable):
        keys.unlock_key(root)


def test_env_passphrase_and_key_file(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX_PASSPHRASE", "from-env")
    key = keys.create_key(root, CHEAP, use_keychain=False)
    monkeypatch.delenv("CTX_PASSPHRASE")
    kf = root / "pass.txt"
    kf.write_text("from-env\n")
    os.chmod(kf, 0o644)
    monkeypatch.setenv("CTX_KEY_FILE", str(kf))
    with pytest.raises(KeyUnavailable, match="owner alone"):
        keys.unlock_key(root)
    os.chmod(kf, 0o600)
    assert keys.unlock_key(root) == key


def test_subkeys_differ_by_label() -> None:
    k = b"\x01" * 32
    assert keys.derive(k, "vault") != keys.derive(k, "name-hash")
    assert keys.derive(k, "vault") == keys.derive(k, "vault")
