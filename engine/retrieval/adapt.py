"""What recall learned from the user's own sessions, and how a query uses it.

Two parts, both fitted on the store's sessions at run time (``adapt_fit``), never
shipped: a query-side linear map over the embedding space (``matrix``; a question's
vector is mapped, then searched as before) and a term translation table (``terms``:
a word of the user's requests -> the words of what answered them), whose words for a
query make a keyword lane of their own, weighted below the query's own words.

The model is user data: it is stored in the encrypted vault (``engine/store/vault/adapt.py``)
and goes with the sessions it came from. Its wire form (``to_bytes``) is a JSON header
and raw float32 bytes: no pickle.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Learned:
    """A fitted reader: the query map (None: not fitted or not better than identity),
    the term table, and what it was fitted on (counts and times, no text)."""

    matrix: np.ndarray | None
    terms: Mapping[str, tuple[tuple[str, float], ...]]
    info: Mapping[str, Any] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        """JSON header (info, terms, the matrix's shape) + the matrix's float32 bytes."""
        shape = list(self.matrix.shape) if self.matrix is not None else None
        head = json.dumps({"info": dict(self.info), "shape": shape,
                           "terms": {w: [[t, s] for t, s in ts] for w, ts in self.terms.items()}},
                          sort_keys=True).encode()
        body = (np.ascontiguousarray(self.matrix, dtype="<f4").tobytes()
                if self.matrix is not None else b"")
        return struct.pack("<I", len(head)) + head + body

    @classmethod
    def from_bytes(cls, data: bytes) -> Learned:
        try:
            (n,) = struct.unpack_from("<I", data)
            head = json.loads(data[4:4 + n])
            shape = head["shape"]
            matrix = None
            if shape is not None:
                matrix = np.frombuffer(data[4 + n:], dtype="<f4").astype(np.float32)
                matrix = matrix.reshape(shape)
            terms = {w: tuple((str(t), float(s)) for t, s in ts)
                     for w, ts in head["terms"].items()}
            return cls(matrix, terms, head["info"])
        except (struct.error, ValueError, KeyError, TypeError) as e:
            raise ValueError("the learned recall model cannot be read") from e


def map_query(matrix: np.ndarray | None, vec: np.ndarray) -> np.ndarray:
    """``vec`` mapped by ``matrix`` and normalized (as the embedder's vectors are);
    ``vec`` itself when there is no map or its size differs (another model)."""
    if matrix is None or matrix.shape[1] != len(vec):
        return vec
    out = matrix @ np.asarray(vec, dtype=np.float32)
    norm = float(np.linalg.norm(out))
    return (out / norm).astype(np.float32) if norm > 0 else vec


def translated_words(terms: Mapping[str, Sequence[tuple[str, float]]], words: Iterable[str],
                     per_word: int, limit: int) -> list[str]:
    """The user's own words for ``words`` (the query's): at most ``per_word`` for each
    and ``limit`` in all, best score first, none of the query's own."""
    own = [w.lower() for w in words]
    seen = set(own)
    scored: dict[str, float] = {}
    for w in own:
        for t, s in list(terms.get(w, ()))[:per_word]:
            if t not in seen and s > scored.get(t, float("-inf")):
                scored[t] = s
    return sorted(scored, key=lambda t: (-scored[t], t))[:limit]
