"""Scoring for bench.recall_quality: answer matching, BM25, metrics and session bootstrap.

Pure functions over plain data, so that the scoring can be tested without a store.
"""

from __future__ import annotations

import math
import random
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

_WS = re.compile(r"\s+")
_WORD = re.compile(r"[a-z0-9_]+")
KINDS = ("turn", "decision", "failure", "tool_call", "tool_result", "code")


def norm(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


def first_answer(hits: Sequence[tuple[str | None, str]], session: str,
                 evidence: Sequence[str]) -> int | None:
    """1-based rank of the first hit from ``session`` (the session id the question's
    file holds) whose text holds one of the evidence strings; None when none does."""
    keys = [norm(e) for e in evidence]
    for i, (sess, text) in enumerate(hits, start=1):
        if sess != session:
            continue
        body = norm(text)
        if any(k in body for k in keys):
            return i
    return None


class BM25:
    """Okapi BM25 over a fixed list of texts (lowercased word tokens)."""

    def __init__(self, texts: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.lengths: list[int] = []
        for i, t in enumerate(texts):
            words = _WORD.findall(t.lower())
            self.lengths.append(len(words))
            for w, n in Counter(words).items():
                self.postings[w].append((i, n))
        self.avg = statistics.fmean(self.lengths) if self.lengths else 0.0
        n = len(texts)
        self.idf = {w: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5))
                    for w, p in self.postings.items()}

    def top(self, query: str, k: int) -> list[int]:
        scores: dict[int, float] = defaultdict(float)
        for w in set(_WORD.findall(query.lower())):
            idf = self.idf.get(w)
            if idf is None:
                continue
            for i, tf in self.postings[w]:
                norm_len = 1 - self.b + self.b * self.lengths[i] / self.avg
                scores[i] += idf * tf * (self.k1 + 1) / (tf + self.k1 * norm_len)
        return sorted(scores, key=lambda i: (-scores[i], i))[:k]


def metrics(ranks: Sequence[int | None]) -> dict[str, float]:
    if not ranks:
        return {"n": 0, "hit@1": math.nan, "hit@5": math.nan, "hit@10": math.nan,
                "mrr@10": math.nan}
    return {"n": len(ranks),
            "hit@1": statistics.fmean(r == 1 for r in ranks),
            "hit@5": statistics.fmean(r is not None and r <= 5 for r in ranks),
            "hit@10": statistics.fmean(r is not None and r <= 10 for r in ranks),
            "mrr@10": statistics.fmean(1.0 / r if r and r <= 10 else 0.0 for r in ranks)}


def subsets(questions: Sequence[dict[str, Any]]) -> dict[str, list[int]]:
    """Question indexes per reported subset: all, paraphrased, verbatim, each kind."""
    out: dict[str, list[int]] = {"all": list(range(len(questions)))}
    out["paraphrased"] = [i for i, q in enumerate(questions) if q["paraphrased"]]
    out["verbatim"] = [i for i, q in enumerate(questions) if not q["paraphrased"]]
    for kind in KINDS:
        out[f"kind {kind}"] = [i for i, q in enumerate(questions) if q["kind"] == kind]
    return out


def _boot_draws(questions: Sequence[dict[str, Any]], boot: int, seed: int) -> list[list[int]]:
    """``boot`` resamples of question indexes, drawing whole sessions with replacement."""
    by_session: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(questions):
        by_session[q["session"]].append(i)
    groups = list(by_session.values())
    rnd = random.Random(seed)
    return [[i for _ in groups for i in rnd.choice(groups)] for _ in range(boot)]


def _ci(values: list[float]) -> tuple[float, float]:
    values = sorted(v for v in values if not math.isnan(v))
    if not values:
        return math.nan, math.nan
    lo = values[int(0.025 * (len(values) - 1))]
    hi = values[int(0.975 * (len(values) - 1))]
    return lo, hi


def report(questions: Sequence[dict[str, Any]], ranks: dict[str, list[int | None]],
           boot: int = 2000, seed: int = 0, base: str = "recall") -> dict[str, Any]:
    """Per method and subset: metrics with 95% session-bootstrap intervals, and the
    paired difference to ``base`` (same draws for every method)."""
    draws = _boot_draws(questions, boot, seed)
    subs = subsets(questions)
    out: dict[str, Any] = {}
    for name, rs in ranks.items():
        out[name] = {}
        for sub, idx in subs.items():
            keep = set(idx)
            row: dict[str, Any] = metrics([rs[i] for i in idx])
            for m in ("hit@5", "hit@10", "mrr@10"):
                samples = [metrics([rs[i] for i in d if i in keep])[m] for d in draws]
                row[f"{m} ci"] = _ci(samples)
                if base in ranks and name != base:
                    bs = ranks[base]
                    diffs = [metrics([bs[i] for i in d if i in keep])[m]
                             - metrics([rs[i] for i in d if i in keep])[m] for d in draws]
                    row[f"{base}-minus {m}"] = (metrics([bs[i] for i in idx])[m] - row[m],
                                                *_ci(diffs))
            out[name][sub] = row
    return out


def render(rep: dict[str, Any], methods: Sequence[str], base: str = "recall") -> str:
    lines = ["| method | subset | n | hit@1 | hit@5 [95% CI] | hit@10 [95% CI] | MRR@10 [95% CI] |",
             "|---|---|---|---|---|---|---|"]
    for name in methods:
        for sub, r in rep[name].items():
            if not r["n"]:
                continue
            cells = [f"{r[m]:.3f} [{r[m + ' ci'][0]:.2f}, {r[m + ' ci'][1]:.2f}]"
                     for m in ("hit@5", "hit@10", "mrr@10")]
            lines.append(f"| {name} | {sub} | {r['n']} | {r['hit@1']:.3f} | " + " | ".join(cells)
                         + " |")
    diff = [f"\nPaired: {base} minus each method (same session draws), 95% CI",
            "| method | subset | hit@5 diff [CI] | hit@10 diff [CI] | MRR@10 diff [CI] |",
            "|---|---|---|---|---|"]
    for name in methods:
        if name == base:
            continue
        for sub, r in rep[name].items():
            if not r["n"] or f"{base}-minus hit@5" not in r:
                continue
            cells = [f"{d:+.3f} [{lo:+.2f}, {hi:+.2f}]" for d, lo, hi in
                     (r[f"{base}-minus {m}"] for m in ("hit@5", "hit@10", "mrr@10"))]
            diff.append(f"| {name} | {sub} | " + " | ".join(cells) + " |")
    return "\n".join(lines + diff)
