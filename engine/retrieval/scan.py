"""A rerank candidate read for the rerank's features, and the query's terms found in it.

The rerank weighs, for every candidate, which of the query's terms it holds; the
document and conversation profiles also weigh the share of its own terms that are
the query's (``term_precision``), its entities and answer cues, which need every
word of it. The transcript profile needs only the first: which query terms a chunk
holds. A recall's window is up to 540 chunks (its best session's added whole), and
tokenizing each of them was a third of a recall's time at a million chunks (issue 35).

So a :class:`Scan` tokenizes its text only when a feature asks for its words, and
``Scan.hits`` finds the query's terms without it: every term is a stem of a word,
and a stem is the word's own beginning (``query.stem`` only cuts a suffix; for
"-ies"/"-ied" it writes a "y" after the cut), so a word can stem to a term only
where the term's ``key`` (the term less a final "y") starts a word of the text. The
text is searched for each key (``str.find``, in C), and only the pieces of text
around those places are tokenized: the same terms as tokenizing it all, since no
token runs across a character that is neither a word character nor an apostrophe
(``lexicon.BAG_RE``), which is where a piece ends.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import Any

from engine.retrieval.config import RerankConfig
from engine.retrieval.lexicon import lower_words, words_of
from engine.retrieval.query import terms_of_words

_APOSTROPHES = "'\u2019"  # the only characters inside a token that are not letters or digits
# where a piece ends: a character a token never holds and after which BAG_RE's
# lookahead (an "'s" then a word boundary) reads the same as at the end of the text
_PIECE_END = re.compile(r"[^\w'\u2019]")


class QueryTerms:
    """A query's terms (``QueryAnalysis.terms``): in its order (``order``, distinct), as a
    set, and the keys ``Scan.hits`` looks for: each term less a final "y" (a word
    stemmed from "-ies" ends in a "y" it lacks)."""

    __slots__ = ("keys", "order", "terms")

    def __init__(self, terms: Sequence[str]) -> None:
        self.order = tuple(dict.fromkeys(terms))
        self.terms = frozenset(self.order)
        self.keys = tuple(sorted({t[:-1] if len(t) > 1 and t.endswith("y") else t
                                  for t in self.terms if t}))


class Scan:
    """One candidate as the rerank reads it: its day, its first ``scan_chars`` characters,
    its entity fields, and its words and terms once asked for (each made on first use,
    kept in its slot: ``_tokens`` is None until it is tokenized)."""

    __slots__ = ("_field_terms", "_hits", "_joined", "_low", "_stopwords", "_terms",
                 "_tokens", "_words", "day", "fields", "text")

    def __init__(self, cand: Any, cfg: RerankConfig) -> None:
        self.day = _utc_day(cand.time)
        self.text: str = cand.text[: cfg.scan_chars]
        self._stopwords = cfg.stopwords
        self._low: str | None = None
        self._tokens: list[str] | None = None
        self._terms: set[str] | None = None
        self._words: set[str] | None = None
        self._joined: str | None = None
        self._hits: tuple[frozenset[str], frozenset[str]] | None = None  # the last ``hits``
        extra = [v for k in cfg.entity_fields if isinstance(v := cand.meta.get(k), str)]
        self.fields = ""  # entity fields as a token-joined string, like ``joined``
        self._field_terms: frozenset[str] = frozenset()
        if extra:
            self.fields, self._field_terms = _fields_scan("\n".join(extra), cfg.stopwords)

    # Each read below makes its value on first use and keeps it in its slot
    # (functools.cached_property needs an instance dict: no faster, and not smaller).
    @property
    def low(self) -> str:
        """The text lowercased (what its tokens are cut from)."""
        if self._low is None:
            self._low = self.text.lower()
        return self._low

    @property
    def tokens(self) -> list[str]:
        """The text's word tokens in order (``lexicon.words_of``)."""
        if self._tokens is None:
            self._tokens = lower_words(self.low)
        return self._tokens

    @property
    def terms(self) -> set[str]:
        """Its stemmed content terms, with those of its entity fields (straight from the
        tokens: no set of the words first, which only the intent feature reads)."""
        if self._terms is None:
            self._terms = terms_of_words(self.tokens, self._stopwords) | self._field_terms
        return self._terms

    @property
    def words(self) -> set[str]:
        """The body's distinct words."""
        if self._words is None:
            self._words = set(self.tokens)
        return self._words

    @property
    def joined(self) -> str:
        """The body's tokens joined by spaces, with a space at each end (phrase lookups)."""
        if self._joined is None:
            self._joined = " " + " ".join(self.tokens) + " "
        return self._joined

    def hits(self, query: QueryTerms) -> frozenset[str]:
        """The query's terms that it holds: ``query.terms & self.terms``, tokenizing only
        the pieces of its text where a term's key starts a word (see the module). Kept
        for the next call with the same terms (recall reranks its window twice)."""
        last = self._hits
        if last is not None and last[0] == query.terms:
            return last[1]
        if self._terms is not None:  # tokenized already
            found = query.terms & self._terms
        else:
            found = query.terms & self._field_terms
            pieces = self._pieces(query.keys)
            if pieces:
                found |= query.terms & terms_of_words(lower_words(" ".join(pieces)),
                                                      self._stopwords)
        self._hits = (query.terms, found)
        return found

    def _pieces(self, keys: Sequence[str]) -> list[str]:
        """The pieces of the lowercase text holding a word that starts with one of
        ``keys``: each from the start of its token (an apostrophe may join it to the
        text before) to the first character no token holds. Tokenized apart, joined by
        spaces, they give the tokens they give in place."""
        low = self.low
        starts: list[int] = []
        for key in keys:
            i = low.find(key)
            while i >= 0:
                if i == 0 or not low[i - 1].isalnum():  # a word may start here
                    starts.append(i)
                i = low.find(key, i + 1)
        pieces: list[str] = []
        done = 0  # the text before it is in a piece
        for start in sorted(starts):
            if start < done:
                continue
            end = _PIECE_END.search(low, start)
            stop = end.start() if end is not None else len(low)
            while start > 0 and (low[start - 1] in _APOSTROPHES or low[start - 1].isalnum()):
                start -= 1  # after an apostrophe: the token may have begun before it
            pieces.append(low[start:stop])
            done = stop
        return pieces


