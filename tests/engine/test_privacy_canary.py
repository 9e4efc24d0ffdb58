"""A unique canary ingested, used and deleted never appears in any byte of the data dir."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from engine.embedding.base import Embedder
from engine.facade import ContextEngine


def _grep_data_dir(root: Path, needles: list[bytes]) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes().lower()
            for needle in needles:
                if needle.lower() in data:
                    found.append(f"{path.relative_to(root)}")
    return found


def _needles(canary: str) -> list[bytes]:
    return [canary.encode("utf-8"), canary.encode("utf-16-le"), canary.upper().encode("utf-8")]


@pytest.mark.integration
def test_canary_never_on_disk(tmp_path: Path, data_dir: Path, minilm: Embedder,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX_EMBEDDER", "minilm")
    canary = "zq" + uuid.uuid4().hex[:12] + "canary"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "secret.md").write_text(f"# Private\n\nThe vault code word is {canary} today.\n")
    (docs / "other.md").write_text("# Other\n\nNothing to see in this unrelated file at all.\n")
    (docs / "other2.txt").write_text("Another unrelated file about gardening and tomatoes.\n")

    eng = ContextEngine.open(data_dir, embedder=minilm)
    eng.wait(eng.ingest(paths=[str(docs)]))
    eng.wait(eng.ingest(text=f"a note repeating {canary}", title="note"))
    hits = eng.search(canary, k=5)
    assert any(canary in h.text for h in hits)
    payload = eng.build_context(f"what is the code word {canary}?", budget=300)
    assert canary in payload.context
    eng.status(), eng.metrics(), eng.audit(), eng.sources()
    eng.delete(str(docs / "other.md"))
    eng.close()
    assert _grep_data_dir(data_dir, _needles(canary)) == []

    eng = ContextEngine.open(data_dir, embedder=minilm)
    eng.delete(str(docs / "secret.md"))
    eng.delete(next(s for s in eng.sources() if s.title == "note").id)
    assert all(canary not in h.text for h in eng.search(canary, k=20))
    eng.close()
    assert _grep_data_dir(data_dir, _needles(canary)) == []


def _decrypted_rows(data_dir: Path) -> dict[str, list[bytes]]:
    """Every value of every table of the decrypted vault (FTS shadow tables included),
    as bytes, by table."""
    import os

    from engine.crypto import keys
    from engine.store.vault.core import Vault

    key = keys.unlock_key(data_dir, passphrase=os.environ["CTX_PASSPHRASE"])
    vault = Vault(data_dir / "vault.db", keys.derive(key, "vault"))
    try:
        tables = [r[0] for r in vault._query(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE "
            "'CREATE VIRTUAL TABLE%'")]
        out: dict[str, list[bytes]] = {}
        for table in tables:
            values: list[bytes] = []
            for row in vault._query(f'SELECT * FROM "{table}"'):
                for v in row:
                    if isinstance(v, str):
                        values.append(v.encode("utf-8"))
                    elif isinstance(v, bytes):
                        values.append(v)
            out[table] = values
        return out
    finally:
        vault.close()


def _transcript(path: Path, canary: str) -> None:
    import json

    lines = [
        {"type": "user", "sessionId": "s-canary", "cwd": "/work/proj", "gitBranch": "main",
         "timestamp": "2026-01-02T10:00:00Z", "uuid": "u1",
         "message": {"role": "user", "content": f"remember the word {canary} for later"}},
        {"type": "assistant", "sessionId": "s-canary", "cwd": "/work/proj",
         "timestamp": "2026-01-02T10:00:05Z", "uuid": "u2",
         "message": {"role": "assistant", "content": [
             {"type": "text", "text": f"Noted: {canary} is the word we keep."}]}},
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


@pytest.mark.parametrize("how", ["file", "folder", "project"])
def test_deleted_text_is_gone_from_the_decrypted_vault(tmp_path: Path, data_dir: Path,
                                                        how: str) -> None:
    """After delete no table of the decrypted vault holds the canary: not the chunks,
    not the FTS index segments, not the embedding cache, not a transcript's sync state."""
    from engine.flows.keeping.vector_rebuild import chunk_key

    canary = "zq" + uuid.uuid4().hex[:12] + "canary"
    needles = [canary.encode(), canary[2:-1].encode()]  # FTS keeps porter stems, prefix-shared
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "secret.md").write_text(f"# Secret\n\nThe code word is {canary} today.\n")
    (docs / "keep.md").write_text("# Keep\n\nA note about tides and harbours to keep.\n")
    sessions = tmp_path / "agent" / "proj"
    _transcript(sessions / "s-canary.jsonl", canary)

    with ContextEngine.open(data_dir) as eng:
        eng.wait(eng.ingest(paths=[str(docs)]))
        eng.recall(index=[str(tmp_path / "agent")])
        assert any(canary in h.text for h in eng.search(canary, k=10))
        keys_before = {chunk_key(eng.rt.embedder.name)(*r) for r in eng.rt.vault._query(
            "SELECT s.title, c.heading, c.kind, c.text FROM chunks c JOIN sources s "
            "ON s.id = c.source_id WHERE c.text LIKE ?", (f"%{canary}%",))}
        assert keys_before
        eng.delete(str(docs / "secret.md"))
        project = next(s.project for s in eng.sources() if s.kind == "transcript")
        target = {"file": str(sessions / "s-canary.jsonl"), "folder": str(tmp_path / "agent"),
                  "project": f"project:{project}"}[how]
        assert eng.delete(target).deleted >= 1
        assert [Path(s.uri).name for s in eng.sources()] == ["keep.md"]
        assert all(canary not in h.text for h in eng.search(canary, k=20))
        cache = {r[0] for r in eng.rt.vault._query("SELECT hash FROM embed_cache")}
        assert not keys_before & cache
    rows = _decrypted_rows(data_dir)
    assert {"chunks_fts_data", "recall_fts_data", "embed_cache", "recall_files"} <= set(rows)
    holding = sorted(t for t, values in rows.items()
                     if any(n in v.lower() for v in values for n in needles))
    assert holding == []
    assert _grep_data_dir(data_dir, _needles(canary)) == []


