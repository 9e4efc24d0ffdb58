"""Extractive surrogates: a full, a gist and a micro summary of a source, without a model.

A surrogate lets the packer spend a few dozen tokens on a source instead of a
raw chunk. Sentences (lines for code, turns for chats, items for markdown lists)
are scored by how central their terms are to the document, their position, their
overlap with the title and a length prior; they are picked greedily, skipping
one that says what an already chosen one says (token-set Jaccard above
``redundancy``), and put back in document order. The tiers are nested: the
gist is picked from the full summary's sentences and the micro from the gist's,
and each is proven within its cap with the real tokenizer.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from engine.ingest.config import SurrogateConfig
from engine.tokens import TokenCounter

TIERS = ("full", "gist", "micro")

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TERM_RE = re.compile(rf"[{_CJK}]|[^\W\d_{_CJK}]{{2,}}|\d{{2,}}")
_SENTENCE_END_RE = re.compile(r"[.!?…]+[\"'”’)\]]*\s+|[。！？]+")
_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s+\S")
_LINE_UNIT_RE = re.compile(r"^\s*(?:[-*+•]\s|\d{1,3}[.)]\s|\||>)")
_SPEAKER_RE = re.compile(r"^\s*([^\W\d][\w .'-]{0,39}?):\s+\S")
_CODE_LINE_RE = re.compile(
    r"[;{}]\s*$|^\s*(?:def|class|import|from|return|if|elif|for|while|function|const|let|var"
    r"|fn|pub|package|func|#include|public|private|static)\b|=>|==|\)\s*:\s*$|^\s{4,}\S")
_DECLARATION_RE = re.compile(
    r"^\s*(?:async\s+|export\s+|pub\s+)?(?:def|class|function|fn|func|interface|struct|impl"
    r"|trait|enum|type)\b")
_ABBREVIATIONS = frozenset({
    "e.g", "i.e", "etc", "vs", "mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "no", "fig",
    "al", "inc", "ltd", "co", "approx", "cf",
})
_STOPWORDS = frozenset((
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
    "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but",
    "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for",
    "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself",
    "him", "himself", "his", "how", "if", "in", "into", "is", "it", "its", "itself", "just",
    "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once",
    "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she",
    "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them",
    "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too",
    "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which",
    "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself",
    "yourselves", "also", "get", "got", "like", "one",
))
_MAX_UNIT_CHARS = 600


@dataclass
class _Unit:
    text: str  # as it reads alone (with its speaker for a chat turn's sentence)
    para: int  # units of one paragraph are joined by a space, others by a newline
    lead: bool  # first unit of its paragraph, a heading, or a turn's start
    tail: str = ""  # the text without the speaker, used after a unit of the same turn


def make_surrogates(text: str, title: str, cfg: SurrogateConfig,
                    counter: TokenCounter) -> dict[str, str]:
    """The ``full``, ``gist`` and ``micro`` extractive summaries of ``text``.

    Each is made of whole sentences of ``text`` in their original order (a
    single over-long sentence is cut at a token boundary) and counts at most
    its tier's tokens. Empty text gives empty summaries. Deterministic.
    """
    units = split_units(text)
    if not units:
        return dict.fromkeys(TIERS, "")
    terms = [frozenset(_terms(u.tail or u.text)) for u in units]
    tokens = _LazyCounts(units, counter)
    scores = _score(units, terms, frozenset(_terms(title)), counter)
    eligible = [i for i in range(len(units)) if terms[i]] or list(range(len(units)))
    eligible.sort(key=lambda i: (-scores[i], i))
    out: dict[str, str] = {}
    for tier, cap in zip(TIERS, (cfg.full_tokens, cfg.gist_tokens, cfg.micro_tokens),
                         strict=True):
        chosen = _select(eligible, terms, tokens, cap, cfg.redundancy, units)
        out[tier], chosen = _fit(units, chosen, scores, eligible, cap, counter)
        if chosen:
            keep = set(chosen)
            eligible = [i for i in eligible if i in keep]
    return out


def split_units(text: str) -> list[_Unit]:
    """Split a document into sentence-like units: lines for code, turns' sentences
    for chats, headings and list items for markdown, sentences for prose."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    nonblank = [ln for ln in lines if ln.strip()]
    if not nonblank:
        return []
    speakers = [m.group(1) for ln in nonblank if (m := _SPEAKER_RE.match(ln))]
    chat = len(speakers) * 2 >= len(nonblank) and len(set(speakers)) >= 2
    code = not chat and not any(_FENCE_RE.match(ln) for ln in nonblank) and (
        sum(1 for ln in nonblank if _CODE_LINE_RE.search(ln)) * 5 >= len(nonblank) * 2)
    units: list[_Unit] = []
    para = 0
    prose: list[str] = []
    in_fence = False

    def flush() -> None:
        nonlocal para
        if prose:
            _add_sentences(units, " ".join(prose), para, "")
            prose.clear()
            para += 1

    for line in lines:
        stripped = line.strip()
        if _FENCE_RE.match(line):
            flush()
            in_fence = not in_fence
            continue
        if not stripped:
            flush()
            continue
        if code or in_fence:
            flush()
            declaration = bool(_DECLARATION_RE.match(line))
            units.append(_Unit(line.rstrip()[:_MAX_UNIT_CHARS], para, declaration))
            para += 1
        elif chat and (m := _SPEAKER_RE.match(line)):
            flush()
            _add_sentences(units, line[m.end(1) + 1:].strip(), para, m.group(1))
            para += 1
        elif _HEADING_RE.match(line):
            flush()
            _add_sentences(units, stripped, para, "")
            para += 1
        elif _LINE_UNIT_RE.match(line):  # a list item, quote or table row: its own paragraph
            flush()
            prose.append(stripped)
        else:
            prose.append(stripped)
    flush()
    return units


