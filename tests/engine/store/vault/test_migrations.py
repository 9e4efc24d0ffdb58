"""Numbered migrations: a v1 vault upgrades in place, keeping and backfilling its rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine import UPGRADE_LOGGER
from engine.store.vault import migrations
from engine.store.vault.core import Vault
from tests.engine.store.vault.old_store import put_sources, vault_before

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


def test_session_code_gets_its_own_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store of before issue 31 holds a session's code blocks as kind 'code', the kind
    of a document's code: the migration gives them 'session_code' and leaves documents'."""
    path = tmp_path / "vault.db"
    old = vault_before(monkeypatch, path, KEY, 9)
    with old.write() as c:
        put_sources(c, ((1, "transcript"), (2, "code")))
        for sid in (1, 2):
            c.execute("INSERT INTO chunks(source_id, ordinal, kind, text, tokens, content_hash)"
                      " VALUES (?, 0, 'code', 'x = 1', 3, 'h')", (sid,))
        c.execute("INSERT INTO chunks(source_id, ordinal, kind, text, tokens, content_hash)"
                  " VALUES (1, 1, 'tool', 'ls', 1, 'h')")
    old.close()
    monkeypatch.undo()

    new = Vault(path, KEY)
    assert new._query("SELECT source_id, ordinal, kind FROM chunks ORDER BY source_id, "
                      "ordinal") == [(1, 0, "session_code"), (1, 1, "tool"), (2, 0, "code")]
    new.close()


def test_an_upgrade_says_each_migration_and_its_time(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    """An index over every chunk takes seconds on a big store's first open after an
    upgrade: the log says which schema it is building and how long it took (ctx -v);
    a new store's creation says nothing."""
    path = tmp_path / "vault.db"
    last = max(migrations.MIGRATIONS)
    monkeypatch.setattr(migrations, "MIGRATIONS",
                        {n: s for n, s in migrations.MIGRATIONS.items() if n < last})
    with caplog.at_level("INFO", logger=UPGRADE_LOGGER):
        Vault(path, KEY).close()
        assert not [r for r in caplog.records if "schema" in r.getMessage()]
        monkeypatch.undo()
        Vault(path, KEY).close()
    said = [r.getMessage() for r in caplog.records if r.name == UPGRADE_LOGGER]
    assert f"upgrading the store to schema {last} (once)" in said
    assert any(m.startswith(f"schema {last} applied in ") for m in said)
