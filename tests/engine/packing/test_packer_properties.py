"""Hypothesis properties of pack(): exact counts, budget, accounting, determinism."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.api import Payload, PayloadItem
from engine.packing.candidates import PackCandidate
from engine.packing.config import PackingConfig
from engine.packing.packer import pack
from engine.packing.render import clean_line, format_time, get_renderer, short_source
from engine.tokens import TokenCounter

COUNTER = TokenCounter.shared()
NOW = 1_700_000_000.0

_SPICY = "é日本語😀👍🏽\u0301\u200b\ufeff\u2028\t\r\n\x00 'sll.,;:!?`#[]{}\"\\"
_text = st.one_of(
    st.text(max_size=120),
    st.lists(st.sampled_from(list(_SPICY) + ["word ", "the ", "12", "```"]), max_size=150)
    .map("".join),
    # Huge texts: a short piece repeated up to thousands of times.
    st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=12), st.integers(0, 3000)),
)
_score = st.one_of(st.floats(-10, 10, allow_nan=False), st.just(float("nan")), st.just(0.5))
_time = st.one_of(st.none(), st.floats(-1e11, 1e11, allow_nan=False),
                  st.just(float("inf")), st.just(1e300))
_KINDS = {
    "memory": ["section", "code", "turn", "tool", "surrogate", "turn_pair"],
    "live": ["active_file", "live:selection", "terminal"],
    "conversation": ["turn"],
}


@st.composite
def _candidate(draw: st.DrawFn) -> PackCandidate:
    section = draw(st.sampled_from(["memory", "memory", "live", "conversation"]))
    return PackCandidate(
        key=draw(st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "h"])),
        section=section,
        kind=draw(st.sampled_from(_KINDS[section])),
        source=draw(st.one_of(st.text(max_size=30),
                              st.sampled_from(["/a/b/notes.md", "https://x.org/p/q"]))),
        title=draw(st.one_of(st.text(max_size=40), st.just("session 1"))),
        time=draw(st.one_of(_time, st.just(NOW))),
        score=draw(_score),
        lanes=draw(st.dictionaries(st.sampled_from(["bm25", "vector"]), st.integers(1, 50),
                                   max_size=2)),
        text=draw(_text),
        expanded=draw(st.one_of(st.none(), _text)),
        surrogate=draw(st.one_of(st.none(), st.text(max_size=80))),
        tier=draw(st.sampled_from([None, "gist", "micro"])),
        chunk_ids=tuple(draw(st.lists(st.integers(0, 6), max_size=3))),
        why=draw(st.sampled_from(["", "lane:bm25"])),
        position=draw(st.one_of(st.none(), st.integers(0, 9).map(float),
                                st.just(float("nan")))),
        # a count the packer only uses to pass items over: even a wrong one must
        # never put a payload over budget
        text_tokens=draw(st.one_of(st.none(), st.integers(0, 800))),
    )


_config = st.builds(
    PackingConfig,
    mode=st.sampled_from(["fast", "dense_cached"]),
    expansion_max_tokens=st.integers(1, 500),
    expand_top=st.integers(0, 3),
    min_snippet_tokens=st.integers(1, 40),
    max_item_tokens=st.integers(1, 700),
    live_max_share=st.floats(0.05, 1.0),
    include_time=st.booleans(),
    fmt=st.sampled_from(["text", "markdown", "json"]),
)


def _section(kind: str) -> str:
    if kind.startswith("live:"):
        return "live"
    return "conversation" if kind == "conversation" else "memory"


def _overhead(payload: Payload, cfg: PackingConfig, now: float | None) -> int:
    r = get_renderer(cfg.fmt)
    stamp = format_time(now) if cfg.include_time else ""
    parts = [r.head(stamp), r.foot()]
    parts += [r.group(s) for s in {_section(i.kind) for i in payload.items}]
    return sum(COUNTER.count(p) for p in parts)


def _run_key(item: PayloadItem, label: str, cfg: PackingConfig) -> tuple[object, ...]:
    """What the packer groups memory items by: section, source and the header fields."""
    when = format_time(item.time) if cfg.include_time else ""
    return (_section(item.kind), item.source, label, clean_line(item.title, 80), when)


def _check(payload: Payload, budget: int, cfg: PackingConfig, now: float | None) -> None:
    assert payload.total_tokens == COUNTER.count(payload.context)
    assert payload.total_tokens <= budget
    assert payload.budget == budget
    assert payload.format == cfg.fmt
    payload.context.encode("utf-8")  # no lone surrogates: the string can go on a wire
    if not payload.items:
        assert payload.context == ""
        assert payload.total_tokens == 0
        return
    # Exact accounting: item blocks plus head, group headers and foot.
    assert sum(i.tokens for i in payload.items) + _overhead(payload, cfg, now) == payload.total_tokens
    assert all(i.tokens > 0 for i in payload.items)
    if cfg.fmt == "json":
        doc = json.loads(payload.context)
        assert len(doc["items"]) == len(payload.items)
        for entry, item in zip(doc["items"], payload.items, strict=True):
            source = short_source(item.source)
            assert entry["source"] == ("" if source == entry["kind"] else source)
            assert entry["text"]
    else:
        # Memory items sharing a header form a run: only its first item shows the header.
        opener = "[" if cfg.fmt == "text" else "### "
        pos = 0
        previous: tuple[object, ...] = ()
        for item in payload.items:
            used_surrogate = item.why.startswith("surrogate")
            label = "summary" if used_surrogate else item.kind
            run = _run_key(item, label, cfg)
            if run[0] != "memory" or run != previous:
                # Kinds in cfg.unlabelled_kinds may show a header without their label.
                shown = "" if label in cfg.unlabelled_kinds else label
                found = payload.context.find(opener + shown, pos)
                assert found >= pos, (label, payload.context[:200])
                pos = found + 1
            previous = run
    ids = [frozenset(i.chunk_ids) for i in payload.items if i.chunk_ids]
    assert len(ids) == len(set(ids))


@settings(max_examples=200, deadline=None)
@given(st.lists(_candidate(), max_size=8), st.integers(0, 5000), _config,
       st.sampled_from([None, NOW]), st.sampled_from([None, "word the", "日本"]))
def test_pack_invariants(cands: list[PackCandidate], budget: int, cfg: PackingConfig,
                         now: float | None, query: str | None) -> None:
    payload = pack(cands, budget, cfg, COUNTER, now=now, query=query)
    _check(payload, budget, cfg, now)
    again = pack(list(cands), budget, cfg, COUNTER, now=now, query=query)
    assert again == payload
    assert json.dumps(again.to_dict()) == json.dumps(payload.to_dict())


@settings(max_examples=60, deadline=None)
@given(st.lists(_candidate(), min_size=1, max_size=6), _config)
def test_tiny_budgets_give_empty_or_valid(cands: list[PackCandidate], cfg: PackingConfig) -> None:
    for budget in (0, 1, 2, 3):
        payload = pack(cands, budget, cfg, COUNTER)
        _check(payload, budget, cfg, None)
    assert pack(cands, 0, cfg, COUNTER) == Payload("", 0, 0, (), {}, cfg.fmt)
