"""Behaviour of pack(): allocation order, cuts, dedupe, live share, formats, errors."""

from __future__ import annotations

import dataclasses
import json
import statistics
import time

import pytest

from engine import LIMITS
from engine.errors import ConfigError, InvalidBudget
from engine.packing.candidates import PackCandidate
from engine.packing.config import PackingConfig
from engine.packing.packer import pack
from engine.packing.render import get_renderer, normalize_body
from engine.tokens import TokenCounter

COUNTER = TokenCounter.shared()
T0 = 1_683_450_000.0  # 2023-05-07 09:00 UTC

WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
         "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
         "sierra", "tango", "uniform", "victor", "whiskey")


def prose(n_words: int, seed: int = 0) -> str:
    """Deterministic filler prose of ``n_words`` words, with sentence breaks."""
    out = []
    for i in range(n_words):
        word = WORDS[(i * 7 + seed * 3) % len(WORDS)]
        out.append(word + ("." if i % 12 == 11 else ""))
    return " ".join(out)


def mem(key: str, score: float, text: str, **kw: object) -> PackCandidate:
    base: dict[str, object] = {
        "key": key, "section": "memory", "kind": "section", "source": f"/notes/{key}.md",
        "title": f"Note {key}", "time": T0, "score": score, "lanes": {"bm25": 1}, "text": text}
    base.update(kw)
    return PackCandidate(**base)  # type: ignore[arg-type]


def live(key: str, score: float, text: str, kind: str = "live:active_file") -> PackCandidate:
    return PackCandidate(key=key, section="live", kind=kind, source="/proj/main.py",
                         title="main.py", time=T0, score=score, lanes={}, text=text)


# -- allocation order ---------------------------------------------------------


def test_expanded_top_hit_comes_first_and_covers_its_chunks() -> None:
    expanded = "PRELUDE marker. " + prose(60, 1) + " HIT marker. " + prose(60, 2)
    cands = [
        mem("top", 0.9, "HIT marker.", expanded=expanded, chunk_ids=(1, 2, 3)),
        mem("inside", 0.8, "inside snippet text " + prose(20, 3), chunk_ids=(2,)),
        mem("partly", 0.7, "partly overlapping " + prose(20, 4), chunk_ids=(3, 4)),
    ]
    p = pack(cands, 2000, PackingConfig(), COUNTER)
    assert [i.why.split("|")[0] for i in p.items] == ["top_hit_expanded", "snippet"]
    assert "PRELUDE marker." in p.context and "HIT marker." in p.context
    assert "inside snippet text" not in p.context  # its chunk is inside the expanded block
    assert "partly overlapping" in p.context
    assert p.items[0].chunk_ids == (1, 2, 3)


def test_expansion_beats_higher_value_snippets_under_a_tight_budget() -> None:
    expanded = prose(150, 1)
    cands = [mem("top", 0.9, "short hit", expanded=expanded)]
    cands += [mem(f"s{i}", 0.8 - i / 100, prose(40, i + 2)) for i in range(5)]
    whole = pack(cands[:1], 5000, PackingConfig(), COUNTER).total_tokens
    p = pack(cands, whole + 10, PackingConfig(), COUNTER)
    assert p.items[0].why == "top_hit_expanded"
    assert normalize_body(expanded) in p.context
    assert len(p.items) == 1  # nothing else fits whole, and 10 tokens are no snippet


def test_expansion_is_capped_and_keeps_the_hit_in_view() -> None:
    hit = "The deploy key lives in the vault under ops slash deploy."
    expanded = prose(600, 1) + " " + hit + " " + prose(200, 2)
    cfg = PackingConfig(expansion_max_tokens=120)
    p = pack([mem("top", 1.0, hit, expanded=expanded)], 3000, cfg, COUNTER)
    assert hit in p.context
    assert p.items[0].why == "top_hit_expanded|cut"
    header = COUNTER.count(p.context.splitlines()[1] + "\n")
    assert 100 < p.items[0].tokens - header <= 120


