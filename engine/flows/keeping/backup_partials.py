"""The files a backup writes before its own (``NAME.partial``, ``.NAME.vault.partial``),
remembered in the vault so that one left by a killed backup is removed by the next.

A backup records its partial files (in the vault's meta: the paths stay encrypted)
before it writes them, and forgets them once they are gone. A later backup of the
same store removes every recorded file that no backup of this process is writing
now: only files this store's own backups made, only once no one writes them (the
store's lock admits one engine, so a recorded file no thread of it writes is stale).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from engine.errors import CtxError
from engine.store.vault.core import Vault

log = logging.getLogger("ctx.backup")

PARTIALS = "backup_partials"  # vault meta: partial files of backups begun, not yet removed
_LOCK = threading.Lock()
_WRITING: set[str] = set()  # partial files a backup of this process writes now


def _recorded(vault: Vault) -> list[str]:
    try:
        value = json.loads(vault.get_meta(PARTIALS) or "[]")
    except ValueError:
        return []
    return [p for p in value if isinstance(p, str)] if isinstance(value, list) else []


def _record(vault: Vault, paths: list[str]) -> None:
    vault.set_meta(PARTIALS, json.dumps(sorted(set(paths))))


def clean_stale(vault: Vault) -> int:
    """Remove the recorded partial files no backup writes now; how many were there."""
    try:
        return _clean_stale(vault)
    except CtxError as exc:  # a read-only vault (disk full): the backup goes on
        log.warning("stale backup partials not checked (%s)", exc.name)
        return 0


def _clean_stale(vault: Vault) -> int:
    with _LOCK:
        kept, removed = [], 0
        for p in _recorded(vault):
            if p in _WRITING:
                kept.append(p)
                continue
            try:
                Path(p).unlink()
                removed += 1
            except FileNotFoundError:
                pass
            except OSError:
                kept.append(p)  # not removable now: tried again by the next backup
        _record(vault, kept)
    if removed:
        log.info("removed %d partial file(s) a backup cut short left", removed)
    return removed


@contextmanager
def writing(vault: Vault, *paths: Path) -> Iterator[None]:
    """Around a backup's writing of ``paths``: recorded first, forgotten once gone."""
    names = [str(p) for p in paths]
    with _LOCK:
        _WRITING.update(names)
        try:
            _record(vault, _recorded(vault) + names)
        except CtxError as exc:  # a read-only vault: the backup goes on, unrecorded
            log.warning("backup partials not recorded (%s)", exc.name)
    try:
        yield
    finally:
        with _LOCK:
            _WRITING.difference_update(names)
            gone = {n for n in names if not Path(n).exists()}
            try:
                _record(vault, [p for p in _recorded(vault) if p not in gone])
            except CtxError as exc:  # kept recorded: the next backup removes what is left
                log.warning("backup partials not forgotten (%s)", exc.name)
