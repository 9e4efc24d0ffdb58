"""Can this process open the store? A cheap probe, without opening it.

Used before starting an engine in the background (a CLI command, an agent's
hook): it reads the key record and tries the data dir lock, and imports
nothing heavy (no model, no vector store), so that a hook can tell in a few
milliseconds that the key is missing from its environment or that another
process holds the store, and say so, instead of starting a server that would
fail after seconds.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from engine import paths as P
from engine.errors import ConfigError, CtxError, KeyUnavailable, StoreLocked

__all__ = ["StoreProbe", "probe_store"]


@dataclass(frozen=True)
class StoreProbe:
    """What :func:`probe_store` found; ``problem`` is None when an engine could open the store.

    ``key``: "keychain", "passphrase-env" (CTX_PASSPHRASE or CTX_KEY_FILE),
    "none" (nothing here could unlock or create the key) or "new" (no store
    yet: it is created on first open, with the keychain or the environment's key).
    """

    data_dir: Path
    exists: bool
    key: str
    locked: bool
    problem: CtxError | None


def _key_method(root: Path) -> str | None:
    """The key record's ``method`` (None: no store), read without loading the crypto stack."""
    path = P.keyfile_path(root)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: unreadable key record") from exc
    return str(data.get("method")) if isinstance(data, dict) else "passphrase"


def _key_source(root: Path) -> tuple[bool, str]:
    method = _key_method(root)
    from engine.crypto import keys

    headless = keys.headless_key_available()
    if method is None:

        return False, "new" if headless or keys.keychain_available() else "none"
    if method == "keychain":
        return True, "keychain"
    return True, "passphrase-env" if headless else "none"


def _locked(root: Path) -> bool:
    from engine.store.vault.lock import DataDirLock

    if not root.is_dir():
        return False
    lock = DataDirLock(P.lock_path(root))
    try:
        lock.acquire()
    except StoreLocked:
        return True
    lock.release()
    return False


def layout_problem(root: Path) -> CtxError | None:
    """Why no engine may open (or make) a store at ``root`` as it is, read without
    changing anything: a damaged or foreign folder, or an explicit data dir (not the
    default, which is made on first use) that holds no store yet."""
    from engine.store.vault.layout import check_can_create, check_existing, read_layout

    try:
        layout = read_layout(root)
        if layout.has_store or root != P.data_dir():
            check_existing(layout)
        else:
            check_can_create(layout, explicit_init=False)
    except CtxError as exc:
        return exc
    return None


def probe_store(data_dir: str | os.PathLike[str] | None = None, *, unlock: bool = False
                ) -> StoreProbe:
    """Whether the store of ``data_dir`` exists, can be unlocked here, and is free.
    A data dir that cannot hold this store is reported (``key`` "none") without a lock
    file or anything else made in it. With ``unlock``, a passphrase from the environment
    is tried on the key record (one KDF run, about 0.1 s): a wrong one is ``key`` "none"
    with the ``wrong_key`` problem, found before an engine is started to fail on it."""
    root = P.data_dir(data_dir)
    problem = layout_problem(root)
    if problem is not None:
        return StoreProbe(root, root.exists(), "none", False, problem)
    try:
        exists, key = _key_source(root)
    except CtxError as exc:
        return StoreProbe(root, True, "none", False, exc)
    locked = _locked(root)
    problem = None
    if unlock and exists and key == "passphrase-env":
        from engine.crypto import keys

        try:
            keys.unlock_key(root)
        except CtxError as exc:  # WrongKey, KeyUnavailable (an unreadable CTX_KEY_FILE)
            return StoreProbe(root, exists, "none", locked, exc)
    if key == "none":
        from engine.crypto import keys

        problem = KeyUnavailable(
            ("this store is locked by a passphrase and neither " if exists else
             "no keychain to create a store with, and neither ") +
            "CTX_PASSPHRASE nor CTX_KEY_FILE is set here" + keys.key_file_note())
    elif locked:
        problem = StoreLocked(f"another ctx process has this data dir open: {root}")
    return StoreProbe(root, exists, key, locked, problem)
