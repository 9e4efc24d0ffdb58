"""FTS5 MATCH expressions for a query analysis, safe against FTS5 syntax in the input.

``fts_parts`` lists the double-quoted terms and entity phrases of an analysis;
``fts_query`` joins them with OR. ``keyword_match`` splits the parts by how many
chunks hold them into the keyword lane's finding and rescoring expressions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from engine.retrieval.config import SearchConfig
from engine.retrieval.query import WORD_RE, QueryAnalysis, stem


def fts_query(analysis: QueryAnalysis, *, prefix: bool = False, max_terms: int = 32) -> str:
    """A SQLite FTS5 MATCH expression: an OR of double-quoted terms and entity phrases
    (``fts_parts``). Returns "" when there is nothing to match."""
    parts = prefix_parts(analysis, max_terms) if prefix else fts_parts(analysis, max_terms)
    return " OR ".join(parts)


def fts_parts(analysis: QueryAnalysis, max_terms: int = 32) -> list[str]:
    """The parts of ``fts_query``'s OR: double-quoted terms and entity phrases.

    Every token is rebuilt from word characters and double-quoted, so no input can
    inject FTS5 syntax (AND/OR/NEAR, ``*``, ``-``, ``:``, parentheses, quotes).
    Words are used unstemmed (an index built with ``tokenize='porter unicode61'``
    stems both sides).
    """
    return _parts(analysis, max_terms)


def prefix_parts(analysis: QueryAnalysis, max_terms: int = 32) -> list[str]:
    """``fts_parts`` with ``"stem"*`` added after each word whose stem is shorter, for
    indexes without a stemming tokenizer."""
    return _parts(analysis, max_terms, _stem_prefix)


def _stem_prefix(word: str) -> str | None:
    root = stem(word)
    if len(root) >= 4 and root not in (word, word[:-1]) and WORD_RE.fullmatch(root):
        return f'"{root}"*'
    return None


def _parts(analysis: QueryAnalysis, max_terms: int,
           after_word: Callable[[str], str | None] | None = None) -> list[str]:
    """The parts, each word's ``after_word`` part (if any) right after it."""
    parts: dict[str, None] = {}
    for entity in analysis.entities:
        tokens = WORD_RE.findall(entity.lower())
        if len(tokens) > 1:
            parts.setdefault('"' + " ".join(tokens) + '"', None)
    for word in analysis.words or analysis.terms:
        tokens = WORD_RE.findall(word.lower())
        if not tokens:
            continue
        parts.setdefault('"' + " ".join(tokens) + '"', None)
        more = after_word(word) if after_word is not None else None
        if more is not None:
            parts.setdefault(more, None)
    for entity in analysis.entities:
        tokens = WORD_RE.findall(entity.lower())
        if len(tokens) == 1:
            parts.setdefault(f'"{tokens[0]}"', None)
    return list(parts)[:max_terms]


@dataclass(frozen=True)
class KeywordQuery:
    """The keyword lane's FTS5 expressions: ``match`` finds the rows; ``rescore`` holds
    words that only add their BM25 to the rows found (``Vault.keyword``). ``newest``
    (0: all; ``search.keyword_scored_max``): when ``match`` finds more rows than that,
    only its newest ``newest`` rows are scored (``Vault.keyword`` widens that window
    when too few of them answer). ``otherwise``: the query when ``match`` finds no row
    where the lane looks (its words are held by other rows: a document's words in
    recall's index of sessions), ``rescore``'s words planned as the query's were."""

    match: str
    rescore: str = ""
    newest: int = 0
    otherwise: KeywordQuery | None = None


class TermCounts(Protocol):
    """How many chunks the store holds, and how many hold each word (the vault)."""

    def chunk_count(self) -> int: ...

    def doc_frequency(self, words: Sequence[str]) -> Mapping[str, int]: ...


def keyword_match(analysis: QueryAnalysis, cfg: SearchConfig, counts: TermCounts
                  ) -> KeywordQuery:
    """The keyword lane's query for ``analysis``. In stores of ``keyword_prune_min_chunks``
    or more, FTS5's cost (it scores every row a query matches) is bounded by word
    counts: words in more than ``keyword_max_df`` of the chunks are left out (their
    BM25 weight is near zero); of the rest, the rarest words, while their chunk counts
    add up to at most ``keyword_row_budget`` (at least one word the store holds), find
    the rows, and the others only rescore the rows found (``Vault.keyword``). When the
    finding words still hold more than ``keyword_scored_max`` chunks (a query whose
    every word is common, or of one word: "file" is in 158,865 of a million chunks),
    only the newest ``keyword_scored_max`` rows they match are scored (``newest``): an
    absolute bound, so it only bites in stores that big. The store is asked for
    counts only when a query of several parts may be pruned or bounded: a one-word
    query's bound is set without its count, and ``Vault.keyword`` scores every row of
    a word that holds fewer."""
    parts = fts_parts(analysis)
    n = counts.chunk_count() if parts else 0
    if n < cfg.keyword_prune_min_chunks or (len(parts) < 2 and n <= cfg.keyword_scored_max):
        return KeywordQuery(" OR ".join(parts))
    if len(parts) < 2:  # no count asked: a word held by fewer rows is scored whole
        return KeywordQuery(parts[0], newest=cfg.keyword_scored_max)  # (Vault.keyword)
    words = {p: p.strip('"*') for p in parts}
    found = counts.doc_frequency(list(words.values()))
    df = {p: found[w.lower()] for p, w in words.items()}
    kept = ([p for p in parts if df[p] <= cfg.keyword_max_df * n]
            or [min(parts, key=df.__getitem__)])
    return _plan(kept, df, cfg, then=True)


def _plan(kept: list[str], df: Mapping[str, int], cfg: SearchConfig, *, then: bool
          ) -> KeywordQuery:
    """``kept``'s rarest words find the rows while their counts fit the row budget, the
    others rescore (``keyword_match``); ``then``: with the others planned so too, the
    query when the finding words find no row (``KeywordQuery.otherwise``)."""
    finding: set[str] = set()
    rows = 0
    for p in sorted(kept, key=df.__getitem__):
        if rows and rows + df[p] > cfg.keyword_row_budget:  # words in no chunk cost nothing
            break
        finding.add(p)
        rows += df[p]
    rest = [p for p in kept if p not in finding]
    return KeywordQuery(" OR ".join(p for p in kept if p in finding), " OR ".join(rest),
                        _newest(rows, cfg),
                        _plan(rest, df, cfg, then=False) if then and rest else None)


def _newest(rows: int, cfg: SearchConfig) -> int:
    """``KeywordQuery.newest`` for finding words that hold ``rows`` chunks together."""
    return cfg.keyword_scored_max if rows > cfg.keyword_scored_max else 0
