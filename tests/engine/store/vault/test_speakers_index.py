"""A store's speaker names are read from their partial index (migration 10), not from
every chunk's row: each step of a large delete changes the chunk count, and every
search reads the names again after it (issue 32: searches during a 65k-chunk delete
took 1-2 s, nearly all of it that scan)."""

from __future__ import annotations

import json
from pathlib import Path

from engine.store.vault.core import Vault
from tests.engine.store.vault.vm_steps import vm_steps

KEY = b"\x07" * 32
PLAIN = 3000  # chunks without a speaker: a scan of the table visits each of them


def _vault(path: Path) -> Vault:
    vault = Vault(path, KEY)
    with vault.write() as c:
        c.execute("INSERT INTO sources(id, uri, kind, title, fmt, content_hash, ingested_at, "
                  "state) VALUES (1, 'notes', 'markdown', 't', 'md', 'h', 0, 'ready')")
        c.execute("INSERT INTO sources(id, uri, kind, title, fmt, content_hash, ingested_at, "
                  "state) VALUES (2, 'talk', 'transcript', 't', 'transcript', 'h', 0, 'ready')")
        c.executemany("INSERT INTO chunks(id, source_id, ordinal, kind, text, tokens, "
                      "content_hash) VALUES (?, 1, ?, 'prose', 'harbour tides', 2, 'h')",
                      [(i + 1, i) for i in range(PLAIN)])
        c.executemany("INSERT INTO chunks(id, source_id, ordinal, kind, text, tokens, "
                      "content_hash, meta) VALUES (?, 2, ?, 'turn_pair', 'hello', 1, 'h', ?)",
                      [(PLAIN + 1 + i, i, json.dumps({"speaker": name}))
                       for i, name in enumerate(["Alice", "Bob", "Alice"])])
    return vault


def test_speakers_after_a_delete_are_read_without_a_scan(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "vault.db")
    try:
        assert vault.speakers() == {"Alice", "Bob"}
        with vault.write() as c:  # a delete step of other chunks: the count moves
            c.execute("DELETE FROM chunks WHERE id <= 50")
        names, steps = vm_steps(vault, vault.speakers)
        assert names == {"Alice", "Bob"}
        assert steps < PLAIN // 100, f"{steps * 100} VM steps: the table was scanned"
        with vault.write() as c:  # the last chunk of a speaker goes: so does the name
            c.execute("DELETE FROM chunks WHERE id = ?", (PLAIN + 2,))
        assert vault.speakers() == {"Alice"}
    finally:
        vault.close()


def test_an_older_store_gets_the_index(tmp_path: Path) -> None:
    """Migration 10 adds the index to a store made before it (its rows read through it)."""
    import pytest

    from engine.store.vault import migrations

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(migrations, "MIGRATIONS",
                   {n: s for n, s in migrations.MIGRATIONS.items() if n < 10})
        _vault(tmp_path / "vault.db").close()
    vault = Vault(tmp_path / "vault.db", KEY)
    try:
        assert vault._query("SELECT name FROM sqlite_master WHERE name = 'chunks_speaker'")
        with vault.write() as c:
            c.execute("DELETE FROM chunks WHERE id <= 50")
        names, steps = vm_steps(vault, vault.speakers)
        assert names == {"Alice", "Bob"} and steps < PLAIN // 100
    finally:
        vault.close()
