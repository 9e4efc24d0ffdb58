"""``Scan.hits``: the query's terms a candidate holds, found without tokenizing all of
it, are those tokenizing all of it finds (issue 35: a recall at a million chunks)."""

from __future__ import annotations

import random
from pathlib import Path

from engine.retrieval.config import RerankConfig
from engine.retrieval.query import analyze_query, terms_of_words, words_of
from engine.retrieval.rerank import RerankCandidate, rerank
from engine.retrieval.scan import QueryTerms, Scan, prepared, scan_all
from tests.conftest import shared_data

CFG = RerankConfig()

# pieces that sit at the edges of the tokenizer: apostrophes (a possessive, one inside
# a word, a typographic one, one before an underscore), underscores, words stemmed
# from "-ies", digits, capitals, and letters that are not ASCII
FRAGMENTS = ("flies", "fly", "copied", "copy", "anna's", "Anna\u2019s", "don't", "it's",
             "x's_y", "user'settings", "run_tests", "_build", "build_", "running", "runs",
             "rerun", "truncate", "Ünïcödé", "caf\u00e9s", "\u03a3\u03bf\u03c6\u03af\u03b1",
             "\u6570\u636e", "2026", "v1.2.3", "a/b/c.py", "--flag", "'quoted'", "''", "s'",
             "'s", "x'", "\u2019s", "e\u0301t\u00e9", "\u00bd", "\u2192", "\U0001f600",
             "theirs'", "o'clock", "ies", "cities", "studied", "study")
SEPARATORS = (" ", "", "\n", "-", ".", ",", "/", "_", "'", "\u2019", "(", "\u2192", "\t")


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(FRAGMENTS) + rng.choice(SEPARATORS)
                   for _ in range(rng.randint(1, 14)))


def _all_terms(text: str) -> set[str]:
    return terms_of_words(words_of(text[: CFG.scan_chars]), CFG.stopwords)


def _check(text: str, query: set[str], field: str | None = None) -> None:
    """``hits`` of a fresh scan, asked twice with other terms between, and after all its
    terms are read, against the terms of all its text (and of its entity ``field``)."""
    meta = {CFG.entity_fields[0]: field} if field is not None else {}
    scan = Scan(RerankCandidate(id=0, text=text, fused=1.0, meta=meta), CFG)
    whole = _all_terms(text) | (_all_terms(field) if field is not None else set())
    other = {t[::-1] for t in query} | {"zzz"}
    for terms in (query, other, query):
        assert scan.hits(QueryTerms(sorted(terms))) == terms & whole, (text, sorted(terms))
    assert scan.terms == whole
    assert scan.hits(QueryTerms(sorted(other | query))) == (other | query) & whole


def test_hits_are_the_terms_a_whole_tokenizing_finds_on_edge_text() -> None:
    rng = random.Random(35)
    every = sorted({t for f in FRAGMENTS for t in _all_terms(f)} | {"fly", "cit", "stud"})
    for _ in range(4000):
        text = _text(rng)
        own = sorted(_all_terms(text))
        query = set(rng.sample(own, min(len(own), rng.randint(0, 3))))
        query |= set(rng.sample(every, rng.randint(0, 4)))
        field = _text(rng) if rng.random() < 0.2 else None  # a title: its terms count too
        if field is not None:
            query |= set(rng.sample(sorted(_all_terms(field)) or [""], 1)) - {""}
        _check(text, query, field)


def test_hits_on_real_transcript_text() -> None:
    """Lines of the shared transcripts (JSON with escapes, code, paths, prose) against
    the terms of other lines and of questions."""
    files = sorted(Path(shared_data("transcripts")).glob("**/*.jsonl"))[:6]
    lines = [line for f in files for line in f.read_text(errors="replace").splitlines()]
    assert len(lines) > 200
    rng = random.Random(31)
    picked = rng.sample(lines, 300)
    for i, text in enumerate(picked):
        other = sorted(_all_terms(picked[(i + 1) % len(picked)]))
        query = set(rng.sample(other, min(len(other), 6))) | set(
            rng.sample(sorted(_all_terms(text)) or [""], 1))
        query |= set(analyze_query("why did the build of the cities' tests fail?").terms)
        _check(text, query - {""})


def test_a_transcript_rank_reads_only_where_the_query_words_are() -> None:
    """The transcript profile weighs no feature that needs all of a candidate's words:
    a candidate with the query's words is tokenized only in pieces, one without them
    not at all; the document profile still counts all the words of one with them
    (term_precision), and of one without them none (its term_precision is 0)."""
    a = analyze_query("why did the migration fail")
    texts = ["The migration failed: the lock was held.", "Unrelated text about lunch."]
    meta = {"kind": "turn_pair", "session": "s1", "turn": 1}
    for profile, tokenized in (("transcript", False), ("document", True)):
        cands = [RerankCandidate(id=i, text=t, fused=1.0 / (i + 1), meta=meta, profile=profile)
                 for i, t in enumerate(texts)]
        scans = scan_all(cands, CFG)
        ranked = rerank(a, cands, CFG, scans=scans)
        assert ranked[0][0] == 0 and ranked[0][2]["term_recall"] > 0
        assert ("term_precision" in ranked[0][2]) is tokenized
        assert (scans[0]._tokens is not None) is tokenized, profile
        assert scans[1]._tokens is None, profile


def test_scans_prepared_ahead_hold_what_their_rerank_reads() -> None:
    """``prepared`` (the keyword hits' scans, made while the query embeds): each holds
    the query's terms it has; one of a profile that counts every word (the document's
    term_precision) is tokenized whole, one of the transcript profile is not."""
    a = analyze_query("why did the migration fail")
    cands = [RerankCandidate(id=i, text="The migration failed: the lock was held.",
                             fused=1.0, profile=p)
             for i, p in enumerate(("transcript", "document", "conversation"))]
    scans = prepared(cands, CFG, a.terms)
    assert [s._tokens is not None for s in scans.values()] == [False, True, True]
    assert all(s._hits is not None and s._hits[1] == {"migration", "fail"}
               for s in scans.values()), [s._hits for s in scans.values()]
    assert rerank(a, cands, CFG, scans=scans) == rerank(a, cands, CFG)