def test_query_terms_stay_in_view_when_a_long_snippet_is_capped() -> None:
    text = prose(900, 1) + "\n\nThe zeppelin manifest is stored in the archive."
    cfg = PackingConfig(max_item_tokens=100, expand_top=0)
    with_query = pack([mem("m", 1.0, text)], 3000, cfg, COUNTER, query="zeppelin manifest")
    without = pack([mem("m", 1.0, text)], 3000, cfg, COUNTER)
    assert "zeppelin manifest" in with_query.context
    assert "zeppelin" not in without.context
    assert "|cut" in with_query.items[0].why


def test_dense_cached_uses_surrogates_and_fast_mode_ignores_them() -> None:
    cands = [mem("top", 0.9, prose(30, 1)),
             mem("doc", 0.5, prose(300, 2), surrogate="SUMMARY of the doc.", tier="gist")]
    dense = pack(cands, 2000, PackingConfig(mode="dense_cached"), COUNTER)
    fast = pack(cands, 2000, PackingConfig(mode="fast"), COUNTER)
    assert "SUMMARY of the doc." in dense.context and "[summary:gist" in dense.context
    assert dense.items[1].kind == "surrogate" and dense.items[1].why == "surrogate"
    assert dense.items[1].tier == "gist" and dense.items[0].tier is None  # packing's choice
    assert "SUMMARY" not in fast.context
    assert fast.items[1].kind == "section" and fast.items[1].tier is None


# -- cutting ---------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_item_is_cut_at_a_token_boundary(fmt: str) -> None:
    text = "日本語のテキスト 😀👍🏽 café e\u0301 " * 200
    budget = 150
    cfg = PackingConfig(fmt=fmt, max_item_tokens=5000, expand_top=0)
    p = pack([mem("m", 1.0, text)], budget, cfg, COUNTER)
    assert p.total_tokens == COUNTER.count(p.context) <= budget
    assert p.total_tokens >= budget - 10  # the room is used
    assert p.items[0].why == "snippet|cut"
    body = json.loads(p.context)["items"][0]["text"] if fmt == "json" else (
        p.context.splitlines()[-1])
    kept = body.removesuffix(" …")
    assert kept and body.endswith(" …")
    assert normalize_body(text).startswith(kept)


def test_item_skipped_when_less_than_min_snippet_fits_but_smaller_item_fills() -> None:
    small = mem("small", 0.1, "tiny note")
    big = mem("big", 0.9, prose(400, 1))
    cfg = PackingConfig(expand_top=0, min_snippet_tokens=40)
    small_cost = pack([small], 1000, cfg, COUNTER).total_tokens
    p = pack([big, small], small_cost + 20, cfg, COUNTER)
    assert [i.source for i in p.items] == ["/notes/small.md"]
    roomier = pack([big, small], small_cost + 200, cfg, COUNTER)
    assert roomier.items[0].why == "snippet|cut"


def test_budget_smaller_than_any_header_gives_empty_payload() -> None:
    cands = [mem("a", 1.0, prose(50)), live("l", 1.0, "x = 1")]
    for budget in (0, 1, 5):
        p = pack(cands, budget, PackingConfig(), COUNTER)
        assert (p.context, p.total_tokens, p.items) == ("", 0, ())


# -- dedupe ---------------------------------------------------------------------------


def test_no_item_twice() -> None:
    cands = [mem("a", 0.9, "first version of a"), mem("a", 0.8, "second version of a"),
             mem("b", 0.7, "same words"), mem("c", 0.6, "same words"),
             mem("d", 0.5, "chunk five", chunk_ids=(5,)), mem("e", 0.4, "chunk 5", chunk_ids=(5,))]
    p = pack(cands, 2000, PackingConfig(expand_top=0), COUNTER)
    assert "first version of a" in p.context and "second version" not in p.context
    assert p.context.count("same words") == 1
    assert "chunk five" in p.context and "chunk 5" not in p.context
    assert len(p.items) == 3


# -- live context and conversation ---------------------------------------------------


def test_live_items_are_labelled_and_grouped_first() -> None:
    cands = [mem("a", 0.9, prose(40)), live("l", 0.5, "def main():\n    return 0")]
    text = pack(cands, 2000, PackingConfig(), COUNTER).context
    assert text.index("=== Live context ===") < text.index("[live:active_file · main.py")
    assert text.index("[live:active_file") < text.index("=== Memory ===")
    md = pack(cands, 2000, PackingConfig(fmt="markdown"), COUNTER)
    assert "## Live context" in md.context and "```py\ndef main():" in md.context
    assert md.items[0].kind == "live:active_file" and md.items[0].why == "live"


