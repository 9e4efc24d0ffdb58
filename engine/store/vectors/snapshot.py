"""The in-memory vector index saved encrypted, so that a store keeping no vector in the
clear opens fast: at 100k chunks, reading one sealed file instead of rebuilding the
index from the vault's embedding cache.

``vectors.snap``: a header in the clear (magic, format, the data key's id, the vault's
chunk version when taken, count, dimension; format 2 adds the rows' width and the
prefilter's), then the chunk ids, a fingerprint of each chunk's text, its model-space
vector as the index holds it (float16 above ``store.float16_above``) and the index's
prefilter (its directions and the rows on them), sealed with AES-256-GCM in segments
under a key derived from the data key; the header is every segment's associated
data, so no segment moves between snapshots or stores unnoticed. Saving and reading
go a segment at a time (a million vectors: 1.3 GB sealed, never held twice). Without the key
the file says how many vectors there are (its size) and nothing else: no vector,
no order, no similarity between them (docs/threat-model.md).

A snapshot is taken only where no write runs beside it (at open after a rebuild, in
the single writer after a delete, at close), so its chunk version says exactly which
chunks it holds. Any other state of the file (missing, another store's, damaged,
another format) only means "rebuild": the vault holds every vector anyway.
"""

from __future__ import annotations

import io
import logging
import os
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from engine.crypto.keys import derive, key_id
from engine.store.vectors.exact_index import Prefilter

log = logging.getLogger("ctx.vectors")

MAGIC = b"CTXVSNAP"
FORMAT = 2
SEGMENT = 8 << 20  # bytes sealed at a time: saving and reading add only this much memory
_PIECE = 1 << 20  # a segment that straddles two arrays is opened this much at a time
# AESGCM.decrypt_into is in newer cryptography releases only (pyproject asks for >= 42)
_INTO = hasattr(AESGCM, "decrypt_into")
_HEAD1 = struct.Struct(">8sH16sQQH")  # magic, format, key id, chunk version, count, dim
# format 2 adds the vectors' bytes per value (2: float16, 4: float32), the prefilter's
# width m (0: none; else its basis and the rows projected on it follow the vectors) and
# how many of its directions are scanned first
_HEAD = struct.Struct(">8sH16sQQHBHH")
_DTYPES = {2: "<f2", 4: "<f4"}


@dataclass(frozen=True)
class Snapshot:
    """What a snapshot holds: ``version`` is the vault's chunk version when taken."""

    version: int
    ids: np.ndarray  # int64, ascending
    hashes: np.ndarray  # uint64: a fingerprint of each chunk's text (content hash)
    vectors: np.ndarray  # float32 or float16, n x dim, model space
    prefilter: Prefilter | None = None  # the index's prefilter over these rows

    def __len__(self) -> int:
        return len(self.ids)


def fingerprint(content_hashes: list[str]) -> np.ndarray:
    """uint64 of each chunk's content hash (hex): tells a reused chunk id apart."""
    return np.array([int(h[:16], 16) if h else 0 for h in content_hashes], dtype=np.uint64)


def _parts(snap: Snapshot) -> list[np.ndarray]:
    """The arrays sealed, in their order, little-endian and contiguous (no copy where they
    are already)."""
    width = np.dtype(snap.vectors.dtype).itemsize if len(snap) else 4
    parts = [np.ascontiguousarray(snap.ids, dtype="<i8"),
             np.ascontiguousarray(snap.hashes, dtype="<u8"),
             np.ascontiguousarray(snap.vectors, dtype=_DTYPES[width])]
    if snap.prefilter is not None and len(snap):
        pre = snap.prefilter
        parts += [np.ascontiguousarray(a, dtype="<f4") for a in (pre.basis, pre.proj, pre.fine)]
    return parts


