"""Query analysis: terms, entities, dates, intent, class, lane weights."""

from __future__ import annotations

import string
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import ConfigError
from engine.retrieval.fts_match import fts_query
from engine.retrieval.lexicon import BAG_RE
from engine.retrieval.query import (
    LANES,
    QCLASSES,
    QueryConfig,
    analyze_query,
    content_terms,
    lane_weights,
    stem,
    terms_of_words,
    words_of,
)


def test_terms_are_lowercase_stemmed_content_words_without_stopwords() -> None:
    a = analyze_query("What did the painters paint at the Galleries?")
    assert set(a.terms) == {stem("painters"), stem("paint"), stem("galleries")}
    assert "the" not in a.words and "what" not in a.words
    assert all(t == t.lower() for t in a.terms)


@pytest.mark.parametrize("forms", [
    ("paint", "paints", "painted", "painting"),
    ("study", "studies", "studied"),
    ("run", "runs", "running"),
    ("class", "classes"),
    ("hike", "hikes", "hiked", "hiking"),
])
def test_stem_maps_inflections_to_one_key(forms: tuple[str, ...]) -> None:
    assert len({stem(f) for f in forms}) == 1


def test_content_terms_match_query_terms_across_inflection() -> None:
    a = analyze_query("Which sunsets has Dana painted?")
    assert set(a.terms) <= content_terms("Dana: I paint a sunset every evening", QueryConfig()
                                         .stopwords)


def test_entities_names_multiword_and_possessive() -> None:
    a = analyze_query("Did Dana's sister move to New York City with Lee?")
    assert a.entities == ("Dana", "New York City", "Lee")
    assert "new york city" in a.phrases


def test_sentence_initial_stopword_is_not_an_entity_but_a_name_is() -> None:
    assert analyze_query("What does Robin collect?").entities == ("Robin",)
    assert analyze_query("Robin collects stamps.").entities == ("Robin",)
    assert analyze_query("Show me the notes").entities == ()


def test_quoted_strings_are_entities_and_phrases() -> None:
    a = analyze_query('When did Kim read "the long way home"?')
    assert "the long way home" in a.entities
    assert "the long way home" in a.phrases


def test_code_question_finds_identifiers_and_files() -> None:
    a = analyze_query("why did test_foo fail in parser.py")
    assert {"test_foo", "parser.py"} <= set(a.entities)
    assert {"test", "foo", "fail", "parser"} <= set(a.terms)
    assert "reason" in a.intent
    assert a.qclass == "factual"


def test_paths_camelcase_and_qualified_names() -> None:
    a = analyze_query("Where is ContextEngine.build_context used in src/engine/facade.py?")
    assert {"ContextEngine.build_context", "src/engine/facade.py"} <= set(a.entities)
    b = analyze_query("does parseConfig call os.path.join")
    assert {"parseConfig", "os.path.join"} <= set(b.entities)


@pytest.mark.parametrize("text", [
    "on May 7, 2023", "on May 7th 2023", "on 7 May 2023", "on 7th of May, 2023",
    "on 2023-05-07", "on 2023/05/07", "on 05/07/2023", "on Sept. 7, 2023 or", "in Jan 7 2023",
])
def test_dates_parse_to_iso(text: str) -> None:
    a = analyze_query(f"What happened {text}?")
    assert len(a.dates) == 1
    year, month, day = (int(p) for p in a.dates[0].split("-"))
    assert year == 2023 and day == 7 and month in (5, 9, 1)
    assert a.years == (2023,)


def test_day_first_switches_numeric_dates() -> None:
    assert analyze_query("on 03/04/2023").dates == ("2023-03-04",)
    assert analyze_query("on 03/04/2023", QueryConfig(day_first=True)).dates == ("2023-04-03",)


def test_month_year_years_and_invalid_dates() -> None:
    a = analyze_query("What changed in October 2023 and in 2021?")
    assert a.months == ("2023-10",)
    assert set(a.years) == {2023, 2021}
    assert "october" not in a.words  # consumed by the date
    assert analyze_query("on February 30, 2023").dates == ()


@pytest.mark.parametrize(("question", "intent"), [
    ("Where did Sam go hiking?", "location"),
    ("Which city does Sam live in?", "location"),
    ("When did Sam adopt a dog?", "date"),
    ("What year did Sam graduate?", "date"),
    ("Whose car did Sam borrow?", "ownership"),
    ("Would Sam likely enjoy a museum trip?", "multi_hop"),
    ("What do Sam and Ada both collect?", "multi_hop"),
    ("How many children does Sam have?", "count"),
    ("Why did Sam quit the band?", "reason"),
    ("What motivated Sam to run?", "reason"),
    ("What music does Sam like?", "preference"),
    ("What is Sam's favorite food?", "preference"),
])
def test_intents(question: str, intent: str) -> None:
    assert intent in analyze_query(question).intent


@pytest.mark.parametrize(("question", "qclass"), [
    ("When did Sam move?", "temporal"),
    ("What did Sam cook in 2022?", "temporal"),
    ("What did I change yesterday?", "temporal"),
    ("How did Sam feel about the trip?", "semantic"),
    ("Why do people procrastinate?", "semantic"),
    ("Where does Sam work?", "factual"),
    ("What does Sam do for fun?", "factual"),
    ("what does the error in vault.py mean?", "factual"),
    ("Tell me about the garden project", "exploratory"),
    ("docker networking", "exploratory"),
])
def test_query_class(question: str, qclass: str) -> None:
    assert analyze_query(question).qclass == qclass


