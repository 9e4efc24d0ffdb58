"""A sha256 over every payload (and search result) a bench run makes.

Two runs of one bench on one store that print the same digests returned the same
payloads byte for byte: the context string, its token count and budget, and every
item's kind, source, title, time, tokens, score (exact float repr), lanes, reason
and chunk ids; the search digest covers each hit's chunk id, score and lanes.
The text digest leaves the scores out: two runs that print the same text digest
returned the same context strings holding the same chunks. Only fields that every version of the engine's payload carries are read, so that
a run of an older checkout can be compared with a newer one.

Scores are sums over sets of words, whose order follows Python's string hashing,
which is salted per process: two processes differ in a score's last bits unless
both run with one ``PYTHONHASHSEED``. A digest run therefore runs under
``PYTHONHASHSEED=0`` (``fixed_hash_seed`` starts the bench again under it).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any


def fixed_hash_seed(module: str, argv: Sequence[str]) -> None:
    """Run ``python -m module argv`` again under PYTHONHASHSEED=0 unless this process
    already runs under it (does not return then)."""
    if os.environ.get("PYTHONHASHSEED") == "0":
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", module, *argv],
              {**os.environ, "PYTHONHASHSEED": "0"})


def _float(value: float | None) -> str | None:
    return None if value is None else repr(float(value))


class RunDigest:
    """Feeds payloads and search hits, in the order the bench asks for them."""

    def __init__(self) -> None:
        self._payloads = hashlib.sha256()
        self._texts = hashlib.sha256()
        self._search = hashlib.sha256()
        self.payloads = 0
        self.searches = 0

    def payload(self, question: str, payload: Any) -> None:
        items = [[i.kind, i.source, i.title, _float(i.time), i.tokens, _float(i.score),
                  sorted(i.lanes.items()), i.why, list(i.chunk_ids)] for i in payload.items]
        record = [question, payload.budget, payload.total_tokens, payload.format,
                  payload.context, items]
        self._payloads.update(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n")
        # what a reader of the payload sees: its text and which chunks it holds, no scores
        seen = [question, payload.budget, payload.total_tokens, payload.context,
                [[i.kind, i.source, list(i.chunk_ids)] for i in payload.items]]
        self._texts.update(json.dumps(seen, ensure_ascii=False).encode("utf-8") + b"\n")
        self.payloads += 1

    def search(self, question: str, hits: Iterable[Any]) -> None:
        record = [question, [[h.chunk_id, _float(h.score), sorted(h.lanes.items())]
                             for h in hits]]
        self._search.update(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n")
        self.searches += 1

    def lines(self) -> list[str]:
        return [f"payload digest: sha256 {self._payloads.hexdigest()} ({self.payloads} payloads)",
                f"payload text digest (no scores): sha256 {self._texts.hexdigest()}",
                f"search digest: sha256 {self._search.hexdigest()} ({self.searches} searches)"]