def _segments(parts: list[np.ndarray]) -> Iterator[bytes]:
    """The arrays' bytes, end to end, cut in ``SEGMENT``-sized pieces (one piece copied at
    a time)."""
    views = [p.reshape(-1).view(np.uint8).data for p in parts if p.size]
    piece: list[bytes] = []
    room = SEGMENT
    for view in views:
        at = 0
        while at < len(view):
            take = min(room, len(view) - at)
            piece.append(bytes(view[at:at + take]))
            at, room = at + take, room - take
            if room == 0:
                yield b"".join(piece)
                piece, room = [], SEGMENT
    if piece:
        yield b"".join(piece)


def _read_ahead(fh: io.BufferedReader) -> None:
    """Ask the kernel for the rest of the file now, in a thread (the call can wait on the
    disk): the disk reads ahead while the segments read so far are opened. Where the
    system has no ``posix_fadvise`` (macOS, Windows), the file is read as it comes."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:
        return
    try:
        start = fh.tell()
        advise(fh.fileno(), start, 0, os.POSIX_FADV_SEQUENTIAL)
        fd = os.dup(fh.fileno())  # its own descriptor, closed by the thread
    except (OSError, ValueError, io.UnsupportedOperation):
        return

    def run() -> None:
        try:
            advise(fd, start, 0, os.POSIX_FADV_WILLNEED)
        except OSError:
            pass  # only a hint
        finally:
            os.close(fd)

    threading.Thread(target=run, name="ctx-snapshot-read-ahead", daemon=True).start()


class SnapshotFile:
    def __init__(self, path: Path, key: bytes) -> None:
        self.path = path
        self._raw = derive(key, "vector-snapshot")
        self._aead = AESGCM(self._raw)
        self._key_id = bytes.fromhex(key_id(key))[:16].ljust(16, b"\0")

    def save(self, snap: Snapshot) -> None:
        """Write ``snap`` (atomically: a temporary file renamed over the old one), sealed a
        segment at a time: a million vectors take no second copy in memory."""
        parts = _parts(snap)
        n, dim = snap.vectors.shape if len(snap) else (0, 0)
        m, first = (parts[3].shape[1], parts[4].shape[1]) if len(parts) > 3 else (0, 0)
        head = _HEAD.pack(MAGIC, FORMAT, self._key_id, snap.version, n, dim,
                          parts[2].dtype.itemsize, m, first)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(head)
                for i, plain in enumerate(_segments(parts)):
                    nonce = os.urandom(12)
                    sealed = self._aead.encrypt(nonce, plain, head + struct.pack(">I", i))
                    fh.write(nonce + struct.pack(">I", len(sealed)) + sealed)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def load(self, dim: int) -> Snapshot | None:
        """The snapshot, or None (logged) when there is none this store can use."""
        try:
            with open(self.path, "rb") as fh:
                return self._read(fh, dim)
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("vector snapshot unreadable (%s): rebuilding", exc.strerror)
            return None
        except (ValueError, struct.error, InvalidTag) as exc:
            log.warning("vector snapshot not used (%s): rebuilding from the vault",
                        type(exc).__name__ if isinstance(exc, InvalidTag) else exc)
            return None

    def _read(self, fh: io.BufferedReader, dim: int) -> Snapshot:
        """Each segment read into one buffer and opened straight into its arrays: the file
        is never held whole, in the clear or sealed, and no segment is copied again (a
        new buffer per segment cost more than the rest of the read: issue 35)."""
        head = fh.read(_HEAD1.size)
        magic, fmt, kid, version, n, got_dim = _HEAD1.unpack(head)
        if magic != MAGIC or fmt not in (1, FORMAT):
            raise ValueError("not a snapshot of this format")
        width, m, first = 4, 0, 0
        if fmt == FORMAT:
            head += fh.read(_HEAD.size - _HEAD1.size)
            _, _, _, _, _, _, width, m, first = _HEAD.unpack(head)
            if width not in _DTYPES or m > got_dim or first > m or (m and not first):
                raise ValueError("not a snapshot of this format")
        if kid != self._key_id:
            raise ValueError("made with another key")
        if n and got_dim != dim:
            raise ValueError("made for another model dimension")
        # the header is checked with the first segment's tag only: a count that a flipped
        # bit made huge must not be allocated first (a MemoryError stopped the open)
        rows = 16 + dim * width + (m * 4 if m and n else 0)
        if n * rows + (dim * m * 4 if m and n else 0) > os.fstat(fh.fileno()).st_size:
            raise ValueError("wrong size")
        ids = np.empty(n, "<i8")
        hashes = np.empty(n, "<u8")
        vecs = np.empty((n, dim), _DTYPES[width])
        pre = Prefilter(np.empty((dim, m), "<f4"), np.empty((n, first), "<f4"),
                        np.empty((n, m - first), "<f4")) if m and n else None
        arrays = [ids, hashes, vecs] + ([pre.basis, pre.proj, pre.fine] if pre else [])
        sinks = [memoryview(a.reshape(-1).view(np.uint8)) for a in arrays if a.size]
        total = sum(len(s) for s in sinks)
        _read_ahead(fh)
        frame = bytearray(16)
        sealed = bytearray(0)  # one buffer for every sealed segment, grown as needed
        i, filled, sink, at = 0, 0, 0, 0
        while True:
            got = fh.readinto(frame)
            if not got:
                break
            if got != 16:
                raise ValueError("truncated")
            (size,) = struct.unpack_from(">I", frame, 12)
            if size <= 16 or filled + size - 16 > total:
                raise ValueError("wrong size")
            if size > len(sealed):
                sealed = bytearray(size)
            body = memoryview(sealed)[:size]
            if fh.readinto(body) != size:
                raise ValueError("truncated")
            plain, aad = size - 16, head + struct.pack(">I", i)
            if at + plain <= len(sinks[sink]):  # opened straight into its array
                if _INTO:
                    self._aead.decrypt_into(bytes(frame[:12]), body, aad,
                                            sinks[sink][at:at + plain])
                else:  # a cryptography without decrypt_into: one copy more
                    sinks[sink][at:at + plain] = self._aead.decrypt(bytes(frame[:12]), body, aad)
                at += plain
            else:
                sink, at = self._open_across(bytes(frame[:12]), body, aad, sinks, sink, at)
            if at == len(sinks[sink]) and sink + 1 < len(sinks):
                sink, at = sink + 1, 0
            i, filled = i + 1, filled + plain
        if filled != total:
            raise ValueError("wrong size")
        return Snapshot(int(version), ids.astype(np.int64, copy=False),
                        hashes.astype(np.uint64, copy=False),
                        vecs.astype(vecs.dtype.newbyteorder("="), copy=False), pre)

    def _open_across(self, nonce: bytes, body: memoryview, aad: bytes,
                     sinks: list[memoryview], sink: int, at: int) -> tuple[int, int]:
        """A segment that straddles arrays, opened a piece at a time into them (its tag is
        checked at the end: a failed one discards the whole read); where the read goes
        on."""
        dec = Cipher(algorithms.AES(self._raw), modes.GCM(nonce, bytes(body[-16:]))).decryptor()
        dec.authenticate_additional_data(aad)
        src, end = 0, len(body) - 16
        while src < end:
            if at == len(sinks[sink]):
                sink, at = sink + 1, 0
            take = min(end - src, len(sinks[sink]) - at, _PIECE)
            out = dec.update(body[src:src + take])
            if len(out) != take:  # GCM gives back as much as it is given
                raise ValueError("wrong size")
            sinks[sink][at:at + take] = out
            src, at = src + take, at + take
        dec.finalize()
        return sink, at

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)

    def rekey(self, key: bytes) -> bool:
        """Seal the snapshot again under ``key`` (a rotated data key), unless it is sealed
        under it already. A snapshot neither key reads is removed (the next open rebuilds
        the index from the vault). True when a usable snapshot is left."""
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(_HEAD1.size)
        except FileNotFoundError:
            return False
        fields = _HEAD1.unpack(head) if len(head) == _HEAD1.size else None
        target = SnapshotFile(self.path, key)
        if fields is not None and fields[2] == target._key_id:
            return True  # sealed under the new key already (a rotation finished at open)
        snap = self.load(fields[5]) if fields is not None else None
        if snap is None:
            self.remove()
            return False
        target.save(snap)
        return True
