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


def test_a_big_vaults_page_check_starts_once_the_vectors_are_in_memory(
        data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check of every page of a big vault runs in a thread, started after the open
    has read the sealed vectors: at 1M chunks (a 5.5 GB vault) hashing the pages beside
    that read made the open 2-4 times slower (docs/performance.md, issue 35). It still
    runs, to the end, and finds nothing on a sound vault."""
    from engine.store.vault import guard
    from engine.store.vectors.memory import MemoryVectors

    with ContextEngine.open(data_dir) as eng:
        eng.wait(eng.ingest(text="the tide tables are pinned by the harbour door", title="t"))
    monkeypatch.setattr(guard, "PAGES_AT_OPEN_BYTES", 0)  # every vault checked in a thread
    order: list[str] = []
    load, check = MemoryVectors.load, guard.VaultGuard.check_pages_later

    def loading(self: MemoryVectors, *args: object, **kw: object) -> None:
        order.append("vectors")
        load(self, *args, **kw)  # type: ignore[arg-type]

    def checking(self: guard.VaultGuard) -> None:
        order.append("pages")
        check(self)

    monkeypatch.setattr(MemoryVectors, "load", loading)
    monkeypatch.setattr(guard.VaultGuard, "check_pages_later", checking)
    with ContextEngine.open(data_dir) as eng:
        eng.rt.vault.guard.wait(60)
        assert order == ["vectors", "pages"]
        assert eng.rt.vault.guard.damage is None
        assert eng.search("tide tables", k=1)[0].title == "t"
