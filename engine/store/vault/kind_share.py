"""How many of a store's chunks a kinds filter lets through: the keyword lane's plan.

A keyword query with a filter joins every row FTS5 matches to its chunk and its
source to test the filter, which doubled recall's keyword lane (the four transcript
kinds, in a store of sessions: p50 31 vs 14 ms, p95 77 vs 30 ms at 48,893 chunks;
/tmp scratch of issue 26, bench.recall_bench's store). Yet when most chunks pass,
the best rows without the filter are nearly all the best rows with it. So when a
filter of kinds alone lets at least ``OVERFETCH_MIN_SHARE`` of the chunks through,
the lane asks FTS5 for a few more rows than it needs without the filter and tests
only those (``Vault.keyword``); when too few of them pass, it asks again with the
join. The rows are the same either way: a passing row ranked below the rows fetched
ranks below every passing row among them.

The share is counted from the chunks by (chunk kind, source kind), once, and again
when the store's chunk count has moved by ``SHARE_DRIFT`` since (36 ms at 48,893
chunks, 190 ms cold; ``ContextEngine.warm_up`` counts it at open). A share gone stale
only picks the slower plan or a second query, never other rows.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

# From this share of passing chunks the lane fetches without the filter. Hand-set: at a
# share s the unfiltered fetch reads limit / s rows, and a miss costs a second query;
# above one half a miss needs a query whose passing rows are rarer than the store's.
OVERFETCH_MIN_SHARE = 0.5
# Rows fetched past limit / share, for the filter's rows not being spread evenly.
OVERFETCH_SLACK = 1.25
SHARE_DRIFT = 0.1  # counted again once the chunk count moved this much


class KindShare:
    """The share of a store's chunks that a kinds filter passes (see the module doc)."""

    def __init__(self) -> None:
        # (chunk count when counted, (chunk kind, source kind) -> chunks)
        self._held: tuple[int, dict[tuple[str, str], int]] | None = None
        self._lock = threading.Lock()

    def counts(self, conn: Any, chunks: int) -> dict[tuple[str, str], int]:
        """The chunks by (chunk kind, source kind), counted again past the drift."""
        held = self._held
        if held is not None and abs(chunks - held[0]) <= SHARE_DRIFT * held[0]:
            return held[1]
        with self._lock:
            held = self._held
            if held is not None and abs(chunks - held[0]) <= SHARE_DRIFT * held[0]:
                return held[1]
            rows = conn.execute(
                "SELECT c.kind, s.kind, count(*) FROM chunks c "
                "JOIN sources s ON s.id = c.source_id GROUP BY c.kind, s.kind").fetchall()
            counts = {(r[0], r[1]): int(r[2]) for r in rows}
            self._held = (sum(counts.values()), counts)
            return counts

    def share(self, conn: Any, chunks: int, kinds: Sequence[str]) -> float:
        """The share of chunks whose own kind or whose source's kind is in ``kinds``."""
        counts = self.counts(conn, chunks)
        total = sum(counts.values())
        wanted = set(kinds)
        passing = sum(n for (ck, sk), n in counts.items() if ck in wanted or sk in wanted)
        return passing / total if total else 0.0


def overfetch(fetch_rows: Callable[[int], list[tuple[int, float]]],
              passing: Callable[[list[int]], set[int]], limit: int, share: float
              ) -> list[tuple[int, float]] | None:
    """The best ``limit`` passing rows, from unfiltered rows (``fetch_rows(n)``: the
    best n, lowest bm25 first) tested by ``passing``; None when the rows fetched cannot
    tell (too few pass, or none: the filtered query decides then, as it did before)."""
    fetch = min(1000, int(limit / max(share, OVERFETCH_MIN_SHARE) * OVERFETCH_SLACK) + 8)
    rows = fetch_rows(fetch)
    keep = passing([r[0] for r in rows])
    out = [r for r in rows if r[0] in keep]
    if out and (len(out) >= limit or len(rows) < fetch):
        return out[:limit]
    return None
