"""Keyed vector ids: what the vector store calls a chunk, unlinkable to ingest order.

A chunk's id in the vault is a sequence number, so storing it beside its vector
would let someone who knows the order the user's files went in pair vectors
with files. The vector store gets instead the chunk id encrypted as one AES
block under a key derived from the data key: a keyed pseudo-random
permutation, so the ids look random, never collide, and are turned back into
chunk ids without any lookup table.
"""

from __future__ import annotations

from collections.abc import Iterable

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from engine.crypto.keys import derive


class KeyedIds:
    def __init__(self, key: bytes) -> None:
        cipher = Cipher(algorithms.AES(derive(key, "vector-ids")), modes.ECB())
        self._cipher = cipher

    def encode(self, chunk_ids: Iterable[int]) -> list[str]:
        """Vector-store ids for chunk ids (hex of one AES block each)."""
        enc = self._cipher.encryptor()
        out = []
        for cid in chunk_ids:
            out.append(enc.update(b"ctx-vid\x00" + int(cid).to_bytes(8, "big")).hex())
        enc.finalize()
        return out

    def decode(self, ids: Iterable[str]) -> list[int | None]:
        """Chunk ids back from vector-store ids; None for an id this key never made."""
        dec = self._cipher.decryptor()
        out: list[int | None] = []
        for text in ids:
            try:
                block = bytes.fromhex(text)
            except ValueError:
                out.append(None)
                continue
            if len(block) != 16:
                out.append(None)
                continue
            plain = dec.update(block)
            out.append(int.from_bytes(plain[8:], "big") if plain[:8] == b"ctx-vid\x00"
                       else None)
        dec.finalize()
        return out