def test_live_share_is_reserved_and_capped_while_memory_competes() -> None:
    memory = [mem(f"m{i}", 1.0 - i / 100, prose(200, i)) for i in range(10)]
    big_live = live("l", 0.1, prose(2000, 9))
    cfg = PackingConfig(live_max_share=0.25, max_item_tokens=5000)
    p = pack([*memory, big_live], 1000, cfg, COUNTER)
    live_tokens = sum(i.tokens for i in p.items if i.kind.startswith("live:"))
    assert 0 < live_tokens <= 250
    assert p.items[0].kind == "live:active_file"  # reserved although memory ranks higher
    alone = pack([big_live], 1000, cfg, COUNTER)
    assert alone.items[0].tokens > 250  # nothing competes: live may use the budget


def test_conversation_turns_render_in_time_order() -> None:
    turns = [PackCandidate(key=f"t{i}", section="conversation", kind="turn", source="user",
                           title="", time=T0 + 60 * i, score=s, lanes={}, text=f"turn number {i}")
             for i, s in enumerate([0.1, 0.9, 0.5])]
    p = pack(turns, 500, PackingConfig(), COUNTER)
    assert [p.context.index(f"turn number {i}") for i in range(3)] == sorted(
        p.context.index(f"turn number {i}") for i in range(3))
    assert "=== Conversation ===" in p.context
    assert all(i.kind == "conversation" for i in p.items)


def test_conversation_header_shows_the_role_not_a_redundant_source() -> None:
    turn = PackCandidate(key="turn:0", section="conversation", kind="conversation",
                         source="conversation", title="user", time=T0, score=0.5, lanes={},
                         text="Where is the key?", why="conversation")
    p = pack([turn], 200, PackingConfig(), COUNTER)
    assert "[conversation · 2023-05-07 09:00 UTC] user\nWhere is the key?" in p.context
    assert p.items[0].why == "conversation"  # the caller's identical reason is not repeated


# -- rendering, accounting -----------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_accounting_is_exact(fmt: str) -> None:
    cands = [mem("a", 0.9, prose(80, 1), expanded=prose(120, 2)), mem("b", 0.5, prose(30, 3)),
             live("l", 0.4, "print('hi')"),
             PackCandidate(key="t", section="conversation", kind="turn", source="user", title="",
                           time=T0, score=0.3, lanes={}, text="Where is the key?")]
    p = pack(cands, 1200, PackingConfig(fmt=fmt), COUNTER, now=T0 + 3600)
    assert p.total_tokens == COUNTER.count(p.context)
    assert len(p.items) == 4
    r = get_renderer(fmt)
    frame = [r.head("2023-05-07 10:00 UTC"), r.foot()]
    frame += [r.group(s) for s in ("live", "memory", "conversation")]
    overhead = sum(COUNTER.count(f) for f in frame)
    assert overhead > 0
    assert sum(i.tokens for i in p.items) + overhead == p.total_tokens
    if fmt == "json":
        doc = json.loads(p.context)
        assert doc["now"] == "2023-05-07 10:00 UTC"
        assert [e["kind"] for e in doc["items"]] == ["live:active_file", "section", "section",
                                                     "conversation"]


def _turn(i: int, score: float, source: str = "chat:1", title: str = "session 1"
          ) -> PackCandidate:
    speaker = "Ann" if i % 2 else "Bob"
    return PackCandidate(key=f"chunk:{source}:{i}", section="memory", kind="turn",
                         source=source, title=title, time=T0, score=score, lanes={},
                         text=f"{speaker}: turn {i} says {prose(12, i)}", position=float(i),
                         chunk_ids=(hash((source, i)) % 10_000,))


