"""Storage: the encrypted vault (SQLCipher) and the vector index. Every SQL statement of
the engine is here, behind named functions (tests/test_sql_boundary.py).

- ``vault``    the SQLCipher vault and every SQL statement (its own map);
- ``vectors``  the vector index: in memory with a sealed snapshot, or Chroma (its own map);
- ``config``   the [store] section.
"""
