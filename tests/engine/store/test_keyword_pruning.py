"""The keyword lane leaves out words that match a large share of a big store."""

from __future__ import annotations

from engine.config import Config
from engine.facade import ContextEngine
from engine.retrieval.query import analyze_query
from engine.retrieval.search import keyword_match


def test_common_words_leave_the_fts_query(engine: ContextEngine) -> None:
    lines = [f"Entry {i}: the parser handles tokens quickly." for i in range(60)]
    lines.append("Entry special: the parser meets a walrus in the archive.")
    engine.wait(engine.ingest_conversation(
        [{"speaker": "log", "text": t} for t in lines], title="log", uri="t:log"))
    rt = engine.rt
    df = rt.vault.doc_frequency(["parser", "walrus", "tokens", "handles", "archives"])
    assert df["parser"] == 61 and df["walrus"] == 1 and df["tokens"] == 60
    assert df["handles"] == 60 and df["archives"] == 1  # stem "archiv" found from a prefix

    a = analyze_query("parser walrus", rt.cfg.query)
    cfg = Config().with_overrides({"search": {"keyword_prune_min_chunks": 10,
                                              "keyword_max_df": 0.5}})
    assert keyword_match(rt, a, cfg) == '"walrus"'
    assert '"parser"' in keyword_match(rt, a, Config())  # small stores are left alone
    only_common = analyze_query("parser tokens", rt.cfg.query)
    assert keyword_match(rt, only_common, cfg) in ('"parser"', '"tokens"')
    hits = engine.search("parser walrus", k=1)
    assert "walrus" in hits[0].text