def _add_sentences(units: list[_Unit], text: str, para: int, speaker: str) -> None:
    """Append the sentences of one paragraph (or turn) as units."""
    start = 0
    pieces: list[str] = []
    for m in _SENTENCE_END_RE.finditer(text):
        end = m.end()
        if m.group().startswith(".") and _is_abbreviation(text, m.start()):
            continue
        if end < len(text) and text[end].islower():
            continue
        pieces.append(text[start:end].strip())
        start = end
    pieces.append(text[start:].strip())
    first = True
    for piece in pieces:
        while piece:
            head, piece = _hard_split(piece)
            unit = f"{speaker}: {head}" if speaker else head
            units.append(_Unit(unit, para, first, head))
            first = False


def _is_abbreviation(text: str, dot: int) -> bool:
    word_start = dot
    while word_start > 0 and (text[word_start - 1].isalpha() or text[word_start - 1] == "."):
        word_start -= 1
    word = text[word_start:dot].lower()
    return len(word) == 1 or word in _ABBREVIATIONS


def _hard_split(text: str) -> tuple[str, str]:
    """An over-long sentence is split at a space near ``_MAX_UNIT_CHARS``."""
    if len(text) <= _MAX_UNIT_CHARS:
        return text, ""
    cut = text.rfind(" ", _MAX_UNIT_CHARS // 2, _MAX_UNIT_CHARS)
    cut = cut if cut > 0 else _MAX_UNIT_CHARS
    return text[:cut].rstrip(), text[cut:].strip()


def _terms(text: str) -> list[str]:
    return [t for t in _TERM_RE.findall(text.lower()) if t not in _STOPWORDS]


class _LazyCounts:
    """Token counts of units, computed when first needed (most are never needed)."""

    def __init__(self, units: list[_Unit], counter: TokenCounter) -> None:
        self._units, self._counter = units, counter
        self._cache: dict[int, int] = {}

    def __getitem__(self, i: int) -> int:
        n = self._cache.get(i)
        if n is None:
            n = self._cache[i] = self._counter.count(self._units[i].text)
        return n


def _score(units: list[_Unit], terms: list[frozenset[str]], title_terms: frozenset[str],
           counter: TokenCounter) -> list[float]:
    """Centrality, position, title overlap and a length prior, combined."""
    tf: dict[str, int] = {}
    for unit_terms in terms:
        for t in unit_terms:
            tf[t] = tf.get(t, 0) + 1
    central = [sum(math.log1p(tf[t] - 1) for t in ts) / math.sqrt(len(ts)) if ts else 0.0
               for ts in terms]
    top = max(central) or 1.0
    n = len(units)
    scores = []
    for i, (unit, ts) in enumerate(zip(units, terms, strict=True)):
        position = 0.6 * (1.0 - i / n) + 0.4 * unit.lead
        title = len(ts & title_terms) / len(title_terms) if title_terms else 0.0
        # Length prior: few content terms say little; very long units crowd a tier
        # out (measured in characters here, to spare a count of every unit).
        prior = min(1.0, len(ts) / 6) * min(1.0, 240 / max(len(unit.text), 1))
        scores.append(prior * (0.5 * central[i] / top + 0.25 * position + 0.25 * title))
    return scores


def _select(order: list[int], terms: list[frozenset[str]], tokens: _LazyCounts, cap: int,
            redundancy: float, units: list[_Unit]) -> list[int]:
    """Greedy by score: take what fits and is not redundant; return in document order."""
    chosen: list[int] = []
    seen: set[str] = set()
    used = 0
    for i in order:
        if cap - used < 3:
            break
        if len(units[i].text) > 16 * (cap - used) + 64:
            continue  # cannot fit: far more characters than the room could hold
        cost = tokens[i] + (1 if chosen else 0)  # the joiner
        if used + cost > cap or units[i].text in seen:
            continue
        ts = terms[i]
        if any(_jaccard(ts, terms[j]) > redundancy for j in chosen):
            continue
        chosen.append(i)
        seen.add(units[i].text)
        used += cost
    return sorted(chosen)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def _join(units: list[_Unit], chosen: list[int]) -> str:
    out: list[str] = []
    for k, i in enumerate(chosen):
        if k and units[i].para == units[chosen[k - 1]].para:
            out.append(" " + (units[i].tail or units[i].text))
        else:
            out.append(("\n" if k else "") + units[i].text)
    return "".join(out)


def _fit(units: list[_Unit], chosen: list[int], scores: list[float], order: list[int],
         cap: int, counter: TokenCounter) -> tuple[str, list[int]]:
    """Render the chosen units, proving the cap on the real string; when nothing
    was chosen, cut the best unit at a token boundary. Returns the text and the
    units it is made of."""
    chosen = list(chosen)
    while chosen:
        text = _join(units, chosen)
        if counter.count(text) <= cap:
            return text, chosen
        chosen.remove(min(chosen, key=lambda i: (scores[i], -i)))
    if not order:
        return "", []
    best = units[order[0]].text
    cut = counter.truncate(best, cap - 1).rstrip()
    text = cut + "…" if cut else counter.truncate(best, cap)
    if counter.count(text) > cap:
        text = counter.truncate(text, cap)
    return text, [order[0]]