def test_turns_of_one_session_share_one_header_in_source_order() -> None:
    cands = [_turn(4, 0.9), _turn(1, 0.8), _turn(7, 0.7), _turn(3, 0.6, "chat:2", "session 2")]
    p = pack(cands, 2000, PackingConfig(expand_top=0), COUNTER)
    ctx = p.context
    # An opaque source id gives way to the title (a path or URL would stay), and a
    # turn's kind label is left out ("Speaker: text" lines say what they are).
    assert ctx.count("[2023-05-07 09:00 UTC] session 1\n") == 1
    assert ctx.count("[2023-05-07 09:00 UTC] session 2\n") == 1
    assert "turn ·" not in ctx
    # Within the run, turns follow their position; runs follow their best item.
    starts = [ctx.index(f"turn {i} says") for i in (1, 4, 7, 3)]
    assert starts == sorted(starts)
    assert "\nAnn: turn 1 says" in ctx and f"{prose(12, 1)}\nBob: turn 4 says" in ctx
    assert p.total_tokens == COUNTER.count(ctx)
    frame = COUNTER.count(get_renderer("text").group("memory"))
    assert sum(i.tokens for i in p.items) + frame == p.total_tokens
    # The first item of each run pays for its header; the others only for their line.
    by_key = {i.chunk_ids: i.tokens for i in p.items}
    line = COUNTER.count(cands[0].text + "\n")
    assert by_key[cands[0].chunk_ids] == line
    assert by_key[cands[1].chunk_ids] > line  # turn 1 opens the run


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_only_unlabelled_kinds_drop_their_label(fmt: str) -> None:
    cands = [_turn(1, 0.9), mem("a", 0.8, "hello there")]
    p = pack(cands, 1000, PackingConfig(expand_top=0, fmt=fmt), COUNTER)
    lines = p.context.splitlines()
    assert any(ln.lstrip("[# ").startswith("2023-05-07 09:00 UTC") for ln in lines)
    assert any("section · a.md" in ln for ln in lines)  # other kinds keep theirs
    labelled = pack(cands, 1000, PackingConfig(expand_top=0, fmt=fmt, unlabelled_kinds=()),
                    COUNTER)
    assert "turn · 2023-05-07 09:00 UTC" in labelled.context
    assert p.total_tokens < labelled.total_tokens
    assert p.total_tokens == COUNTER.count(p.context)


def test_an_unlabelled_turn_without_time_or_source_keeps_its_label() -> None:
    p = pack([_turn(1, 0.9)], 1000, PackingConfig(expand_top=0, include_time=False), COUNTER)
    assert p.context.splitlines()[1] == "[turn] session 1"


def test_json_keeps_the_kind_of_unlabelled_kinds() -> None:
    p = pack([_turn(1, 0.9)], 1000, PackingConfig(fmt="json", expand_top=0), COUNTER)
    assert json.loads(p.context)["items"][0]["kind"] == "turn"


def test_runs_fit_more_items_than_one_header_each() -> None:
    cands = [_turn(i, 1.0 - i / 100) for i in range(40)]
    grouped = pack(cands, 600, PackingConfig(expand_top=0), COUNTER)
    alone = pack([dataclasses.replace(c, source=f"chat:{i}") for i, c in enumerate(cands)],
                 600, PackingConfig(expand_top=0), COUNTER)
    assert len(grouped.items) > 1.3 * len(alone.items)
    assert grouped.total_tokens <= 600 and alone.total_tokens <= 600


def test_json_does_not_group() -> None:
    p = pack([_turn(1, 0.9), _turn(2, 0.8)], 1000, PackingConfig(fmt="json", expand_top=0),
             COUNTER)
    doc = json.loads(p.context)
    assert [e["source"] for e in doc["items"]] == ["chat:1", "chat:1"]
    assert all(e["title"] == "session 1" for e in doc["items"])


def test_markdown_run_keeps_code_fenced() -> None:
    code = [mem(f"c{i}", 0.9 - i / 10, f"x = {i}", kind="code", source="/p/a.py", title="a.py",
                position=float(i)) for i in range(2)]
    p = pack(code, 500, PackingConfig(fmt="markdown", expand_top=0), COUNTER)
    assert p.context.count("### code · a.py") == 1
    assert "```py\nx = 0\n```\n\n```py\nx = 1\n```" in p.context
    assert p.total_tokens == COUNTER.count(p.context)


