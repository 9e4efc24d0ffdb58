"""The default vector index keeps no vector in the clear on disk: it lives in memory,
sealed with the data key in vectors.snap, rebuilt from the vault when that is missing,
stale, tampered with or another store's.

Real SQCipher vault, fake embedder (the snapshot's logic does not depend on the
model). Before, the default was the embedded Chroma store, whose rotated vectors
give themselves away to someone who knows some of the user's files
(bench/vector_attack.py): its similarity matrix is the files' own.
"""

from __future__ import annotations

import math
import os
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from engine.crypto import keys
from engine.facade import ContextEngine
from engine.flows.vector_rebuild import fill_memory
from engine.store.snapshot import SnapshotFile

TEXTS = [f"Harbour log {i}: the ferry left at dawn and the crane lifted {i} crates. " * 20
         for i in range(12)]


def _store(root: Path) -> None:
    with ContextEngine.open(root) as eng:
        for i, text in enumerate(TEXTS):
            eng.wait(eng.ingest(text=text, title=f"log {i}"))


def _sealed(root: Path) -> SnapshotFile:
    key = keys.unlock_key(root, passphrase=os.environ["CTX_PASSPHRASE"])
    return SnapshotFile(root / "vectors.snap", key)


def _entropy(data: bytes) -> float:
    counts = Counter(data)
    return -sum(c / len(data) * math.log2(c / len(data)) for c in counts.values())


def test_the_default_keeps_no_vector_in_the_clear(data_dir: Path) -> None:
    _store(data_dir)
    assert sorted(p.name for p in data_dir.iterdir()) == [
        "engine.lock", "key.json", "space.reserve", "vault.db", "vectors.snap"]
    with ContextEngine.open(data_dir) as eng:
        ids = [r[0] for r in eng.rt.vault._query("SELECT id FROM chunks")]
        held = eng.rt.vectors.vectors(ids)
    assert len(held) == len(ids) > 10
    raw = (data_dir / "vectors.snap").read_bytes()
    for vec in held.values():  # no vector's bytes, in either byte order or in float64
        for form in (vec.astype("<f4"), vec.astype(">f4"), vec.astype("<f8")):
            assert form.tobytes()[:64] not in raw
    assert _entropy(raw[64:]) > 7.9  # sealed: bytes as good as random
    snap = _sealed(data_dir).load(384)
    assert snap is not None and sorted(snap.ids.tolist()) == sorted(ids)


def test_reopen_uses_the_snapshot_as_it_is(data_dir: Path) -> None:
    _store(data_dir)
    with ContextEngine.open(data_dir) as eng:
        assert fill_memory(eng.rt) == "snapshot"
        hits = eng.search("crane lifted 7 crates", k=3)
        assert hits and hits[0].title == "log 7"
        assert "vector" in hits[0].lanes


def test_a_killed_engine_leaves_a_snapshot_that_is_patched(data_dir: Path) -> None:
    _store(data_dir)
    eng = ContextEngine.open(data_dir)
    eng.wait(eng.ingest(text="A late note about lighthouses and their keepers. " * 20,
                        title="late"))
    eng._jobs.stop()  # killed: no close, so no new snapshot
    eng.rt.vault.close()
    eng._lock.release()
    with ContextEngine.open(data_dir) as again:
        assert again.rt.vectors.count() == again.status().chunks
        hits = again.search("lighthouses and their keepers", k=1)
        assert hits[0].title == "late" and "vector" in hits[0].lanes
    with ContextEngine.open(data_dir) as third:
        assert fill_memory(third.rt) == "snapshot"  # sealed again after the patch


def test_a_delete_reseals_at_once_without_the_deleted_vectors(data_dir: Path) -> None:
    _store(data_dir)
    with ContextEngine.open(data_dir) as eng:
        gone = eng.sources()[0]
        gone_ids = [r[0] for r in eng.rt.vault._query(
            "SELECT id FROM chunks WHERE source_id = ?", (gone.id,))]
        eng.delete(str(gone.id))
        snap = _sealed(data_dir).load(384)  # the engine still runs
        assert snap is not None and not set(gone_ids) & set(snap.ids.tolist())
        assert len(snap) == eng.rt.vectors.count()


@pytest.mark.parametrize("damage", ["tampered", "another store's", "truncated", "garbage"])
def test_a_bad_snapshot_is_rebuilt_from_the_vault(damage: str, data_dir: Path,
                                                  tmp_path: Path) -> None:
    _store(data_dir)
    snap = data_dir / "vectors.snap"
    if damage == "tampered":
        data = bytearray(snap.read_bytes())
        data[len(data) // 2] ^= 1
        snap.write_bytes(bytes(data))
    elif damage == "another store's":
        other = tmp_path / "other"
        _store(other)
        shutil.copy(other / "vectors.snap", snap)
    elif damage == "truncated":
        os.truncate(snap, snap.stat().st_size - 100)
    else:
        snap.write_bytes(b"\x00" * 4000)
    with ContextEngine.open(data_dir) as eng:
        assert eng.rt.vectors.count() == eng.status().chunks
        assert eng.search("crane lifted 3 crates", k=1)[0].title == "log 3"
    with ContextEngine.open(data_dir) as eng:
        assert fill_memory(eng.rt) == "snapshot"  # rebuilt, then sealed again


def test_a_reused_chunk_id_is_read_again(data_dir: Path) -> None:
    """SQLite may give a deleted chunk's id to a new one: the snapshot's fingerprint of
    each chunk's text tells the old vector apart."""
    _store(data_dir)
    with ContextEngine.open(data_dir) as eng:
        last = eng.sources()[-1]
        top = eng.rt.vault._query("SELECT max(id) FROM chunks")[0][0]
    sealed = _sealed(data_dir).load(384)
    assert sealed is not None
    eng = ContextEngine.open(data_dir)
    eng.delete(str(last.id))
    eng.wait(eng.ingest(text="Violins and cellos tuned before the concert. " * 20,
                        title="music"))
    reused = eng.rt.vault._query("SELECT max(id) FROM chunks")[0][0]
    assert reused <= top  # a deleted chunk's id came back, with other text
    _sealed(data_dir).save(sealed)  # an older snapshot, with the old vector at that id
    eng._jobs.stop()
    eng.rt.vault.close()
    eng._lock.release()
    with ContextEngine.open(data_dir) as again:
        hit = again.search("violins and cellos tuned", k=1)[0]
        assert hit.title == "music" and "vector" in hit.lanes
        model = again.rt.embedder.encode([again.rt.vault.chunks([reused])[reused].text])[0]
        held = again.rt.vectors.vectors([reused])[reused]
        assert float(np.dot(held, model / np.linalg.norm(model))) > 0.9


def test_an_older_embedded_store_is_removed_once_in_memory(data_dir: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.setenv("CTX__STORE__VECTOR_BACKEND", "embedded")
    _store(data_dir)
    assert (data_dir / "vectors").is_dir()
    monkeypatch.delenv("CTX__STORE__VECTOR_BACKEND")
    with ContextEngine.open(data_dir) as eng:
        assert eng.search("crane lifted 5 crates", k=1)[0].title == "log 5"
    assert not (data_dir / "vectors").exists() and (data_dir / "vectors.snap").exists()
