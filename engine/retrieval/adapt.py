"""What recall learned from the user's own sessions, and how a query uses it.

Two parts, both fitted on the store's sessions at run time (``adapt_fit``), never
shipped: a query-side linear map over the embedding space (``matrix``; a question's
vector is mapped, then searched as before) and a term translation table (``terms``:
a word of the user's requests -> the words of what answered them), whose words for a
query make a keyword lane of their own, weighted below the query's own words.

The model is user data: it is stored in the encrypted vault (``engine/store/adapt.py``)
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

from engine.errors import ConfigError


@dataclass(frozen=True)
class AdaptConfig:
    """Hyperparameters of the learned reader ([recall.adapt_fit]). Figures: ``python -m
    bench.recall_adapt --split dev --latency-chunks 50000`` (2026-11-28, 119 questions)."""

    # The query map in use: dev hit@5 0.529 -> 0.555, hit@10 0.647 -> 0.672 (map only).
    use_map: bool = True
    # The term lane in use: dev hit@5 0.529 -> 0.529, hit@10 0.647 -> 0.664: no gain.
    use_terms: bool = False
    # InfoNCE temperature. Hand-set: 0.05, the usual for sentence embeddings.
    temperature: float = 0.05
    # Weight of ||W - I||^2 (the pull toward identity). Dev, map only, hit@5 / hit@10 /
    # MRR@10: off 0.529 / 0.647 / 0.422; 0.001 0.555 / 0.647 / 0.404; 0.01 0.555 / 0.672 /
    # 0.425; 0.1 0.563 / 0.672 / 0.420; 1 0.538 / 0.639 / 0.421 (0.01: best MRR, held-out).
    identity_weight: float = 0.01
    # Adam step size and steps. Hand-set: the in-sample loss levels off by 150 steps.
    learning_rate: float = 0.002
    steps: int = 200
    batch: int = 256  # pairs per step (in-batch negatives: 255 each)
    # Fewer pairs than this: nothing is fitted (too little to learn from). Hand-set.
    min_pairs: int = 200
    # Share of sessions held out to check the fit: a map that does not beat the identity
    # on them is not used. Hand-set.
    holdout: float = 0.1
    # Texts embedded per session for the query side (the requests, the words before a
    # tool call), each cut to text_tokens: the model's time per session. Bench: 12 texts
    # of 64 tokens cost 80 s of CPU per 1,000 sessions (over the 60 s bound; dev hit@5
    # 0.588, MRR 0.407); 4 of 48 cost 43-48 s (hit@5 0.555, MRR 0.425).
    texts_per_session: int = 4
    text_tokens: int = 48
    # Words each query word may add to the term lane, and in all. Hand-set.
    terms_per_word: int = 2
    terms_max: int = 6
    # A translation needs this many co-occurrences and this normalized PMI. Hand-set.
    terms_min_count: int = 3
    terms_min_npmi: float = 0.2
    # The term lane's fusion weight, as a share of the keyword lane's. Dev: 0.3 and 0.6
    # alike (hit@5 0.529 both), so the lower.
    terms_weight: float = 0.3
    # Refit when the pairs available grew by this share since the last fit (0: at every
    # sync that added sessions). Hand-set: bounds refits to a few per doubling.
    refit_growth: float = 0.25

    def __post_init__(self) -> None:
        def bad(key: str, why: str) -> ConfigError:
            return ConfigError(f"recall.adapt_fit.{key}: {why}", key=f"recall.adapt_fit.{key}")

        if not 0.001 <= self.temperature <= 1.0:
            raise bad("temperature", "must be in 0.001..1")
        if not 0.0 <= self.identity_weight <= 100.0:
            raise bad("identity_weight", "must be in 0..100")
        if not 0.0 < self.learning_rate <= 1.0:
            raise bad("learning_rate", "must be in (0, 1]")
        for key, lo, hi in (("steps", 0, 100_000), ("batch", 2, 8192), ("min_pairs", 2, 10**7),
                            ("texts_per_session", 1, 1000), ("text_tokens", 8, 512),
                            ("terms_per_word", 0, 50),
                            ("terms_max", 0, 100), ("terms_min_count", 1, 10**6)):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise bad(key, f"must be an integer in {lo}..{hi}")
        if not 0.0 <= self.holdout < 0.9:
            raise bad("holdout", "must be in 0..0.9")
        if not -1.0 <= self.terms_min_npmi <= 1.0:
            raise bad("terms_min_npmi", "must be in -1..1")
        if not 0.0 <= self.terms_weight <= 10.0:
            raise bad("terms_weight", "must be in 0..10")
        if not 0.0 <= self.refit_growth <= 100.0:
            raise bad("refit_growth", "must be in 0..100")


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