def test_dates_and_sources_in_headers() -> None:
    p = pack([mem("a", 1.0, "hello there")], 200, PackingConfig(), COUNTER)
    assert p.context.splitlines()[1] == "[section · a.md · 2023-05-07 09:00 UTC] Note a"
    q = pack([mem("a", 1.0, "hello there")], 200, PackingConfig(include_time=False), COUNTER)
    assert q.context.splitlines()[1] == "[section · a.md] Note a"


def test_markdown_fences_survive_backticks_in_code() -> None:
    code = "x = '''\n```\n'''\nprint(x)"
    p = pack([mem("c", 1.0, code, kind="code", source="/p/tool.py")], 500,
             PackingConfig(fmt="markdown"), COUNTER)
    assert "````py\n" + code + "\n````" in p.context


def test_deterministic_across_runs_and_input_copies() -> None:
    cands = [mem(f"m{i}", 0.5, prose(50, i)) for i in range(8)]  # all tied on score
    a = pack(cands, 700, PackingConfig(), COUNTER, now=T0, query="alpha")
    b = pack(list(reversed(cands))[::-1], 700, PackingConfig(), COUNTER, now=T0, query="alpha")
    assert a == b and a.context.encode() == b.context.encode()


# -- errors and config -----------------------------------------------------------------------


@pytest.mark.parametrize("budget", [-1, LIMITS.max_budget + 1, 10**9])
def test_bad_budget_raises(budget: int) -> None:
    with pytest.raises(InvalidBudget):
        pack([mem("a", 1.0, "x")], budget, PackingConfig(), COUNTER)


@pytest.mark.parametrize("budget", [True, 1.5, "100"])
def test_non_integer_budget_raises(budget: object) -> None:
    with pytest.raises(InvalidBudget):
        pack([], budget, PackingConfig(), COUNTER)  # type: ignore[arg-type]


