"""FTS5 MATCH expressions for a query analysis, safe against FTS5 syntax in the input.

``fts_parts`` lists the double-quoted terms and entity phrases of an analysis;
``fts_query`` joins them with OR. The keyword lane (``engine.flows.lanes``)
splits the parts by how many chunks hold them before it joins them.
"""

from __future__ import annotations

from engine.retrieval.query import _WORD_RE, QueryAnalysis, stem


def fts_query(analysis: QueryAnalysis, *, prefix: bool = False, max_terms: int = 32) -> str:
    """A SQLite FTS5 MATCH expression: an OR of double-quoted terms and entity phrases
    (``fts_parts``). Returns "" when there is nothing to match."""
    return " OR ".join(fts_parts(analysis, prefix=prefix, max_terms=max_terms))


def fts_parts(analysis: QueryAnalysis, *, prefix: bool = False,
              max_terms: int = 32) -> list[str]:
    """The parts of ``fts_query``'s OR: double-quoted terms and entity phrases.

    Every token is rebuilt from word characters and double-quoted, so no input can
    inject FTS5 syntax (AND/OR/NEAR, ``*``, ``-``, ``:``, parentheses, quotes).
    Words are used unstemmed (an index built with ``tokenize='porter unicode61'``
    stems both sides); ``prefix`` adds ``"stem"*`` for stems shorter than their word,
    for indexes without a stemming tokenizer.
    """
    parts: dict[str, None] = {}
    for entity in analysis.entities:
        tokens = _WORD_RE.findall(entity.lower())
        if len(tokens) > 1:
            parts.setdefault('"' + " ".join(tokens) + '"', None)
    for word in analysis.words or analysis.terms:
        tokens = _WORD_RE.findall(word.lower())
        if not tokens:
            continue
        parts.setdefault('"' + " ".join(tokens) + '"', None)
        if prefix:
            root = stem(word)
            if len(root) >= 4 and root not in (word, word[:-1]) and _WORD_RE.fullmatch(root):
                parts.setdefault(f'"{root}"*', None)
    for entity in analysis.entities:
        tokens = _WORD_RE.findall(entity.lower())
        if len(tokens) == 1:
            parts.setdefault(f'"{tokens[0]}"', None)
    return list(parts)[:max_terms]
