"""On real conversations the rerank must find more evidence than fusion alone.

Uses LoCoMo's dev split (conversation 0; see shared/data/locomo/NOTICE.md) with a
keyword lane on the stdlib's SQLite FTS5 and a vector lane of MiniLM cosines, as
the engine runs them for conversation memory: the conversation profile's strongest
feature is the query's similarity to the turn, so the test needs the real model.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from engine.embedding.base import Embedder
from engine.retrieval.fts_match import fts_query
from engine.retrieval.fusion import rrf
from engine.retrieval.query import analyze_query, lane_weights
from engine.retrieval.rerank import RerankCandidate, rerank

DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "locomo" / "locomo10.json"


@pytest.fixture(scope="module")
def conversation() -> tuple[list[tuple[str, str, float]], list[tuple[str, set[str]]]]:
    if not DATA.is_file():
        pytest.skip(f"LoCoMo data not found at {DATA}")
    conv = json.loads(DATA.read_text(encoding="utf-8"))[0]
    c = conv["conversation"]
    turns = []
    sessions = sorted((k for k in c if re.fullmatch(r"session_\d+", k)),
                      key=lambda k: int(k.split("_")[1]))
    for key in sessions:
        when = dt.datetime.strptime(c[f"{key}_date_time"], "%I:%M %p on %d %B, %Y")
        epoch = when.replace(tzinfo=dt.UTC).timestamp()
        turns += [(t["dia_id"], f'{t["speaker"]}: {t["text"]}', epoch) for t in c[key]]
    questions = [(q["question"], set(q["evidence"])) for q in conv["qa"]
                 if q.get("category") != 5 and q.get("evidence")]
    return turns, questions


@pytest.mark.integration
def test_rerank_recalls_more_evidence_than_fusion(conversation: tuple, minilm: Embedder) -> None:
    turns, questions = conversation
    encode = minilm.encode
    turn_vecs = np.asarray(encode([text for _, text, _ in turns]), dtype=np.float32)
    query_vecs = np.asarray(encode([q for q, _ in questions]), dtype=np.float32)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61')")
    db.executemany("INSERT INTO t(rowid, body) VALUES (?, ?)",
                   [(i, text) for i, (_, text, _) in enumerate(turns)])
    fused_hits = reranked_hits = total = 0
    for (question, evidence), qvec in zip(questions, query_vecs, strict=True):
        analysis = analyze_query(question)
        sims = turn_vecs @ qvec
        vector = [int(i) for i in np.argsort(-sims, kind="stable")[:100]]
        expr = fts_query(analysis)
        keyword = [r[0] for r in db.execute(
            "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 100", (expr,))
        ] if expr else []
        recency = sorted(range(len(turns)), key=lambda i: -turns[i][2])[:100]
        lanes = {"keyword": keyword, "vector": vector}
        if analysis.temporal_recent:
            lanes["recency"] = recency
        fused = rrf(lanes,
                    lane_weights(analysis.qclass, recent=analysis.temporal_recent))
        # chat turns: the profile the engine gives conversation sources (rank.profile_of)
        cands = [RerankCandidate(i, turns[i][1], s, time=turns[i][2], profile="conversation",
                                 similarity=float(sims[i])) for i, s, _ in fused]
        ranked = [i for i, _, _ in rerank(analysis, cands)]
        total += len(evidence)
        fused_hits += len(evidence & {turns[i][0] for i, _, _ in fused[:5]})
        reranked_hits += len(evidence & {turns[i][0] for i in ranked[:5]})
    db.close()
    assert total > 0
    assert reranked_hits > fused_hits
