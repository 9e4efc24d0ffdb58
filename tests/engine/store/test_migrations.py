"""Numbered migrations: a v1 vault upgrades in place, keeping and backfilling its rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.store import migrations
from engine.store.vault import Vault

KEY = b"\x05" * 32


def test_v1_store_upgrades(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "vault.db"
    monkeypatch.setattr(migrations, "MIGRATIONS", {1: migrations.MIGRATIONS[1]})
    v1 = Vault(path, KEY)
    with v1.write() as c:
        c.execute("INSERT INTO sources(id, uri, kind, title, fmt, content_hash, ingested_at, "
                  "state) VALUES (1, 't', 'transcript', 't', 'transcript', 'h', 0, 'ready')")
        c.execute("INSERT INTO chunks(source_id, ordinal, kind, text, tokens, content_hash, meta)"
                  " VALUES (1, 0, 'tool', 'ls', 1, 'h', ?)",
                  (json.dumps({"session": "s-1", "failure": True}),))
    assert [r[0] for r in v1._query("SELECT version FROM schema_migrations")] == [1]
    v1.close()
    monkeypatch.undo()

    v2 = Vault(path, KEY)
    versions = [r[0] for r in v2._query("SELECT version FROM schema_migrations ORDER BY version")]
    assert versions == sorted(migrations.MIGRATIONS)
    assert v2._query("SELECT session, failure, text FROM chunks") == [("s-1", 1, "ls")]
    v2.close()
    again = Vault(path, KEY)  # a second open applies nothing twice
    assert len(again._query("SELECT version FROM schema_migrations")) == len(migrations.MIGRATIONS)
    again.close()
