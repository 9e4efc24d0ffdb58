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
from engine.flows.keeping.vector_rebuild import fill_memory
from engine.store.vectors.exact_index import Prefilter
from engine.store.vectors.snapshot import Snapshot, SnapshotFile

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
    eng._life.lock.release()
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
    eng._life.lock.release()
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


def _format1(path: Path, key: bytes, snap: Snapshot) -> None:
    """A snapshot as the engine wrote them before format 2 (float32 rows, no prefilter)."""
    import struct

    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    from engine.crypto.keys import derive, key_id

    kid = bytes.fromhex(key_id(key))[:16].ljust(16, b"\0")
    n, dim = snap.vectors.shape
    head = struct.pack(">8sH16sQQH", b"CTXVSNAP", 1, kid, snap.version, n, dim)
    body = (snap.ids.astype("<i8").tobytes() + snap.hashes.astype("<u8").tobytes()
            + snap.vectors.astype("<f4").tobytes())
    aead, out = AESGCM(derive(key, "vector-snapshot")), [head]
    for i, at in enumerate(range(0, len(body), 1000)):
        nonce = os.urandom(12)
        sealed = aead.encrypt(nonce, body[at:at + 1000], head + struct.pack(">I", i))
        out.append(nonce + struct.pack(">I", len(sealed)) + sealed)
    path.write_bytes(b"".join(out))


