"""After `ctx delete` returns, the deleted text is in no page that the key decrypts:
neither in vault.db nor in its WAL, while the engine that deleted it keeps running.

The pages are decrypted here by hand (SQLCipher 4: AES-256-CBC under the raw
vault key, the IV at the end of each page's data, page 1 behind its 16-byte
salt), every page of vault.db and every frame of vault.db-wal, so that text
SQLite no longer shows (old page images in the WAL, freed pages, stale FTS
segments) is found too. Before, the WAL kept the deleted text for as long as
the engine ran.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from engine.crypto import keys
from tests.agents.engines import ctx, stop_engine

PAGE, RESERVE = 4096, 80  # SQLCipher 4 defaults: an IV of 16 and an HMAC of 64 per page
WAL_HEADER, FRAME_HEADER = 32, 24


def _page_text(key: bytes, page: bytes, pgno: int) -> bytes:
    start = 16 if pgno == 1 else 0  # page 1 starts with the file's salt, not encrypted
    iv = page[PAGE - RESERVE:PAGE - RESERVE + 16]
    dec = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    return dec.update(page[start:PAGE - RESERVE]) + dec.finalize()


def decrypted_pages(root: Path) -> Iterator[tuple[str, bytes]]:
    """(where, plaintext) of every page of vault.db and every frame of its WAL."""
    key = keys.derive(keys.unlock_key(root, passphrase=os.environ["CTX_PASSPHRASE"]), "vault")
    db = (root / "vault.db").read_bytes()
    for i in range(len(db) // PAGE):
        yield f"vault.db page {i + 1}", _page_text(key, db[i * PAGE:(i + 1) * PAGE], i + 1)
    wal_path = root / "vault.db-wal"
    wal = wal_path.read_bytes() if wal_path.exists() else b""
    at = WAL_HEADER
    while at + FRAME_HEADER + PAGE <= len(wal):
        pgno = int.from_bytes(wal[at:at + 4], "big")
        frame = wal[at + FRAME_HEADER:at + FRAME_HEADER + PAGE]
        yield f"vault.db-wal frame at {at} (page {pgno})", _page_text(key, frame, pgno)
        at += FRAME_HEADER + PAGE


def _found(root: Path, word: str) -> list[str]:
    needles = [word.encode("utf-8"), word.upper().encode("utf-8")]
    return [where for where, text in decrypted_pages(root) if any(n in text for n in needles)]


@pytest.fixture
def running(data_dir: Path) -> Iterator[Path]:
    yield data_dir
    stop_engine(data_dir)


def test_deleted_text_is_in_no_decrypted_page_while_the_engine_runs(
        running: Path, tmp_path: Path) -> None:
    root = running
    canary = "zq" + uuid.uuid4().hex[:10] + "gone"
    kept = "zq" + uuid.uuid4().hex[:10] + "kept"
    docs = tmp_path / "docs"
    docs.mkdir()
    secret = docs / "secret.md"
    secret.write_text(f"# Private\n\nThe code word is {canary}, said twice: {canary}.\n" * 30)
    (docs / "other.md").write_text(f"# Other\n\nA note that stays: {kept}.\n" * 30)
    assert ctx("ingest", str(docs)).returncode == 0  # the background engine ingests
    assert canary in ctx("search", canary).stdout
    assert _found(root, kept), "the pages do not decrypt: the test would prove nothing"
    done = ctx("delete", str(secret))
    assert done.returncode == 0, done.stderr
    assert canary not in ctx("search", canary).stdout
    from ipc.discovery import find_live

    assert find_live(root) is not None  # the engine that deleted it still runs
    assert _found(root, canary) == []
    assert _found(root, kept)
