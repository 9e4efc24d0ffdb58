"""The in-memory vector index saved encrypted, so that a store keeping no vector in the
clear opens fast: at 100k chunks, reading one sealed file instead of rebuilding the
index from the vault's embedding cache.

``vectors.snap``: a header in the clear (magic, format, the data key's id, the vault's
chunk version when taken, count, dimension), then the chunk ids, a fingerprint of
each chunk's text and its model-space vector, sealed with AES-256-GCM in segments
under a key derived from the data key; the header is every segment's associated
data, so no segment moves between snapshots or stores unnoticed. Without the key
the file says how many vectors there are (its size) and nothing else: no vector,
no order, no similarity between them (docs/threat-model.md).

A snapshot is taken only where no write runs beside it (at open after a rebuild, in
the single writer after a delete, at close), so its chunk version says exactly which
chunks it holds. Any other state of the file (missing, another store's, damaged,
another format) only means "rebuild": the vault holds every vector anyway.
"""

from __future__ import annotations

import logging
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from engine.crypto.keys import derive, key_id

log = logging.getLogger("ctx.vectors")

MAGIC = b"CTXVSNAP"
FORMAT = 1
SEGMENT = 8 << 20  # bytes sealed at a time: the save's extra memory stays small
_HEAD = struct.Struct(">8sH16sQQH")  # magic, format, key id, chunk version, count, dim


@dataclass(frozen=True)
class Snapshot:
    """What a snapshot holds: ``version`` is the vault's chunk version when taken."""

    version: int
    ids: np.ndarray  # int64, ascending
    hashes: np.ndarray  # uint64: a fingerprint of each chunk's text (content hash)
    vectors: np.ndarray  # float32, n x dim, model space

    def __len__(self) -> int:
        return len(self.ids)


def fingerprint(content_hashes: list[str]) -> np.ndarray:
    """uint64 of each chunk's content hash (hex): tells a reused chunk id apart."""
    return np.array([int(h[:16], 16) if h else 0 for h in content_hashes], dtype=np.uint64)


class SnapshotFile:
    def __init__(self, path: Path, key: bytes) -> None:
        self.path = path
        self._aead = AESGCM(derive(key, "vector-snapshot"))
        self._key_id = bytes.fromhex(key_id(key))[:16].ljust(16, b"\0")

    def save(self, snap: Snapshot) -> None:
        """Write ``snap`` (atomically: a temporary file renamed over the old one)."""
        n, dim = snap.vectors.shape if len(snap) else (0, 0)
        head = _HEAD.pack(MAGIC, FORMAT, self._key_id, snap.version, n, dim)
        body = b"".join((np.ascontiguousarray(snap.ids, dtype="<i8").tobytes(),
                         np.ascontiguousarray(snap.hashes, dtype="<u8").tobytes(),
                         np.ascontiguousarray(snap.vectors, dtype="<f4").tobytes()))
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(head)
                view = memoryview(body)
                for i, at in enumerate(range(0, len(body), SEGMENT)):
                    nonce = os.urandom(12)
                    sealed = self._aead.encrypt(nonce, bytes(view[at:at + SEGMENT]),
                                                head + struct.pack(">I", i))
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
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("vector snapshot unreadable (%s): rebuilding", exc.strerror)
            return None
        try:
            return self._parse(data, dim)
        except (ValueError, struct.error, InvalidTag) as exc:
            log.warning("vector snapshot not used (%s): rebuilding from the vault",
                        type(exc).__name__ if isinstance(exc, InvalidTag) else exc)
            return None

    def _parse(self, data: bytes, dim: int) -> Snapshot:
        magic, fmt, kid, version, n, got_dim = _HEAD.unpack_from(data)
        if magic != MAGIC or fmt != FORMAT:
            raise ValueError("not a snapshot of this format")
        if kid != self._key_id:
            raise ValueError("made with another key")
        if n and got_dim != dim:
            raise ValueError("made for another model dimension")
        head = data[:_HEAD.size]
        body = bytearray(n * (16 + 4 * dim))  # decrypted in place: one copy of the vectors
        at, i, filled = _HEAD.size, 0, 0
        while at < len(data):
            nonce = data[at:at + 12]
            (size,) = struct.unpack_from(">I", data, at + 12)
            sealed = data[at + 16:at + 16 + size]
            if len(sealed) != size:
                raise ValueError("truncated")
            plain = self._aead.decrypt(nonce, sealed, head + struct.pack(">I", i))
            if filled + len(plain) > len(body):
                raise ValueError("wrong size")
            body[filled:filled + len(plain)] = plain
            at, i, filled = at + 16 + size, i + 1, filled + len(plain)
        if filled != len(body):
            raise ValueError("wrong size")
        ids = np.frombuffer(body, dtype="<i8", count=n)
        hashes = np.frombuffer(body, dtype="<u8", count=n, offset=8 * n)
        vecs = np.frombuffer(body, dtype="<f4", count=n * dim, offset=16 * n).reshape(n, dim)
        return Snapshot(int(version), ids.astype(np.int64, copy=False),
                        hashes.astype(np.uint64, copy=False),
                        vecs.astype(np.float32, copy=False) if n else
                        np.zeros((0, dim), np.float32))

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)

    def rekey(self, key: bytes) -> bool:
        """Seal the snapshot again under ``key`` (a rotated data key), unless it is sealed
        under it already. A snapshot neither key reads is removed (the next open rebuilds
        the index from the vault). True when a usable snapshot is left."""
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(_HEAD.size)
        except FileNotFoundError:
            return False
        fields = _HEAD.unpack(head) if len(head) == _HEAD.size else None
        target = SnapshotFile(self.path, key)
        if fields is not None and fields[2] == target._key_id:
            return True  # sealed under the new key already (a rotation finished at open)
        snap = self.load(fields[5]) if fields is not None else None
        if snap is None:
            self.remove()
            return False
        target.save(snap)
        return True