# the rerank features that read all of a candidate's words, not only where the query's are
WHOLE_TEXT_FEATURES = frozenset({"term_precision", "entity", "distractor", "intent"})


def prepared(candidates: Sequence[Any], cfg: RerankConfig, terms: Sequence[str]
             ) -> dict[Any, Scan]:
    """``scan_all`` of ``candidates`` with what the rerank will read of them made now (the
    caller's ``while_waiting``: while the query embeds, not after): all its terms where
    its profile weighs a feature that counts every word of it (``WHOLE_TEXT_FEATURES``),
    then the query's ``terms`` each holds (from those, when made)."""
    query = QueryTerms(terms)
    scans = scan_all(candidates, cfg)
    for c in candidates:
        scan = scans[c.id]
        if not WHOLE_TEXT_FEATURES.isdisjoint(cfg.weights_of(c.profile)):
            _ = scan.terms
        scan.hits(query)
    return scans


def scan_all(candidates: Sequence[Any], cfg: RerankConfig) -> dict[Any, Scan]:
    """Each candidate (a ``RerankCandidate``) as ``rerank`` reads it (id -> its scan),
    ahead of the call: pass them as ``rerank(..., scans=)``. A scan depends on the
    candidate's text, time and meta and on ``cfg``'s ``scan_settings``; give ``rerank``
    scans of the same candidates under the same settings."""
    return {c.id: Scan(c, cfg) for c in candidates}


def scan_settings(cfg: RerankConfig) -> tuple[Any, ...]:
    """What of ``cfg`` a scan depends on: scans made under configs of equal settings are
    the same (a recall's second rerank, its window widened, reuses the first's)."""
    return (cfg.scan_chars, cfg.stopwords, cfg.entity_fields)


# A candidate's entity fields (its session's title, its source's uri...) are shared by
# every chunk of its source: each distinct one is tokenized once, not once a chunk (a
# recall's window holds a whole expanded session, up to 400 chunks of one source).
# A pure function of the text and the stopwords. Bounded; cleared when full.
_FIELDS: dict[tuple[str, frozenset[str]], tuple[str, frozenset[str]]] = {}
_FIELDS_MAX = 4096


def _fields_scan(text: str, stopwords: frozenset[str]) -> tuple[str, frozenset[str]]:
    """The entity fields ``text`` as ``Scan.fields`` holds them, and their terms."""
    key = (text, stopwords)
    got = _FIELDS.get(key)
    if got is None:
        if len(_FIELDS) >= _FIELDS_MAX:
            _FIELDS.clear()
        tokens = words_of(text)
        got = _FIELDS[key] = (" " + " ".join(tokens) + " ",
                              frozenset(terms_of_words(set(tokens), stopwords)))
    return got


def _utc_day(when: float | None) -> dt.date | None:
    """The UTC calendar day of an epoch time; None when absent or out of range."""
    if when is None:
        return None
    try:
        return dt.datetime.fromtimestamp(when, tz=dt.UTC).date()
    except (OverflowError, OSError, ValueError):
        return None


