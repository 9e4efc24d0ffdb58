"""Words as the keyword index holds them: FTS5's own tokens, and how many chunks hold each.

The index (``chunks_fts``) tokenizes with ``porter unicode61 remove_diacritics 2``, so
"uses" is indexed as "us" and "memory" as "memori". A word's chunk count is looked up
under the tokens that FTS5 itself makes of it: the word is tokenized by an in-memory
FTS5 table with the same tokenizer (``temp`` schema, ``temp_store = MEMORY``: nothing
reaches the disk), one per connection. Guessing the stem from the word's prefixes, as
before, missed words whose stem is not a prefix of them ("uses" -> "us"), so a common
word could pass for a rare one and stay in a query it made slow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlcipher3 import dbapi2 as sqlite

# Must match the tokenizer of chunks_fts (engine/store/vault/migrations.py).
TOKENIZE = "porter unicode61 remove_diacritics 2"
TOKENS_MAX = 200_000  # words whose tokens a cache keeps (emptied when full)


def _tokenizer(conn: Any) -> None:
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.ctx_words "
                 f"USING fts5(w, tokenize='{TOKENIZE}')")
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.ctx_words_i "
                 "USING fts5vocab(temp, ctx_words, instance)")


def _tokenize(conn: Any, words: list[str]) -> list[tuple[int, str, int]]:
    """(row, token, offset) of ``words`` as rows 1..n of the tokenizing table. The table
    is made on a connection's first use (asking costs more than the whole lookup)."""
    try:
        conn.execute("DELETE FROM temp.ctx_words")
    except sqlite.OperationalError:
        _tokenizer(conn)
    conn.executemany("INSERT INTO temp.ctx_words(rowid, w) VALUES (?, ?)",
                     list(enumerate(words, 1)))
    rows = conn.execute("SELECT doc, term, offset FROM temp.ctx_words_i").fetchall()
    conn.execute("DELETE FROM temp.ctx_words")
    return [(int(d), str(t), int(o)) for d, t, o in rows]


def index_tokens(conn: Any, words: Sequence[str],
                 cache: dict[str, tuple[str, ...]] | None = None) -> dict[str, tuple[str, ...]]:
    """word -> the index tokens FTS5 makes of it, in order ("isn't" -> ("isn", "t")).
    ``cache`` (the vault's, emptied when it closes) keeps them between calls."""
    kept = {} if cache is None else cache
    out = {w: kept.get(w) for w in words}
    missing = [w for w, toks in out.items() if toks is None]
    if missing:
        found: dict[int, list[tuple[int, str]]] = {}
        for doc, term, offset in _tokenize(conn, missing):
            found.setdefault(doc, []).append((offset, term))
        if len(kept) + len(missing) > TOKENS_MAX:
            kept.clear()
        for i, w in enumerate(missing, 1):
            out[w] = kept[w] = tuple(t for _, t in sorted(found.get(i, [])))
    return {w: out[w] or () for w in words}


def chunk_counts(conn: Any, words: Sequence[str], common: Mapping[str, int] | None = None,
                 cache: dict[str, tuple[str, ...]] | None = None) -> dict[str, int]:
    """word -> how many chunks hold it: for a word of several tokens, the count of its
    rarest token (an upper bound on the chunks holding them all); 0 for no token.
    Tokens in ``common`` (``common_counts``) take their count from there; the others
    are looked up one by one (FTS5 counts a term by reading its whole posting list:
    0.8 ms for a term in 30k of 100k chunks, 0.07 ms for one in 500)."""
    common = common or {}
    tokens = index_tokens(conn, words, cache)
    flat = sorted({t for toks in tokens.values() for t in toks if t not in common})
    rows: dict[str, int] = {}
    for i in range(0, len(flat), 400):
        part = flat[i:i + 400]
        rows.update(conn.execute(
            f"SELECT term, doc FROM chunks_vocab WHERE term IN ({','.join('?' * len(part))})",
            part).fetchall())
    rows.update(common)
    return {w: min((int(rows.get(t, 0)) for t in toks), default=0)
            for w, toks in tokens.items()}


def common_counts(conn: Any, floor: int) -> dict[str, int]:
    """Every index term held by at least ``floor`` chunks, with its count: one pass over
    the vocabulary (0.3 s at 100k chunks, 89k terms), against up to a millisecond per
    common term looked up alone."""
    return {str(t): int(d) for t, d in conn.execute(
        "SELECT term, doc FROM chunks_vocab WHERE doc >= ?", (floor,))}