@pytest.mark.parametrize("kwargs", [
    {"mode": "slow"}, {"fmt": "html"}, {"expansion_max_tokens": 0}, {"expand_top": -1},
    {"min_snippet_tokens": 0}, {"max_item_tokens": 1.5}, {"live_max_share": 0.0},
    {"live_max_share": 1.5}, {"include_time": "yes"}, {"neighbour_kinds": "turn"},
    {"neighbour_hits": -1}, {"neighbour_span": 51}, {"neighbour_after": 1.5},
    {"neighbour_before": -0.1}, {"unlabelled_kinds": "turn"},
])
def test_config_is_validated(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        PackingConfig(**kwargs)  # type: ignore[arg-type]


def test_packing_sixty_candidates_is_fast() -> None:
    """Guard against gross regressions (the 5 ms target is measured by the bench)."""
    cands = [mem(f"m{i}", 1 / (i + 1), prose(120 + 7 * i, i), chunk_ids=(i,)) for i in range(60)]
    cands[0] = mem("m0", 1.0, "hit", expanded=prose(500, 1), chunk_ids=(0,))
    cands.append(live("l", 0.5, "def f():\n    return 1\n" * 80))
    for fmt in ("text", "markdown", "json"):
        cfg = PackingConfig(fmt=fmt)
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            p = pack(cands, 2000, cfg, COUNTER, now=T0, query="alpha bravo")
            runs.append(time.perf_counter() - start)
        assert p.total_tokens == COUNTER.count(p.context) <= 2000
        assert statistics.median(runs) < 0.05


# -- a document's title is sent once ------------------------------------------


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_a_body_that_opens_with_the_headers_title_sends_it_once(fmt: str) -> None:
    title = "Sleep and memory consolidation in older adults"
    p = pack([mem("a", 0.9, f"{title}\n\n{prose(30, 1)}", title=title)], 2000,
             PackingConfig(expand_top=0, fmt=fmt), COUNTER)
    ctx = p.context
    assert ctx.count(title) == 1 and prose(30, 1) in ctx
    if fmt == "json":
        item = json.loads(ctx)["items"][0]
        assert item["title"] == title and item["text"] == prose(30, 1)
    assert p.total_tokens == COUNTER.count(ctx) <= 2000


def test_a_first_line_that_only_resembles_the_title_stays() -> None:
    title = "Sleep and memory"
    cands = [mem("a", 0.9, f"{title}.\n{prose(20, 1)}", title=title),
             mem("b", 0.8, f"{title} in older adults\n{prose(20, 2)}", title=title,
                 source="/notes/b.md")]
    ctx = pack(cands, 2000, PackingConfig(expand_top=0), COUNTER).context
    assert f"\n{title}.\n" in ctx and f"\n{title} in older adults\n" in ctx


def test_a_body_that_is_only_the_title_is_kept() -> None:
    title = "Release checklist"
    p = pack([mem("a", 0.9, title, title=title)], 500, PackingConfig(expand_top=0), COUNTER)
    assert p.context.count(title) == 2 and p.total_tokens == COUNTER.count(p.context)


def test_a_turn_that_does_not_fit_whole_is_skipped_not_cut() -> None:
    long_turn = dataclasses.replace(_turn(1, 0.9), text="Ann: " + prose(120, 1))
    short = dataclasses.replace(_turn(2, 0.8), text="Bob: short reply.")
    budget = 60
    for cfg, cut in ((PackingConfig(expand_top=0), False),
                     (PackingConfig(expand_top=0, whole_kinds=()), True)):
        p = pack([long_turn, short], budget, cfg, COUNTER)
        assert ("|cut" in p.items[0].why) is cut
        if not cut:
            assert [i.chunk_ids for i in p.items] == [short.chunk_ids]
            assert "Ann:" not in p.context
        assert p.total_tokens == COUNTER.count(p.context) <= budget


# -- stored token counts -------------------------------------------------------


class _CountingCounter(TokenCounter):
    """The real counter, recording how many texts it was asked to tokenize."""

    def __init__(self) -> None:
        super().__init__()
        self.encoded = 0

    def count(self, text: str) -> int:
        if text and text not in self._counts:
            self.encoded += 1
        return super().count(text)


def _many_long(with_counts: bool) -> list[PackCandidate]:
    out = []
    for i in range(40):
        text = prose(150 + 3 * i, i)
        out.append(mem(f"m{i}", 1 / (i + 1), text, chunk_ids=(i,),
                       text_tokens=COUNTER.count(text) if with_counts else None))
    out.append(mem("short", 0.001, "a short note", chunk_ids=(99,),
                   text_tokens=COUNTER.count("a short note") if with_counts else None))
    return out


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_stored_counts_spare_the_tokenizer_and_change_nothing(fmt: str) -> None:
    """Once the budget is nearly full every remaining candidate is judged too long or
    not: by its stored count when the candidate gives one, else by tokenizing it."""
    cfg = PackingConfig(fmt=fmt, expand_top=0, min_snippet_tokens=40)
    cands = _many_long(False)
    # room for the two best whole and the short note: every other is passed over
    budget = pack([cands[0], cands[1], cands[-1]], 5000, cfg, COUNTER, now=T0).total_tokens + 5
    plain, counted = _CountingCounter(), _CountingCounter()
    without = pack(cands, budget, cfg, plain, now=T0)
    given = pack(_many_long(True), budget, cfg, counted, now=T0)
    assert given.context == without.context and given.items == without.items
    assert "/notes/short.md" in {i.source for i in given.items}  # the short note fills
    assert counted.encoded < plain.encoded - 20


def test_a_wrong_stored_count_never_puts_a_payload_over_budget() -> None:
    cands = [mem(f"m{i}", 1 / (i + 1), prose(150, i), chunk_ids=(i,), text_tokens=1)
             for i in range(10)]
    cfg = PackingConfig(expand_top=0, min_snippet_tokens=40)
    for budget in (30, 200, 650, 1200):
        p = pack(cands, budget, cfg, COUNTER)
        assert p.total_tokens == COUNTER.count(p.context) <= budget


def test_a_trimmed_overlap_drops_the_stored_count() -> None:
    from engine.packing.overlap import trim_overlaps

    a = mem("a", 0.9, "one two three four five six", text_tokens=6)
    b = mem("b", 0.5, "five six seven eight", text_tokens=4, source=a.source)
    out = trim_overlaps([a, b], {"a": (0, 27), "b": (19, 39)})
    assert out[0].text_tokens == 6
    assert out[1].text.endswith("seven eight") and out[1].text != b.text
    assert out[1].text_tokens is None
