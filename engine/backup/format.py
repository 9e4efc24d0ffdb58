"""The backup file: one file, every byte of the store's data encrypted under its data key.

Layout::

    "CTXBACK\\0"  format (u16)  header length (u32)  header (UTF-8 JSON, in the clear)
    segment*      each: length (u32), then AES-256-GCM ciphertext (plaintext <= 1 MiB)

The header says which store and key the backup belongs to and carries the data key
as key.json wrapped it when the backup was taken (under the passphrase, for the
recovery key, or the name of its keychain entry), so that a fresh machine can
unlock it with the passphrase or the recovery key of that day. It holds no text,
no name, no count.

The segments are one stream (the STREAM construction): a key made for this file
alone (HKDF of the data key with the header's random salt), a nonce that is the
segment's number and a flag on the last one, and the header's hash as associated
data. So a changed byte anywhere, segments swapped, dropped or cut off, a header
edited or moved onto another file's segments: each fails a tag check and is
named (``BackupDamaged``); nothing after the last segment is allowed either.

The plaintext stream: the manifest's length (u32) and the manifest (JSON: the
store and key ids again, counts, the entries' names and sizes), then each
entry's bytes in turn: ``vault.db`` (the SQLCipher file, encrypted in itself
too), ``vectors`` (the in-memory index, when taken) and ``config.toml``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from engine.errors import BackupDamaged

MAGIC = b"CTXBACK\x00"
FORMAT = 1
SUFFIX = ".ctxbackup"  # the extension a backup's name gets by default
SEGMENT = 1 << 20  # plaintext bytes per segment
_PREFIX = struct.Struct(">8sHI")
_LEN = struct.Struct(">I")
MAX_HEADER = 64 * 1024
MAX_MANIFEST = 1 << 20
_TAG = 16


@dataclass(frozen=True)
class Header:
    """What a backup says of itself in the clear."""

    store_id: str
    key_id: str
    created: float
    salt: str  # base64 of the stream key's 16-byte salt
    wraps: dict[str, Any]  # the data key, wrapped as in key.json (engine.crypto.keys)
    format: int = FORMAT

    def to_json(self) -> bytes:
        return json.dumps({"format": self.format, "store_id": self.store_id,
                           "key_id": self.key_id, "created": self.created, "salt": self.salt,
                           "wraps": self.wraps}, sort_keys=True).encode("utf-8")


@dataclass(frozen=True)
class Manifest:
    """The first thing in the encrypted stream: what the backup holds."""

    store_id: str
    key_id: str
    entries: list[tuple[str, int]]  # (name, size in bytes), in stream order
    counts: dict[str, Any] = field(default_factory=dict)  # sources, chunks, vectors, model...

    def to_json(self) -> bytes:
        return json.dumps({"store_id": self.store_id, "key_id": self.key_id,
                           "entries": [[n, s] for n, s in self.entries],
                           "counts": self.counts}, sort_keys=True).encode("utf-8")


def _damaged(why: str) -> BackupDamaged:
    return BackupDamaged(f"the backup is damaged: {why}; nothing was written")


def stream_key(data_key: bytes, header: Header) -> bytes:
    try:
        salt = base64.b64decode(header.salt.encode("ascii"), validate=True)
    except (ValueError, binascii.Error, UnicodeEncodeError):
        raise _damaged("its header's salt is not base64") from None
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt,
                info=b"ctx-backup-stream-v1").derive(data_key)


def _nonce(index: int, last: bool) -> bytes:
    return struct.pack(">QI", index, 1 if last else 0)


class BackupWriter:
    """Writes a backup to ``fh``: the header now, then what ``write`` is given, sealed."""

    def __init__(self, fh: IO[bytes], header: Header, data_key: bytes) -> None:
        head = header.to_json()
        prefix = _PREFIX.pack(MAGIC, header.format, len(head))
        self._fh = fh
        self._aead = AESGCM(stream_key(data_key, header))
        self._aad = hashlib.sha256(prefix + head).digest()
        self._buf = bytearray()
        self._index = 0
        self.bytes = len(prefix) + len(head)
        fh.write(prefix + head)

    def write(self, data: bytes | memoryview) -> None:
        self._buf += data
        while len(self._buf) > SEGMENT:  # keep at least one byte back for the last one
            self._seal(bytes(self._buf[:SEGMENT]), last=False)
            del self._buf[:SEGMENT]

    def close(self) -> None:
        """Seal what is left as the last segment (the mark of a whole backup)."""
        self._seal(bytes(self._buf), last=True)
        self._buf = bytearray()

    def _seal(self, plain: bytes, *, last: bool) -> None:
        sealed = self._aead.encrypt(_nonce(self._index, last), plain, self._aad)
        self._fh.write(_LEN.pack(len(sealed)) + sealed)
        self._index += 1
        self.bytes += _LEN.size + len(sealed)


def read_header(fh: IO[bytes]) -> tuple[Header, bytes]:
    """The header of the backup open in ``fh`` and the associated data of its segments.
    BackupDamaged when the file is not a ctx backup or its header is malformed."""
    raw = fh.read(_PREFIX.size)
    if len(raw) < _PREFIX.size or raw[:8] != MAGIC:
        raise BackupDamaged("not a ctx backup file (its first bytes are not a backup's)")
    _, fmt, size = _PREFIX.unpack(raw)
    if fmt != FORMAT:
        raise BackupDamaged(f"backup format {fmt} is not one this ctx reads ({FORMAT})")
    if size > MAX_HEADER:
        raise _damaged("its header is too long")
    head = fh.read(size)
    if len(head) != size:
        raise _damaged("it is truncated (within its header)")
    try:
        data = json.loads(head.decode("utf-8"))
        header = Header(store_id=str(data["store_id"]), key_id=str(data["key_id"]),
                        created=float(data["created"]), salt=str(data["salt"]),
                        wraps=dict(data["wraps"]), format=int(data["format"]))
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise _damaged("its header is not what a backup writes") from None
    if header.format != fmt or header.wraps.get("key_id") != header.key_id:
        raise _damaged("its header contradicts itself")
    return header, hashlib.sha256(raw + head).digest()


class BackupReader:
    """The plaintext of a backup's segments, checked segment by segment; ``read`` gives
    exactly what was written, or raises BackupDamaged (truncated, changed, extended)."""

    def __init__(self, fh: IO[bytes], header: Header, aad: bytes, data_key: bytes) -> None:
        self._fh = fh
        self._aead = AESGCM(stream_key(data_key, header))
        self._aad = aad
        self._index = 0
        self._buf = b""
        self._ended = False
        self.read_bytes = 0  # of the file, for progress

    def _next(self) -> None:
        raw = self._fh.read(_LEN.size)
        if len(raw) < _LEN.size:
            raise _damaged("it is truncated (it ends before its last part)")
        (size,) = _LEN.unpack(raw)
        if not _TAG <= size <= SEGMENT + _TAG:
            raise _damaged(f"part {self._index} has an impossible length")
        sealed = self._fh.read(size)
        if len(sealed) != size:
            raise _damaged("it is truncated (within a part)")
        self.read_bytes += _LEN.size + size
        for last in (False, True):
            try:
                plain = self._aead.decrypt(_nonce(self._index, last), sealed, self._aad)
            except InvalidTag:
                continue
            self._index += 1
            self._buf += plain
            if last:
                self._ended = True
                if self._fh.read(1):
                    raise _damaged("bytes follow its last part")
            return
        raise _damaged(f"part {self._index} was changed or does not belong here")

    def read(self, n: int) -> bytes:
        """Exactly ``n`` bytes of plaintext (BackupDamaged if the stream has fewer)."""
        while len(self._buf) < n:
            if self._ended:
                raise _damaged("it holds less than its manifest says")
            self._next()
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def chunks(self, n: int, size: int = SEGMENT) -> Iterator[bytes]:
        """``n`` bytes of plaintext in pieces of at most ``size``."""
        left = n
        while left:
            piece = self.read(min(size, left))
            left -= len(piece)
            yield piece

    def finish(self) -> None:
        """The stream must end here: nothing unread, the last segment seen."""
        if not self._ended and not self._buf:
            self._next()  # the last segment (empty when the data filled the one before)
        if self._buf or not self._ended:
            raise _damaged("it holds more than its manifest says")


def read_manifest(reader: BackupReader, header: Header) -> Manifest:
    (size,) = _LEN.unpack(reader.read(_LEN.size))
    if size > MAX_MANIFEST:
        raise _damaged("its manifest is too long")
    try:
        data = json.loads(reader.read(size).decode("utf-8"))
        manifest = Manifest(str(data["store_id"]), str(data["key_id"]),
                            [(str(n), int(s)) for n, s in data["entries"]],
                            dict(data.get("counts") or {}))
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise _damaged("its manifest is not what a backup writes") from None
    if (manifest.store_id, manifest.key_id) != (header.store_id, header.key_id):
        raise _damaged("its header belongs to another backup")
    if any(s < 0 for _, s in manifest.entries):
        raise _damaged("its manifest is not what a backup writes")
    return manifest


def write_manifest(writer: BackupWriter, manifest: Manifest) -> None:
    body = manifest.to_json()
    writer.write(_LEN.pack(len(body)) + body)


def new_salt() -> str:
    return base64.b64encode(os.urandom(16)).decode("ascii")
