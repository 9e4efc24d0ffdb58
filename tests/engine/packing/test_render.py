"""Renderer helpers and block layouts (text, markdown, JSON)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.packing.render import (
    FORMATS,
    BlockView,
    clean_line,
    code_lang,
    format_time,
    get_renderer,
    normalize_body,
    short_source,
)
from engine.tokens import TokenCounter

COUNTER = TokenCounter.shared()


@pytest.mark.parametrize(("source", "short"), [
    ("/home/me/notes/install.md", "install.md"),
    ("C:\\Users\\me\\doc.txt", "doc.txt"),
    ("/home/me/project/", "project"),
    ("https://docs.python.org/3/library/json.html?x=1", "docs.python.org/…/json.html"),
    ("https://example.org/", "example.org"),
    ("text:0123456789abcdef", "text:01234567"),
    ("stdin:3", "stdin:3"),
    ("user", "user"),
    ("", ""),
])
def test_short_source(source: str, short: str) -> None:
    assert short_source(source) == short


def test_short_source_is_one_bounded_line() -> None:
    out = short_source("a\nb\tc" + "x" * 500)
    assert "\n" not in out and len(out) <= 60 and out.endswith("…")


@pytest.mark.parametrize(("t", "text"), [
    (0.0, "1970-01-01 00:00 UTC"),
    (1_683_450_000.0, "2023-05-07 09:00 UTC"),
    (None, ""), (float("nan"), ""), (float("inf"), ""), (1e300, ""),
])
def test_format_time(t: float | None, text: str) -> None:
    assert format_time(t) == text


def test_clean_line_collapses_whitespace_and_controls() -> None:
    assert clean_line("  a\n\tb\x00c\u2028d  ", 80) == "a b c d"
    assert clean_line("abcdef", 4) == "abc…"


def test_normalize_body() -> None:
    raw = "\n  \n\r\nfirst\r\nsecond\rthird\x00\x07\n\n\n\n\nlast  \t\n\n"
    assert normalize_body(raw) == "first\nsecond\nthird\n\nlast"
    assert normalize_body("    indented code") == "    indented code"
    assert normalize_body("lone \ud800 surrogate") == "lone \ufffd surrogate"
    assert normalize_body("") == ""


def test_code_lang() -> None:
    assert code_lang("code", "main.py") == "py"
    assert code_lang("live:active_file", "App.TSX") == "tsx"
    assert code_lang("tool", "main.py") == ""
    assert code_lang("code", "Makefile") == ""
    assert code_lang("section", "main.py") is None


def test_text_block_layout() -> None:
    r = get_renderer("text")
    view = BlockView("section", "notes.md", "Install > Linux", "2023-05-07 09:00 UTC")
    assert r.block(view, "body") == (
        "[section · notes.md · 2023-05-07 09:00 UTC] Install > Linux\nbody")
    assert r.block(BlockView("turn", "", "", ""), "hi") == "[turn]\nhi"
    assert r.group("live") == "=== Live context ===\n"


def test_markdown_block_layout() -> None:
    r = get_renderer("markdown")
    prose = BlockView("section", "notes.md", "Intro", "")
    assert r.block(prose, "text") == "### section · notes.md — Intro\ntext"
    code = BlockView("code", "a.py", "", "", "py")
    assert r.block(code, "x = 1") == "### code · a.py\n```py\nx = 1\n```"
    assert r.group("memory") == "## Memory\n\n"


_field = st.text(max_size=40)


@settings(max_examples=200, deadline=None)
@given(_field, _field, _field, st.text(max_size=300), st.booleans())
def test_json_document_always_parses(label: str, source: str, title: str, body: str,
                                     with_now: bool) -> None:
    r = get_renderer("json")
    view = BlockView(clean_line(label, 40), clean_line(source, 60), clean_line(title, 80),
                     "2023-05-07 09:00 UTC" if with_now else "")
    body = normalize_body(body)
    blocks = [r.block(view, body), r.block(view, "second")]
    doc_text = (r.head("2023-05-07 09:00 UTC" if with_now else "") + blocks[0] + r.sep
                + blocks[1] + r.last_sep + r.foot())
    doc = json.loads(doc_text)
    assert [i["text"] for i in doc["items"]] == [body, "second"]
    assert doc["items"][0]["source"] == view.source
    assert ("now" in doc) == with_now


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=80), min_size=1, max_size=4), st.sampled_from(FORMATS))
def test_block_token_counts_add_up(bodies: list[str], fmt: str) -> None:
    """The layout property the packer relies on: counts of blocks add up exactly."""
    r = get_renderer(fmt)
    view = BlockView("section", "notes.md", "T", "2023-05-07 09:00 UTC", "py")
    parts = [r.head("2023-05-07 09:00 UTC"), r.group("memory")]
    parts += [r.block(view, normalize_body(b) or "x") + r.sep for b in bodies]
    parts[-1] = parts[-1][: len(parts[-1]) - len(r.sep)] + r.last_sep
    parts.append(r.foot())
    assert COUNTER.count("".join(parts)) == sum(COUNTER.count(p) for p in parts)
