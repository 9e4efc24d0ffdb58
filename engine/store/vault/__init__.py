"""The encrypted vault (SQLCipher): every SQL statement of the engine, behind named functions.

The vault, and what its reads take and give:

- ``core``        the open vault: one connection per thread, the single writer, chunk
  reads and word counts (``Vault``); ``keyword_reads`` its keyword lane (FTS5 BM25 in
  ``chunks_fts`` or ``recall_fts``, bounded in big stores, and the rows a filter passes);
- ``rows``        the search filters (``Filters``) and a chunk read with its source
  (``ChunkRow``);
- ``migrations``  the numbered schema migrations; ``layout`` what a data dir holds, read
  before anything is opened; ``lock`` one engine per data dir;
- ``integrity``, ``guard``, ``gate``  damage named wherever it shows, the open file
  watched, the read gate a file swap holds alone;
- ``reserve``     room kept to clean up after a full disk; ``rekey`` a new key for the
  vault (closed, or exported and swapped in while it runs); ``copy`` a
  consistent copy of a vault in use (backups).

Named reads and writes on the vault, by concern:

- ``sources``     sources stored in two stages, crash-safe with the vector index;
  ``aliases`` paths sharing a stored source; ``surrogate_rows`` stored summaries;
  ``transcripts`` a transcript's segment sources seen as one (listed, counted, deleted);
- ``neighbours``  the chunks beside the best hits; ``fts_terms`` words as the keyword
  index holds them; ``kind_share`` what a kinds filter lets through;
- ``recency``     the recency lane's read (newest first; chunks without a time);
- ``recall_sessions``, ``session_terms``, ``recall_files``, ``adapt``  coding sessions as recall
  reads them, their sync state and what recall learned; ``call_parts`` a shown call's
  whole input and output;
- ``embed_cache`` the embedding cache; ``rebuild`` what a vector rebuild reads;
  ``export_rows`` what an export reads.
"""