def _big(n: int = 3000, dim: int = 32) -> Snapshot:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((n, dim)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    basis = np.linalg.qr(rng.standard_normal((dim, 6)))[0].astype(np.float32)
    vecs = x.astype(np.float16)
    both = vecs.astype(np.float32) @ basis
    return Snapshot(7, np.arange(10, 10 + n, dtype=np.int64),
                    rng.integers(0, 2**63, n).astype(np.uint64), vecs,
                    Prefilter(basis, both[:, :4].copy(), both[:, 4:].copy()))


@pytest.mark.parametrize("into", [True, False], ids=["decrypt_into", "older cryptography"])
def test_a_compact_snapshot_round_trips_sealed_in_small_segments(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, into: bool) -> None:
    """float16 rows and the prefilter sealed beside them, segment by segment (small
    segments here, so that arrays straddle them): read back equal, nothing in the clear;
    also where cryptography has no ``AESGCM.decrypt_into`` (pyproject allows >= 42)."""
    from engine.store.vectors import snapshot as S

    monkeypatch.setattr(S, "SEGMENT", 4096)
    monkeypatch.setattr(S, "_INTO", into and S._INTO)
    snap, key = _big(), b"k" * 32
    path = tmp_path / "vectors.snap"
    S.SnapshotFile(path, key).save(snap)
    raw = path.read_bytes()
    for row in (0, 1500, 2999):
        assert snap.prefilter is not None
        for form in (snap.vectors[row], snap.vectors[row].astype("<f4"),
                     snap.prefilter.proj[row], snap.prefilter.fine[row]):
            assert form.tobytes()[:32] not in raw
    assert _entropy(raw[64:]) > 7.9
    back = S.SnapshotFile(path, key).load(32)
    assert back is not None and back.version == 7 and back.vectors.dtype == np.float16
    assert np.array_equal(back.ids, snap.ids) and np.array_equal(back.hashes, snap.hashes)
    assert np.array_equal(back.vectors, snap.vectors)
    assert back.prefilter is not None and snap.prefilter is not None
    for name in ("basis", "proj", "fine"):
        assert np.array_equal(getattr(back.prefilter, name), getattr(snap.prefilter, name))
    assert S.SnapshotFile(path, b"j" * 32).load(32) is None  # another key's
    path.write_bytes(raw[:-4096])  # a whole segment short
    assert S.SnapshotFile(path, key).load(32) is None


def test_a_format_1_snapshot_still_opens(tmp_path: Path) -> None:
    snap, key = _big(), b"k" * 32
    old = type(snap)(snap.version, snap.ids, snap.hashes, snap.vectors.astype(np.float32))
    _format1(tmp_path / "vectors.snap", key, old)
    back = SnapshotFile(tmp_path / "vectors.snap", key).load(32)
    assert back is not None and back.prefilter is None and back.vectors.dtype == np.float32
    assert np.array_equal(back.ids, old.ids) and np.array_equal(back.vectors, old.vectors)


def test_a_big_store_reopens_with_float16_rows_and_its_prefilter(
        data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine end to end with the size bounds made small: the warm-up turns the rows
    float16 and sets up the prefilter, the close seals both, the next open has them at
    once (no warm-up) and finds the same chunks."""
    for key, value in (("EXACT_SEARCH_MAX", "4"), ("FLOAT16_ABOVE", "4"),
                       ("PREFILTER_DIMS", "8"), ("PREFILTER_FINE_DIMS", "8"),
                       ("PREFILTER_CANDIDATES", "100"), ("PREFILTER_REFINE", "6")):
        monkeypatch.setenv(f"CTX__STORE__{key}", value)
    _store(data_dir)
    with ContextEngine.open(data_dir) as eng:
        eng.warm_up(background=False)
        assert eng.rt.vectors.memory()["kind"] == "prefilter"
        before = [h.title for h in eng.search("crane lifted 7 crates", k=3)]
    snap = _sealed(data_dir).load(384)
    assert snap is not None and snap.prefilter is not None
    assert snap.vectors.dtype == np.float16
    with ContextEngine.open(data_dir) as eng:
        assert eng.rt.vectors.memory()["kind"] == "prefilter"  # before any warm-up
        assert [h.title for h in eng.search("crane lifted 7 crates", k=3)] == before
        assert before[0] == "log 7"


def test_a_snapshot_is_read_with_one_sealed_segment_beside_its_arrays(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each sealed segment is read into one buffer and opened straight into its arrays
    (one that straddles two arrays a piece at a time): beside the arrays the read holds
    a segment, no more. Before, every segment was read into a new buffer and opened
    into another (at 1M vectors, 160 x 2 fresh 8 MB buffers: more time in their first
    touch than in the decryption; issue 35)."""
    import tracemalloc

    from engine.store.vectors import snapshot as S

    monkeypatch.setattr(S, "SEGMENT", 1 << 20)
    monkeypatch.setattr(S, "_PIECE", 1 << 16)
    snap, key = _big(20_000, 64), b"k" * 32
    path = tmp_path / "vectors.snap"
    S.SnapshotFile(path, key).save(snap)
    reader = S.SnapshotFile(path, key)
    tracemalloc.start()
    try:
        back = reader.load(64)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert back is not None and back.prefilter is not None and snap.prefilter is not None
    pre = back.prefilter
    arrays = (back.ids, back.hashes, back.vectors, pre.basis, pre.proj, pre.fine)
    assert sum(a.nbytes for a in arrays) > 3 * (1 << 20)  # four segments, some straddling
    assert peak - sum(a.nbytes for a in arrays) < 1.25 * (1 << 20)
    assert np.array_equal(back.ids, snap.ids) and np.array_equal(back.vectors, snap.vectors)
    for name in ("basis", "proj", "fine"):
        assert np.array_equal(getattr(back.prefilter, name), getattr(snap.prefilter, name))


def test_a_flipped_byte_in_any_segment_discards_the_snapshot(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Segments opened straight into one array and those opened across two alike: one
    flipped byte anywhere in the sealed body and the read gives nothing (a rebuild)."""
    import struct

    from engine.store.vectors import snapshot as S

    monkeypatch.setattr(S, "SEGMENT", 5000)  # not a multiple of any array's row
    snap, key = _big(), b"k" * 32
    path = tmp_path / "vectors.snap"
    S.SnapshotFile(path, key).save(snap)
    raw = path.read_bytes()
    frames, at = [], S._HEAD.size
    while at < len(raw):
        (size,) = struct.unpack_from(">I", raw, at + 12)
        frames.append((at, size))
        at += 16 + size
    assert snap.prefilter is not None
    pre = snap.prefilter
    ends = np.cumsum([a.nbytes for a in (snap.ids, snap.hashes, snap.vectors, pre.basis,
                                         pre.proj, pre.fine)])
    across = [k for k in range(len(frames))
              if any(k * 5000 < e < (k + 1) * 5000 for e in ends)]
    within = [k for k in range(len(frames)) if k not in across]
    assert across and within
    for k in (within[0], across[0], across[-1], len(frames) - 1):
        at, size = frames[k]
        for where in (at + 16, at + 16 + size // 2, at + 16 + size - 1):  # text, tag
            bad = bytearray(raw)
            bad[where] ^= 1
            path.write_bytes(bytes(bad))
            assert S.SnapshotFile(path, key).load(32) is None
    path.write_bytes(raw)
    assert S.SnapshotFile(path, key).load(32) is not None


def test_a_flipped_bit_in_the_row_count_discards_the_snapshot(tmp_path: Path) -> None:
    """The header is authenticated with the first segment only: a count that one flipped
    bit made huge (2^36 rows and more) was allocated before any tag was checked, and the
    MemoryError stopped the open instead of a rebuild from the vault."""
    from engine.store.vectors import snapshot as S

    snap, key = _big(300), b"k" * 32
    path = tmp_path / "vectors.snap"
    S.SnapshotFile(path, key).save(snap)
    raw = path.read_bytes()
    count = S._HEAD1.size - 10  # the count: 8 bytes before the dimension's 2
    assert S._HEAD1.unpack(raw[:S._HEAD1.size])[4] == 300
    for byte in range(count, count + 8):
        for bit in (0, 7):
            bad = bytearray(raw)
            bad[byte] ^= 1 << bit
            path.write_bytes(bytes(bad))
            assert S.SnapshotFile(path, key).load(32) is None
