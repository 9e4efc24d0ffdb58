"""A closed vault opens no connection again: a thread still reading after close() (a
warm-up stage, a late query) gets ``engine_closed``, not a fresh connection to a store
whose lock was released and which another process may now hold."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from engine.errors import EngineClosed
from engine.facade import ContextEngine


def test_a_read_after_close_is_refused(data_dir: Path) -> None:
    engine = ContextEngine.open(data_dir)
    vault = engine.rt.vault
    assert vault.get_meta("embedding_model")  # this thread's connection, opened
    engine.close()
    with pytest.raises(EngineClosed):
        vault.get_meta("embedding_model")
    caught: list[BaseException] = []

    def late_reader() -> None:  # a thread that never read before close()
        try:
            vault.get_meta("embedding_model")
        except BaseException as exc:  # noqa: BLE001 - checked below
            caught.append(exc)

    t = threading.Thread(target=late_reader)
    t.start()
    t.join(10)
    assert len(caught) == 1 and isinstance(caught[0], EngineClosed)
    assert vault._all == []  # no connection was opened again
    # the file replaced after close (a restore, another engine): still engine_closed, not
    # a damage alarm about a file this vault no longer holds
    kept = vault.path.with_name("kept.db")
    os.replace(vault.path, kept)
    other = vault.path.with_name("other.db")
    other.write_bytes(b"not a vault" * 400)
    os.replace(other, vault.path)
    time.sleep(1.2)  # past the guard's interval between looks at the file
    with pytest.raises(EngineClosed):
        vault.get_meta("embedding_model")
    os.replace(kept, vault.path)
    again = ContextEngine.open(data_dir)  # the store itself is fine
    again.close()
