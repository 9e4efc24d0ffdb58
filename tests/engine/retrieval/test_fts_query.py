"""fts_query: a MATCH expression SQLite FTS5 always accepts, and that finds the right rows."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.retrieval.fts_match import fts_query
from engine.retrieval.query import QueryAnalysis, analyze_query

DOCS = [
    "I painted a sunset over the lake last weekend",
    "The parser fails on nested brackets; see test_foo in parser.py",
    "We moved to New York City in 2021",
    'She finally read "the long way home" and loved it',
]


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE docs USING fts5(body, tokenize='porter unicode61')")
    db.executemany("INSERT INTO docs(rowid, body) VALUES (?, ?)", list(enumerate(DOCS)))
    yield db
    db.close()


def _match(db: sqlite3.Connection, expr: str) -> list[int]:
    return [r[0] for r in db.execute(
        "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs)", (expr,))]


HOSTILE = st.sampled_from([
    '"', "'", "(", ")", "*", "-", ":", "^", "+", "AND", "OR", "NOT", "NEAR", "NEAR(", "{",
    "}", "body:", "\\", "\u201c", "\u2019s", "a_b", "x.py", "/etc/passwd", "2023-05-07",
    "May 7, 2023", "\x00", "\n", "Ünïcödé", "日本語", "__", "..", "C++", "e.g.",
])
QUERIES = st.lists(st.one_of(HOSTILE, st.text(max_size=12)), max_size=12).map(" ".join)


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(QUERIES, st.booleans())
def test_fts_query_never_raises_in_sqlite(fts: sqlite3.Connection, text: str,
                                          prefix: bool) -> None:
    expr = fts_query(analyze_query(text), prefix=prefix)
    if expr:
        _match(fts, expr)  # raises sqlite3.OperationalError on a syntax error
    else:
        assert not analyze_query(text).words and not analyze_query(text).entities


@given(st.lists(st.text(max_size=20), max_size=6), st.lists(st.text(max_size=20), max_size=6))
@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_fts_query_of_arbitrary_analysis_fields_is_valid(
        fts: sqlite3.Connection, words: list[str], entities: list[str]) -> None:
    analysis = QueryAnalysis(text="", terms=tuple(words), phrases=(), entities=tuple(entities),
                             years=(), dates=(), intent=frozenset(), qclass="factual",
                             temporal_recent=False, words=tuple(words))
    expr = fts_query(analysis, prefix=True)
    if expr:
        _match(fts, expr)


def test_empty_query_gives_empty_expression() -> None:
    assert fts_query(analyze_query("")) == ""
    assert fts_query(analyze_query("what is it?")) == ""


def test_every_token_is_double_quoted() -> None:
    expr = fts_query(analyze_query('NEAR(a b) OR "x" AND -y* col:z'))
    for part in expr.split(" OR "):
        assert part.startswith('"') and part.rstrip("*").endswith('"')


def test_finds_inflected_words_and_entities(fts: sqlite3.Connection) -> None:
    assert _match(fts, fts_query(analyze_query("Who paints sunsets?")))[0] == 0
    assert _match(fts, fts_query(analyze_query("why did test_foo fail in parser.py")))[0] == 1
    assert _match(fts, fts_query(analyze_query("Who lives in New York City?")))[0] == 2
    assert _match(fts, fts_query(analyze_query('Who read "The Long Way Home"?')))[0] == 3


def test_prefix_adds_stem_prefixes_only_for_stripped_suffixes() -> None:
    expr = fts_query(analyze_query("painting lessons"), prefix=True)
    assert '"paint"*' in expr.split(" OR ")
    assert fts_query(analyze_query("painting lessons")).count("*") == 0


def test_max_terms_caps_the_expression() -> None:
    text = " ".join(f"word{i}x" for i in range(50))
    assert len(fts_query(analyze_query(text), max_terms=5).split(" OR ")) == 5
