"""Opening a store: a wrong passphrase is a clear error and changes nothing on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import StoreNotInitialized, WrongKey
from engine.facade import ContextEngine, init_store
from ipc.exit_codes import exit_code


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_wrong_passphrase_changes_nothing(data_dir: Path) -> None:
    with ContextEngine.open(data_dir) as eng:
        eng.wait(eng.ingest(text="the spare key is under the blue flowerpot", title="n"))
    before = _snapshot(data_dir)
    with pytest.raises(WrongKey) as info:
        ContextEngine.open(data_dir, passphrase="not it")
    assert exit_code(info.value) == 4
    assert _snapshot(data_dir) == before
    with ContextEngine.open(data_dir) as eng:  # and the right one still works
        assert eng.status().sources == 1


def test_init_then_open_without_create(data_dir: Path) -> None:
    with pytest.raises(StoreNotInitialized):
        ContextEngine.open(data_dir, create=False)
    init_store(data_dir, passphrase="pw", use_keychain=False)
    with ContextEngine.open(data_dir, passphrase="pw", create=False) as eng:
        assert eng.status().chunks == 0