def test_a_deleted_transcripts_path_leaves_its_sync_state(tmp_path: Path, data_dir: Path
                                                          ) -> None:
    """recall_files keeps a deleted transcript's offsets under a keyed hash of its path,
    not the path (a project's name, a user's folder): before, the path stayed there. A
    later sync still skips what was deleted and reads only what is appended."""
    import json

    canary = "zq" + uuid.uuid4().hex[:12] + "canary"
    folder = tmp_path / "agent" / "zqsecretproject"
    transcript = folder / "s-canary.jsonl"
    _transcript(transcript, canary)
    with ContextEngine.open(data_dir) as eng:
        eng.recall(index=[str(tmp_path / "agent")])
        assert any(s.kind == "transcript" for s in eng.sources())
        assert eng.delete(str(transcript)).deleted >= 1
        assert eng.sources() == []
        eng.recall(sync=True)  # unchanged since the delete: nothing comes back
        assert eng.sources() == []
    rows = _decrypted_rows(data_dir)["recall_files"]
    assert rows and not [v for v in rows if b"zqsecretproject" in v or b"s-canary" in v]
    with transcript.open("a") as fh:
        fh.write(json.dumps({
            "type": "user", "sessionId": "s-canary", "cwd": "/work/proj",
            "timestamp": "2026-01-02T11:00:00Z", "uuid": "u3",
            "message": {"role": "user", "content": "a new question about ferries"}}) + "\n")
        fh.write(json.dumps({
            "type": "assistant", "sessionId": "s-canary", "cwd": "/work/proj",
            "timestamp": "2026-01-02T11:00:05Z", "uuid": "u4", "message": {
                "role": "assistant", "content": [
                    {"type": "text", "text": "The ferries leave every hour."}]}}) + "\n")
    with ContextEngine.open(data_dir) as eng:
        eng.recall(sync=True)
        hits = eng.search("new question about ferries", k=5)
        assert hits and all(canary not in h.text for h in hits)
        assert all(canary not in h.text for h in eng.search(canary, k=20))


def _decrypted_pages(data_dir: Path) -> list[bytes]:
    """Every page of vault.db and of its WAL's frames, decrypted with the store's key
    (SQLCipher 4: 4096-byte pages, AES-256-CBC under the raw key, the IV in the 80
    reserved bytes at each page's end; page 1 starts with the 16-byte salt; the WAL: a
    32-byte header, then frames of a 24-byte header and a page): free pages too."""
    import os

    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    from engine.crypto import keys

    key = keys.derive(keys.unlock_key(data_dir, passphrase=os.environ["CTX_PASSPHRASE"]),
                      "vault")
    size, reserve = 4096, 80

    def decrypt(page: bytes, first: bool) -> bytes:
        iv = page[size - reserve:size - reserve + 16]
        plain = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
        return plain.update(page[16 if first else 0:size - reserve]) + plain.finalize()

    data = (data_dir / "vault.db").read_bytes()
    pages = [decrypt(data[at:at + size], at == 0) for at in range(0, len(data), size)]
    wal = data_dir / "vault.db-wal"
    log = wal.read_bytes() if wal.exists() else b""
    for at in range(32, len(log) - size + 1, 24 + size):
        number = int.from_bytes(log[at:at + 4], "big")
        pages.append(decrypt(log[at + 24:at + 24 + size], number == 1))
    return pages


def test_compact_leaves_nothing_of_the_deleted_text(tmp_path: Path, data_dir: Path) -> None:
    """`compact` after a delete: vault.db shrinks and none of its pages or its WAL's,
    decrypted, holds the deleted text; nothing else in the data dir holds it either."""
    canary = "zq" + uuid.uuid4().hex[:12] + "canary"
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(30):
        (docs / f"secret{i:02d}.md").write_text(
            f"# Secret {i}\n\n" + f"The code word is {canary} in note {i}. " * 120)
    (docs / "keep.md").write_text("# Keep\n\nA note about tides and harbours to keep.\n")
    with ContextEngine.open(data_dir) as eng:
        eng.wait(eng.ingest(paths=[str(docs)]))
        pages_with_it = _decrypted_pages(data_dir)
        for i in range(30):
            eng.delete(str(docs / f"secret{i:02d}.md"))
        pages_before = eng.rt.vault.free_pages()[0]
        result = eng.compact()
        assert result.bytes_after < result.bytes_before
        assert eng.rt.vault.free_pages() == (eng.rt.vault.free_pages()[0], 0)
        assert eng.rt.vault.free_pages()[0] < pages_before
        assert [Path(s.uri).name for s in eng.sources()] == ["keep.md"]
        # the log was cut to nothing (what it holds now was written after)
        assert (data_dir / "vault.db-wal").stat().st_size < 8 * 4096
        assert not [p for p in _decrypted_pages(data_dir) if canary.encode() in p]
    pages = _decrypted_pages(data_dir)
    assert any(b"harbours" in p for p in pages)  # the decryption reads the kept text
    assert any(canary.encode() in p for p in pages_with_it)  # and read the canary before
    assert not [i for i, p in enumerate(pages) if canary.encode() in p]
    assert _grep_data_dir(data_dir, _needles(canary)) == []
