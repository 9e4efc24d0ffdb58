"""The vector index: in memory with a sealed snapshot by default, or Chroma.

- ``index``       what the engine needs from a vector index, and the Chroma one;
- ``memory``      the default, in memory only, with ``exact_index`` (the exact search;
  ``select`` picks its prefilter's best candidates) and ``snapshot`` (saved sealed, so a
  store opens fast);
- ``shared_lock`` the exact index's lock: reads shared, writes alone;
- ``cache``       a big store's vectors in memory;
- ``ids``         keyed ids, unlinkable to ingest order.
"""
