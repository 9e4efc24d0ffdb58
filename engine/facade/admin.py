"""Making a store, and repairing one, before (or instead of) an engine serving it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from engine import paths as P
from engine.api import RepairResult
from engine.config import Config, load_config
from engine.crypto import keys
from engine.embedding.base import Embedder
from engine.facade.core import ContextEngine
from engine.facade.lifecycle import store_exists
from engine.flows.opening import new_vault, prepare_root, repair_layout
from engine.store.vault.lock import DataDirLock


def init_store(data_dir: str | Path | None = None, *, passphrase: str | None = None,
               use_keychain: bool | None = None, config: Config | None = None,
               recovery_key: str | None = None) -> Path:
    """Create a new, empty store (its data key and vault). Refuses an existing one, or
    any part of one; a folder holding other files is used only because it was asked.
    ``recovery_key`` (``generate_recovery_key()``, shown to the user) can unlock it too."""
    root, _ = prepare_root(data_dir, create=True, explicit_init=True)
    cfg = config or load_config(root)
    lock = DataDirLock(P.lock_path(root))
    lock.acquire()
    try:
        key = keys.create_key(root, cfg.keys, passphrase=passphrase, use_keychain=use_keychain,
                              recovery_key=recovery_key)
        new_vault(root, key, cfg).close()
    except BaseException:
        if not store_exists(root):  # nothing was made: no lock file is left behind either
            lock.discard()
        raise
    finally:
        lock.release()
    return root


def repair_store(data_dir: str | Path | None = None, *, passphrase: str | None = None,
                 embedder: Embedder | None = None) -> RepairResult:
    """`ctx repair`: set aside a vectors/ that cannot be opened, then rebuild every
    vector from the vault and drop embedding-cache rows no chunk uses."""
    from engine.flows.keeping.key_changes import settle_closed

    settle_closed(data_dir)  # a key rotation cut short is finished (or undone) first
    moved = repair_layout(data_dir, passphrase=passphrase)
    eng = ContextEngine.open(data_dir, passphrase=passphrase, embedder=embedder, create=False,
                             auto_repair=False)
    try:
        return dataclasses.replace(eng.repair(), set_aside=dict(moved))
    finally:
        eng.close()

