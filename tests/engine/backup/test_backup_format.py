"""The backup file's format: what was written reads back; a file cut short, changed,
extended, spliced or of another key is named (BackupDamaged), never read as whole."""

from __future__ import annotations

import io
import os
import secrets
import struct

import pytest

from engine.backup import format as F
from engine.errors import BackupDamaged

KEY = secrets.token_bytes(32)


def _header(key: bytes = KEY, store: str = "00112233aabbccdd") -> F.Header:
    from engine.crypto.keys import key_id

    return F.Header(store, key_id(key), 1700000000.0, F.new_salt(),
                    {"method": "passphrase", "key_id": key_id(key)})


def _backup(payload: bytes, key: bytes = KEY, header: F.Header | None = None) -> bytes:
    buf = io.BytesIO()
    header = header or _header(key)
    writer = F.BackupWriter(buf, header, key)
    F.write_manifest(writer, F.Manifest(header.store_id, header.key_id,
                                        [("vault.db", len(payload))], {"chunks": 3}))
    writer.write(payload)
    writer.close()
    return buf.getvalue()


def _read(data: bytes, key: bytes = KEY) -> bytes:
    fh = io.BytesIO(data)
    header, aad = F.read_header(fh)
    reader = F.BackupReader(fh, header, aad, key)
    manifest = F.read_manifest(reader, header)
    out = b"".join(reader.chunks(manifest.entries[0][1]))
    reader.finish()
    return out


@pytest.mark.parametrize("size", [0, 1, F.SEGMENT - 9, F.SEGMENT, 2 * F.SEGMENT + 5])
def test_round_trip_at_every_segment_boundary(size: int) -> None:
    payload = os.urandom(size)
    assert _read(_backup(payload)) == payload


def test_the_plaintext_is_nowhere_in_the_file() -> None:
    payload = b"canary-7f3a9 " * 5000
    data = _backup(payload)
    assert b"canary-7f3a9" not in data and b"chunks" not in data


def test_cut_short_anywhere_is_truncated() -> None:
    data = _backup(os.urandom(2 * F.SEGMENT + 100))
    head = len(data) - (2 * (F.SEGMENT + 20) + 100 + 60)  # about where the segments begin
    for cut in [10, head, head + 3, len(data) - F.SEGMENT - 30, len(data) - 1]:
        with pytest.raises(BackupDamaged, match="truncated|not a ctx backup"):
            _read(data[:cut])


def _segments(data: bytes) -> list[tuple[int, int]]:
    """(offset, length with its prefix) of each segment."""
    fh = io.BytesIO(data)
    F.read_header(fh)
    at, out = fh.tell(), []
    while at < len(data):
        (size,) = struct.unpack(">I", data[at:at + 4])
        out.append((at, 4 + size))
        at += 4 + size
    return out


def test_a_whole_file_without_its_last_segment_is_truncated() -> None:
    data = _backup(os.urandom(2 * F.SEGMENT + 10))
    segments = _segments(data)
    assert len(segments) == 3
    with pytest.raises(BackupDamaged, match="truncated"):
        _read(data[:segments[-1][0]])  # cut exactly between two segments


def test_any_flipped_byte_is_named() -> None:
    data = bytearray(_backup(os.urandom(3000)))
    for at in range(0, len(data), max(1, len(data) // 40)):
        bad = bytearray(data)
        bad[at] ^= 0x01
        with pytest.raises(BackupDamaged):
            _read(bytes(bad))


def test_segments_swapped_or_appended_are_named() -> None:
    data = _backup(os.urandom(3 * F.SEGMENT))
    with pytest.raises(BackupDamaged, match="bytes follow"):
        _read(data + b"\x00")
    with pytest.raises(BackupDamaged, match="bytes follow|changed"):
        _read(data + data[-(F.SEGMENT // 2):])
    fh = io.BytesIO(data)
    F.read_header(fh)
    start = fh.tell()
    seg = 4 + F.SEGMENT + 16
    first, second = data[start:start + seg], data[start + seg:start + 2 * seg]
    swapped = data[:start] + second + first + data[start + 2 * seg:]
    with pytest.raises(BackupDamaged, match="changed or does not belong"):
        _read(swapped)


def test_a_header_moved_onto_another_backup_is_named() -> None:
    one, two = _backup(b"a" * 100), _backup(b"b" * 100)
    h1, h2 = io.BytesIO(one), io.BytesIO(two)
    F.read_header(h1)
    F.read_header(h2)
    spliced = one[:h1.tell()] + two[h2.tell():]
    with pytest.raises(BackupDamaged, match="changed or does not belong"):
        _read(spliced)


def test_another_key_cannot_read_it() -> None:
    data = _backup(b"secret text")
    with pytest.raises(BackupDamaged):
        _read(data, key=secrets.token_bytes(32))


def test_not_a_backup_at_all() -> None:
    with pytest.raises(BackupDamaged, match="not a ctx backup"):
        _read(b"SQLite format 3\x00" + bytes(100))
    data = bytearray(_backup(b"x"))
    data[8:10] = struct.pack(">H", 9)
    with pytest.raises(BackupDamaged, match="format 9"):
        _read(bytes(data))
