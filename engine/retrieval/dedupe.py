"""Near-duplicate suppression over a ranked list: the higher-ranked copy wins.

Overlapping chunks, re-ingested files and a live item that repeats a stored chunk
would otherwise spend the budget twice on the same words. Items with embeddings are
compared by cosine similarity; items without one (live items) by word-shingle
Jaccard overlap of their text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar, cast

import numpy as np

from engine.errors import InvalidInput

_TOKEN_RE = re.compile(r"[^\W_]+")

K = TypeVar("K", bound=Hashable)  # what is deduplicated: chunk ids, turn keys
VectorLookup = Mapping[K, Any] | Callable[[K], Any] | np.ndarray


def suppress_near_duplicates(
    ids_in_rank_order: Sequence[K],
    vectors: VectorLookup[K],
    threshold: float = 0.9,
    *,
    texts: Mapping[K, str] | None = None,
    text_threshold: float = 0.8,
) -> tuple[list[K], dict[K, K]]:
    """Drop every item too similar to a higher-ranked kept one.

    ``vectors`` is a mapping id -> vector, a callable id -> vector (or None), or a 2-D
    array whose row i belongs to ``ids_in_rank_order[i]``. An item without a usable
    vector (missing, or all zeros) is compared by text when ``texts`` has it: against
    every kept item that also lacks a vector, and against kept items with a vector
    when ``texts`` has theirs too (a live item repeating a stored chunk). Returns the
    kept ids in rank order and ``{dropped id: the kept id it duplicates}``.
    """
    if not 0.0 < threshold <= 1.0 or not 0.0 < text_threshold <= 1.0:
        raise InvalidInput("dedupe: thresholds must be in (0, 1]")
    ids = list(ids_in_rank_order)
    unit, has_vec = _unit_vectors(ids, vectors)
    sims = unit @ unit.T if len(ids) else np.zeros((0, 0), dtype=np.float32)
    # whether any higher-ranked item, kept or not, is that close: most are not, and
    # those need no look at the kept ones (a hundred lookups a build_context)
    close_above: list[bool] = cast(list[bool], np.tril(
        sims >= threshold - 1e-6, -1).any(axis=1).tolist()) if len(ids) else []
    kept: list[int] = []
    kept_vec: list[int] = []
    dropped: dict[K, K] = {}
    shingles: dict[int, frozenset[Any]] = {}
    seen: set[K] = set()
    for i, item in enumerate(ids):
        if item in seen:  # the same id twice: the later one is a duplicate of itself
            continue
        seen.add(item)
        match: int | None = None
        if has_vec[i] and kept_vec and close_above[i]:
            row = sims[i, kept_vec]
            best = int(np.argmax(row))
            if row[best] >= threshold - 1e-6:
                match = kept_vec[best]
        if match is None and texts is not None and item in texts:
            for j in kept:
                if has_vec[i] and has_vec[j]:
                    continue
                if ids[j] not in texts:
                    continue
                if i not in shingles:
                    shingles[i] = _shingles(texts[item])
                if j not in shingles:
                    shingles[j] = _shingles(texts[ids[j]])
                if _jaccard(shingles[i], shingles[j]) >= text_threshold:
                    match = j
                    break
        if match is None:
            kept.append(i)
            if has_vec[i]:
                kept_vec.append(i)
        else:
            dropped[item] = ids[match]
    return [ids[i] for i in kept], dropped


def _unit_vectors(ids: list[K], vectors: VectorLookup[K]) -> tuple[np.ndarray, list[bool]]:
    """Row-normalized float32 matrix aligned with ``ids`` (zero rows where no vector)."""
    if isinstance(vectors, np.ndarray):
        if vectors.ndim != 2 or vectors.shape[0] != len(ids):
            raise InvalidInput(f"dedupe: expected a ({len(ids)}, d) array of vectors")
        rows: list[Any] = list(vectors)
    elif isinstance(vectors, Mapping):
        rows = [vectors.get(i) for i in ids]
    else:
        rows = [vectors(i) for i in ids]
    dim = next((len(r) for r in rows if r is not None and len(r)), 0)
    matrix = np.zeros((len(ids), dim), dtype=np.float32)
    for index, row in enumerate(rows):
        if row is not None and len(row):
            if len(row) != dim:
                raise InvalidInput("dedupe: vectors of different dimensions")
            matrix[index] = np.asarray(row, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1) if len(ids) else np.zeros(0, dtype=np.float32)
    ok = np.isfinite(norms) & (norms > 1e-12)
    matrix[ok] /= norms[ok, None]
    matrix[~ok] = 0.0
    return matrix, [bool(x) for x in ok]


def _shingles(text: str, size: int = 3) -> frozenset[Any]:
    """Word ``size``-grams of ``text`` (its word set when it is shorter than that)."""
    tokens = _TOKEN_RE.findall(text.lower())
    if len(tokens) < size:
        return frozenset(tokens)
    return frozenset(tuple(tokens[i:i + size]) for i in range(len(tokens) - size + 1))


def _jaccard(a: frozenset[Any], b: frozenset[Any]) -> float:
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    both = len(a & b)
    return both / (len(a) + len(b) - both)


def text_similarity(a: str, b: str, shingle: int = 3) -> float:
    """Jaccard overlap of word shingles of two texts, in [0, 1]."""
    return _jaccard(_shingles(a, shingle), _shingles(b, shingle))
