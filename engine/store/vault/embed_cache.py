"""The vault's embedding cache: model-space vectors keyed by model and the exact text
the model saw (``engine.ingest.embedtext.cache_key``), float32 bytes.

Writes add rows (a key already there keeps its vector); a repair drops the rows no
chunk uses any more. Reads by key are ``Vault.cached_vectors``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from engine.store.vault.core import Vault


def put(vault: Vault, rows: Iterable[tuple[str, bytes]], *, chunks: bool = True) -> None:
    """Add (key, vector bytes) rows in one write; keys already cached keep their row.
    ``chunks=False``: a write the vault's chunk caches may outlive (``Vault.write``)."""
    with vault.write(chunks=chunks) as c:
        c.executemany("INSERT OR IGNORE INTO embed_cache VALUES (?, ?)", list(rows))


def present(vault: Vault, keys: Sequence[str]) -> set[str]:
    """Those of ``keys`` that the cache holds (their vectors are not read)."""
    out: set[str] = set()
    keys = list(keys)
    for i in range(0, len(keys), 900):
        part = keys[i:i + 900]
        out.update(r[0] for r in vault._query(
            f"SELECT hash FROM embed_cache WHERE hash IN ({','.join('?' * len(part))})", part))
    return out


def scan(vault: Vault) -> Iterator[tuple[str, bytes]]:
    """Every cached (key, vector bytes), in one sequential read of the table (looking
    keys up one by one costs a random, decrypted page read each)."""
    yield from vault._conn().execute("SELECT hash, vec FROM embed_cache")


def keys(vault: Vault) -> list[str]:
    """Every cached key."""
    return [r[0] for r in vault._query("SELECT hash FROM embed_cache")]


def drop(vault: Vault, stale: Sequence[str]) -> None:
    """Remove these keys' rows (a repair's garbage collection)."""
    if stale:
        with vault.write(chunks=False) as c:
            c.executemany("DELETE FROM embed_cache WHERE hash = ?", [(h,) for h in stale])
