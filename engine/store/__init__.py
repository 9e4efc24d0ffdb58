"""Storage: the encrypted vault (SQLCipher) and the vector index. Every SQL statement of
the engine is here, behind named functions (tests/test_sql_boundary.py).

The vault, and what its reads take and give:

- ``vault``       the open vault: one connection per thread, the single writer, chunk and
  keyword reads (``Vault``);
- ``rows``        the search filters (``Filters``) and a chunk read with its source
  (``ChunkRow``);
- ``migrations``  the numbered schema migrations; ``layout`` what a data dir holds, read
  before anything is opened; ``lock`` one engine per data dir;
- ``integrity``, ``guard``, ``gate``  damage named wherever it shows, the open file
  watched, the read gate a file swap holds alone;
- ``reserve``     room kept to clean up after a full disk; ``rekey`` a new key for the
  vault (closed, or exported and swapped in while it runs); ``vault_copy`` a
  consistent copy of a vault in use (backups);
- ``config``      the [store] section.

Named reads and writes on the vault, by concern:

- ``sources``     sources stored in two stages, crash-safe with the vector index;
  ``aliases`` paths sharing a stored source; ``surrogate_rows`` stored summaries;
- ``neighbours``  the chunks beside the best hits; ``fts_terms`` words as the keyword
  index holds them; ``kind_share`` what a kinds filter lets through;
- ``sessions``, ``session_terms``, ``recall_files``, ``adapt``  coding sessions as recall
  reads them, their sync state and what recall learned;
- ``embed_cache`` the embedding cache; ``rebuild`` what a vector rebuild reads;
  ``export_rows`` what an export reads.

The vector index:

- ``vectors``     what the engine needs from a vector index, and the Chroma one;
- ``memory_vectors`` the default, in memory only, with ``exact_index`` (the exact search)
  and ``snapshot`` (saved sealed, so a store opens fast); ``vector_cache`` a big store's
  vectors in memory; ``vector_ids`` keyed ids, unlinkable to ingest order.
"""