@pytest.mark.parametrize(("question", "recent"), [
    ("What is the latest build status?", True),
    ("What did we discuss yesterday?", True),
    ("What happened last week?", True),
    ("Whose birthday was celebrated recently?", True),
    ("When did Sam move to Oslo?", False),
])
def test_temporal_recent(question: str, recent: bool) -> None:
    assert analyze_query(question).temporal_recent is recent


@pytest.mark.parametrize("text", ["", "   ", "?", "what is it?"])
def test_empty_or_stopword_only_queries_give_empty_terms(text: str) -> None:
    a = analyze_query(text)
    assert a.terms == () and a.entities == () and a.qclass in QCLASSES


def test_custom_stopwords_and_patterns_take_effect() -> None:
    cfg = QueryConfig(stopwords=frozenset({"paint"}),
                      intent_patterns={"count": (r"\btally\b",)})
    a = analyze_query("tally the paint cans", cfg)
    assert "paint" not in a.words
    assert a.intent == frozenset({"count"})


@pytest.mark.parametrize("kwargs", [
    {"intent_patterns": {"location": ("([unclosed",)}},
    {"intent_patterns": {"weather": ("rain",)}},
    {"intent_patterns": {"location": "where"}},
    {"class_patterns": {"poetic": ("verse",)}},
    {"lane_weights": {"factual": {"keyword": 1.0}}},
    {"recent_recency_weight": -1.0},
    {"max_terms": 0},
])
def test_config_validation(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        QueryConfig(**kwargs)


def test_lane_weights_per_class() -> None:
    for qclass in QCLASSES:
        assert set(lane_weights(qclass)) == set(LANES)
    factual, semantic = lane_weights("factual"), lane_weights("semantic")
    assert factual["keyword"] > factual["vector"]
    assert semantic["vector"] > semantic["keyword"]
    assert lane_weights("temporal")["recency"] > factual["recency"]
    cfg = QueryConfig(recent_recency_weight=2.5)
    assert lane_weights("factual", cfg, recent=True)["recency"] == 2.5
    with pytest.raises(ConfigError):
        lane_weights("whimsical")


def test_analysis_is_deterministic() -> None:
    q = "Why did Ana move from Lisbon to Porto on 3 March 2021 with her cats?"
    assert analyze_query(q) == analyze_query(q)


@pytest.mark.parametrize("chunk", ["x.", ".x", "a/", "A.B", "2023-", "x", "A ", "https://a.b"])
def test_huge_pathological_queries_take_bounded_time(chunk: str) -> None:
    text = chunk * 50_000
    start = time.perf_counter()
    analysis = analyze_query(text)
    fts_query(analysis, prefix=True)
    assert time.perf_counter() - start < 2.0  # quadratic regexes would take minutes
    assert analysis.text == text


def test_only_max_chars_are_analyzed() -> None:
    a = analyze_query("plain words " * 10 + "Zanzibar", QueryConfig(max_chars=20))
    assert "Zanzibar" not in a.entities and "zanzibar" not in a.words


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list(string.printable) + [
    "é", "’", "'", "_", "ß", "İ", "→", "│", "\u0301", "٣", "ǅ", "…"]), max_size=80))
def test_words_of_splits_plain_ascii_as_the_word_pattern_does(text: str) -> None:
    # The fast paths (ASCII, and any text without apostrophes) must give exactly the
    # tokens of the general pattern.
    assert words_of(text) == BAG_RE.findall(text.lower())


def test_words_of_keeps_contractions_and_drops_possessives() -> None:
    assert words_of("Anna's dog doesn't bark; the_end 3.5") == [
        "anna", "dog", "doesn't", "bark", "the", "end", "3", "5"]
    assert words_of("Café-Straße no.7") == ["café", "straße", "no", "7"]


@pytest.mark.parametrize("text", [
    "anna's_x and bob's", "it's_ok", "a_b's c_d's e", "x'_y", "'s_", "rock'n'roll's_",
    "it's → done ✓", "bob's—dog", "don’t → stop", "café's déjà", "x's\u2019s", "─┃ it's 5's",
    "naïve_cat's", "I'll run `make_all`'s tests… ❯ ok", "'quoted' ''s' s's"])
def test_words_of_fast_paths_keep_the_pattern_tokens(text: str) -> None:
    # the ASCII-with-apostrophes pieces (an underscore after 's is no word boundary:
    # "anna's_x" keeps "anna's") and non-ASCII symbols read as non-word characters
    assert words_of(text) == BAG_RE.findall(text.lower())


def test_terms_of_words_reads_tokens_in_order_as_their_set() -> None:
    # a text's tokens (repeats, words the term table has not met) give the terms of
    # their set, on a cold table and a warm one
    stop = frozenset({"the", "a"})
    tokens = words_of("The runner's runs ran; the RUNS of a runner 2024 zzqx_9 naïve naïve")
    cold = terms_of_words(tokens, stop)
    assert cold == terms_of_words(set(tokens), stop) == terms_of_words(tokens, stop)
    assert "" not in cold and "the" not in cold and {"runner", "run"} <= cold


def test_words_of_reads_every_code_point_as_the_pattern_does() -> None:
    """Each code point past ASCII, alone in a text with ASCII words and an apostrophe, or
    without one: the same tokens as ``BAG_RE`` (letters and digits of any script are
    word characters, everything else a break), decided per text, with no table of the
    characters met (one held 926,214 of them, 194 MB, after all of Unicode)."""
    from engine.retrieval import lexicon

    for c in range(0x80, 0x110000):
        for text in (f"a{chr(c)}'s x", f"b {chr(c)}c"):
            assert words_of(text) == BAG_RE.findall(text.lower()), hex(c)
    assert not any(isinstance(v, dict) and len(v) > 10_000 for v in vars(lexicon).values())
