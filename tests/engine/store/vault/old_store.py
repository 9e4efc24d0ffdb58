"""A vault as an older ctx left it, for the upgrade tests: the migrations before one
applied, and ready sources put in it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from engine.store.vault import migrations
from engine.store.vault.core import Vault


def vault_before(monkeypatch: pytest.MonkeyPatch, path: Path, key: bytes, version: int
                 ) -> Vault:
    """The vault at ``path`` opened with the migrations before ``version`` alone (call
    ``monkeypatch.undo()`` after closing it, before the upgrade)."""
    monkeypatch.setattr(migrations, "MIGRATIONS",
                        {n: s for n, s in migrations.MIGRATIONS.items() if n < version})
    return Vault(path, key)


def put_sources(conn: Any, kinds: Sequence[tuple[int, str]]) -> None:
    """Ready sources of these (id, kind), each at uri ``u<id>``."""
    for sid, kind in kinds:
        conn.execute("INSERT INTO sources(id, uri, kind, title, fmt, content_hash, "
                     "ingested_at, state) VALUES (?, ?, ?, 't', 't', 'h', 0, 'ready')",
                     (sid, f"u{sid}", kind))
