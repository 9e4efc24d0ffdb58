"""Query analysis: what a query asks for, in a form the lanes and the rerank can use.

``analyze_query`` turns a free-text question into normalized content terms, named
entities (people, places, quoted titles, code identifiers, file names, paths),
years and calendar dates, the kinds of answer it expects (its *intent*) and a
coarse class that sets how much each retrieval lane counts. ``fts_query`` renders
an analysis as a SQLite FTS5 MATCH expression that cannot inject FTS syntax.

Everything language-specific (stopwords, patterns, class rules, lane weights) is
configuration in :class:`QueryConfig`; the defaults are general English
(in ``engine.retrieval.lexicon``).
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache
from typing import cast

from engine.errors import ConfigError
from engine.retrieval.config import LANES, QCLASSES, QueryConfig
from engine.retrieval.lexicon import (
    BAG_RE,
    DATE_PATTERNS,
    MONTHS,
    YEAR_RE,
    words_of,
)

# A word as queries and the keyword lane read it (letters and digits, inner apostrophes).
WORD_RE = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
_POSSESSIVE_RE = re.compile(r"['\u2019]s$", re.IGNORECASE)
_QUOTED_RE = re.compile(r"\"([^\"]{2,120})\"|\u201c([^\u201d]{2,120})\u201d|(?<!\w)'([^']{2,120})'(?!\w)")
_SNAKE_RE = re.compile(r"(?<![\w./\\-])[A-Za-z_][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+_?(?![\w-])")
_CAMEL_RE = re.compile(r"(?<![\w./\\-])(?:[a-z]+[A-Z]|[A-Z][a-z0-9]+[A-Z])[A-Za-z0-9]*(?![\w-])")
_DOTTED_RE = re.compile(r"(?<![\w./\\-])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?![\w/\\-])")
_PATH_RE = re.compile(
    r"(?:~|\.{1,2})?(?:[/\\][\w.@+-]+){2,}|(?<![\w.@+-])[\w.@+-]+(?:[/\\][\w.@+-]+)+")
_SENTENCE_END = frozenset(".!?\n")
_URL_RE = re.compile(r"\b[a-z][a-z0-9+-]{0,15}://[^\s\"'<>()]+", re.IGNORECASE)
_FILE_RE = re.compile(r"(?<![\w./\\-])[\w.-]+\.([A-Za-z0-9]{1,6})(?![\w/\\])")
_CODE_ENTITY_RE = re.compile(r"[_./\\]|[a-z][A-Z]")


@dataclass(frozen=True)
class QueryAnalysis:
    """What a query asks for. All tuples keep first-seen order and hold no duplicates."""

    text: str
    terms: tuple[str, ...]  # stemmed lowercase content words
    phrases: tuple[str, ...]  # quoted strings and multiword names, lowercase
    entities: tuple[str, ...]  # names, quoted strings, identifiers, file names, paths
    years: tuple[int, ...]
    dates: tuple[str, ...]  # ISO yyyy-mm-dd
    intent: frozenset[str]
    qclass: str  # one of QCLASSES
    temporal_recent: bool
    words: tuple[str, ...] = ()  # unstemmed lowercase content words (for the keyword lane)
    months: tuple[str, ...] = ()  # yyyy-mm named without a day ("October 2023")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light, deterministic English suffix stripper (lowercase in, lowercase out).

    It only needs to map the forms of a word to one key on both the query and the
    candidate side (paint/paints/painted/painting -> paint); it is not a linguist.
    """
    w = word
    if len(w) <= 3 or not w.isalpha():
        return w
    if w.endswith(("ies", "ied")) and len(w) > 4:
        return w[:-3] + "y"
    elif w.endswith(("sses", "xes", "ches", "shes", "zes")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            base = w[: -len(suffix)]
            if any(c in "aeiouy" for c in base):
                w = base
                if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "aeiouylsz":
                    w = w[:-1]
                break
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


def content_terms(text: str, stopwords: frozenset[str]) -> set[str]:
    """The set of stemmed content terms of ``text`` (for candidate-side matching)."""
    return terms_of_words(set(BAG_RE.findall(text.lower())), stopwords)


def terms_of_words(words: Collection[str], stopwords: frozenset[str]) -> set[str]:
    """Stemmed content terms of already tokenized lowercase words (a set, or a text's
    tokens in order: repeats cost a lookup each, not a set of their own first).

    Each word's term ("" for a stopword or a word that is no content) is kept in a
    table per stopword list, so that scanning a candidate is set and map operations
    in C: the rerank scans a hundred candidates of some hundred words per query. The
    table is looked up once a word when it knows them all (the common case once warm:
    one ``map`` of ``dict.get``), and filled first when it does not.
    """
    table = _TERM_TABLES.get(stopwords)
    if table is None or len(table) > _TERM_TABLE_MAX:
        if len(_TERM_TABLES) > 8:
            _TERM_TABLES.clear()
        table = _TERM_TABLES[stopwords] = {}
    known: set[str | None] = set(map(table.get, words))
    if None in known:  # a word the table does not know yet
        for w in set(words).difference(table):
            table[w] = (stem(w) if w not in stopwords
                        and ((len(w) > 1 and w.isalpha()) or _is_content(w)) else "")
        known = set(map(table.__getitem__, words))
    out = cast(set[str], known)  # every word known now: no None
    out.discard("")
    return out


# stopword list -> word -> its term ("" when none); bounded, rebuilt when full
_TERM_TABLES: dict[frozenset[str], dict[str, str]] = {}
_TERM_TABLE_MAX = 500_000


def _is_content(word: str) -> bool:
    if word.isdigit():
        return len(word) >= 3 and not YEAR_RE.fullmatch(word)
    return len(word) >= 2 or word.isalpha() and not word.isascii()


def analyze_query(text: str, cfg: QueryConfig | None = None) -> QueryAnalysis:
    """Analyze ``text``. Never raises on content; an empty query gives an empty analysis."""
    cfg = cfg or QueryConfig()
    full = text or ""
    text = full[: cfg.max_chars]
    comp = cfg._compiled
    dates, months, years, date_spans = find_dates(text, day_first=cfg.day_first)
    masked = _mask(text, date_spans)
    entities, phrases = _entities(masked, cfg)
    words: list[str] = []
    for w in words_of(masked):
        if w not in cfg.stopwords and _is_content(w) and w not in words:
            words.append(w)
    words = words[: cfg.max_terms]
    terms = tuple(dict.fromkeys(stem(w) for w in words))
    intent = frozenset(k for k, rx in comp["intent"].items() if rx is not None and rx.search(text))
    recent = bool(comp["recent"] is not None and comp["recent"].search(text))
    partial = QueryAnalysis(text=full, terms=terms, phrases=phrases, entities=entities,
                            years=years, dates=dates, intent=intent, qclass="factual",
                            temporal_recent=recent, words=tuple(words), months=months)
    return _with_class(partial, _classify(partial, cfg))


def find_dates(text: str, *, day_first: bool = False
               ) -> tuple[tuple[str, ...], tuple[str, ...], tuple[int, ...],
                          list[tuple[int, int]]]:
    """ISO dates, yyyy-mm months, years and the character spans they came from."""
    dates: dict[str, None] = {}
    months: dict[str, None] = {}
    years: dict[int, None] = {}
    spans: list[tuple[int, int]] = []

    def free(m: re.Match[str]) -> bool:
        return not any(s < m.end() and m.start() < e for s, e in spans)

    for index, rx in enumerate(DATE_PATTERNS):
        for m in rx.finditer(text):
            if not free(m):
                continue
            g = m.groupdict()
            year = int(g["year"])
            if index == 5:
                years.setdefault(year, None)
                spans.append(m.span())
                continue
            if index == 0:
                month, day = int(g["m"]), int(g["d"])
            elif index == 3:
                a, b = int(g["a"]), int(g["b"])
                month, day = (b, a) if day_first else (a, b)
            else:
                month = MONTHS[g["mon"].lower()]
                day = int(g["day"]) if index in (1, 2) else 0
            if index == 4:
                months.setdefault(f"{year:04d}-{month:02d}", None)
            else:
                try:
                    dates.setdefault(_dt.date(year, month, day).isoformat(), None)
                except ValueError:
                    continue
            years.setdefault(year, None)
            spans.append(m.span())
    return tuple(dates), tuple(months), tuple(years), spans


def _with_class(a: QueryAnalysis, qclass: str) -> QueryAnalysis:
    return QueryAnalysis(a.text, a.terms, a.phrases, a.entities, a.years, a.dates, a.intent,
                         qclass, a.temporal_recent, a.words, a.months)


def _mask(text: str, spans: list[tuple[int, int]]) -> str:
    if not spans:
        return text
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def _entities(text: str, cfg: QueryConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Named things in ``text`` (original case) and the multiword ones as phrases."""
    found: dict[str, str] = {}  # lowercase key -> first surface form
    phrases: dict[str, None] = {}
    code_spans: list[tuple[int, int]] = []

    def add(surface: str, phrase: bool = False) -> None:
        surface = surface.strip(" .,;:!?()[]{}")
        if len(surface) >= 2:
            found.setdefault(surface.lower(), surface)
            if phrase:
                phrases.setdefault(surface.lower(), None)

    for m in _QUOTED_RE.finditer(text):
        quoted = next(g for g in m.groups() if g is not None).strip()
        if WORD_RE.search(quoted):
            add(quoted, phrase=len(quoted.split()) > 1)
    code: list[re.Match[str]] = list(_URL_RE.finditer(text))
    masked = _mask(text, [m.span() for m in code])
    code += [m for m in _PATH_RE.finditer(masked)]
    code += [m for m in _FILE_RE.finditer(masked) if m.group(1).lower() in cfg.file_extensions]
    for m in _DOTTED_RE.finditer(masked):  # qualified names: a.b.c, Class.method_name
        name = m.group(0)
        if (name.count(".") >= 2 or _CODE_ENTITY_RE.search(name.replace(".", " "))) \
                and name.rsplit(".", 1)[1].lower() not in cfg.file_extensions:
            code.append(m)
    code += [m for rx in (_SNAKE_RE, _CAMEL_RE) for m in rx.finditer(masked)]
    for m in code:  # in order of precedence; a match inside an earlier one is not added
        if not any(s <= m.start() and m.end() <= e for s, e in code_spans):
            add(m.group(0))
            code_spans.append(m.span())
    for name in _capitalized_runs(_mask(text, code_spans), cfg):
        add(name, phrase=" " in name)
    return tuple(found.values()), tuple(phrases)


def _capitalized_runs(text: str, cfg: QueryConfig) -> list[str]:
    """Runs of capitalized words separated by single spaces, skipping sentence starts."""
    runs: list[str] = []
    current: list[str] = []
    last_end = -2
    for m in WORD_RE.finditer(text):
        token = _POSSESSIVE_RE.sub("", m.group(0))
        low = token.lower()
        i = m.start() - 1
        while i >= 0 and text[i] in " \t\"'(\u201c":
            i -= 1
        at_start = i < 0 or text[i] in _SENTENCE_END
        is_name = (token[:1].isupper() and low not in cfg.stopwords
                   and low not in cfg.non_entities
                   and not (at_start and low in cfg.start_words))
        joined = is_name and current and text[last_end:m.start()] == " "
        if is_name and (joined or not current):
            current.append(token)
        else:
            if current:
                runs.append(" ".join(current))
            current = [token] if is_name else []
        last_end = m.end()
        if token != m.group(0) and current:  # a possessive ends the name
            runs.append(" ".join(current))
            current = []
    if current:
        runs.append(" ".join(current))
    return runs


def _classify(a: QueryAnalysis, cfg: QueryConfig) -> str:
    """The query class, by fixed precedence over configurable evidence.

    exploratory pattern > temporal (date intent, dates, years, recent) > code-like
    entities (factual) > semantic pattern or intent > factual intent or any entity >
    short query without a question (exploratory) > semantic.
    """
    rx = cfg._compiled["class"]

    def hit(name: str) -> bool:
        return rx.get(name) is not None and bool(rx[name].search(a.text[: cfg.max_chars]))

    if hit("exploratory"):
        return "exploratory"
    if "date" in a.intent or a.dates or a.months or a.years or a.temporal_recent \
            or hit("temporal"):
        return "temporal"
    if any(_CODE_ENTITY_RE.search(e) for e in a.entities) or hit("factual"):
        return "factual"
    if a.intent & cfg.semantic_intents or hit("semantic"):
        return "semantic"
    if a.intent & cfg.factual_intents or a.entities:
        return "factual"
    if len(a.terms) <= cfg.short_query_terms and "?" not in a.text[: cfg.max_chars]:
        return "exploratory"
    return "semantic"


def lane_weights(qclass: str, cfg: QueryConfig | None = None, *,
                 recent: bool = False) -> dict[str, float]:
    """Weights of the lanes "keyword", "vector", "recency", "live" for a query class.

    ``recent`` (the analysis's ``temporal_recent``) raises the recency lane to
    ``cfg.recent_recency_weight``: asking for the latest things is what that lane is for.
    """
    cfg = cfg or QueryConfig()
    if qclass not in cfg.lane_weights:
        raise ConfigError(f"unknown query class {qclass!r}; expected one of {QCLASSES}")
    weights = {lane: float(cfg.lane_weights[qclass].get(lane, 0.0)) for lane in LANES}
    if recent:
        weights["recency"] = max(weights["recency"], cfg.recent_recency_weight)
    return weights
