"""The stored surrogates of sources: the extractive full, gist and micro summaries
written with a document at ingest (``engine.surrogates``), read when packing
chooses a tier for a document hit."""

from __future__ import annotations

from collections.abc import Sequence

from engine.store.vault.core import Vault


def surrogates_of(vault: Vault, source_ids: Sequence[int]) -> dict[int, tuple[str, str, str]]:
    """source id -> (full, gist, micro) for those of ``source_ids`` that have them."""
    if not source_ids:
        return {}
    ids = list(source_ids)
    found = vault._query(
        f"SELECT source_id, full, gist, micro FROM surrogates WHERE source_id IN "
        f"({','.join('?' * len(ids))})", ids)
    return {r[0]: (r[1], r[2], r[3]) for r in found}
