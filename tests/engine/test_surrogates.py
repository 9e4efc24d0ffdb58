"""Extractive surrogates: caps, redundancy control, order, nesting, speed."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import ConfigError
from engine.ingest.config import SurrogateConfig
from engine.surrogates import TIERS, make_surrogates, split_units
from engine.tokens import TokenCounter

COUNTER = TokenCounter.shared()
CFG = SurrogateConfig()
DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"

PROSE = """# Tide pools

Tide pools form on rocky shores when the sea retreats at low tide. Small animals such as
anemones, crabs and snails live in tide pools and survive the heat of the day.
The water in tide pools warms quickly, e.g. on a sunny afternoon, and its salt level rises.

## Visiting

Visitors should step only on bare rock. Turning stones over exposes the animals to the sun.
Photographs are fine, but collecting animals from tide pools is forbidden in most parks.
"""


def sentences_of(summary: str) -> list[str]:
    return [u.text for u in split_units(summary)]


def test_tiers_are_within_caps_and_nested() -> None:
    out = make_surrogates(PROSE * 3, "Tide pools", CFG, COUNTER)
    assert list(out) == list(TIERS)
    caps = {"full": CFG.full_tokens, "gist": CFG.gist_tokens, "micro": CFG.micro_tokens}
    for tier, cap in caps.items():
        assert 0 < COUNTER.count(out[tier]) <= cap
    for small, big in (("micro", "gist"), ("gist", "full")):
        for sentence in sentences_of(out[small]):
            assert sentence in out[big]


def test_no_redundant_duplicates() -> None:
    out = make_surrogates(PROSE * 4, "Tide pools", CFG, COUNTER)
    for tier in TIERS:
        found = sentences_of(out[tier])
        assert len(found) == len(set(found)), tier
    assert out["full"].count("Visitors should step only on bare rock.") == 1


def test_near_duplicates_are_skipped_by_jaccard() -> None:
    text = ("The cache stores embeddings by content hash for reuse.\n\n"
            "The cache stores the embeddings by their content hash for reuse.\n\n"
            "Rotation keeps stored vectors useless without the key.")
    strict = make_surrogates(text, "", SurrogateConfig(redundancy=0.6), COUNTER)["full"]
    loose = make_surrogates(text, "", SurrogateConfig(redundancy=1.0), COUNTER)["full"]
    assert strict.count("The cache stores") == 1
    assert loose.count("The cache stores") == 2


def test_sentences_keep_document_order() -> None:
    out = make_surrogates(PROSE, "Tide pools", CFG, COUNTER)
    flat = re.sub(r"\s+", " ", PROSE)
    positions = [flat.index(s) for s in sentences_of(out["full"])]
    assert positions == sorted(positions)


def test_abbreviations_do_not_split_sentences() -> None:
    units = [u.text for u in split_units("Warm water, e.g. in summer, hurts them. Mr. Smith agrees.")]
    assert units == ["Warm water, e.g. in summer, hurts them.", "Mr. Smith agrees."]


def test_title_terms_attract_the_micro_summary() -> None:
    text = ("Lanterns were hung along the harbour wall every evening.\n\n"
            "The ferry timetable changes in October and again in March.\n\n"
            "Children fed the gulls near the lighthouse steps after school.")
    micro = make_surrogates(text, "Ferry timetable", CFG, COUNTER)["micro"]
    assert micro.startswith("The ferry timetable")


def test_chat_turns_keep_their_speaker() -> None:
    chat = ("Ana: I moved to Lisbon last spring. The light there is amazing!\n"
            "Ben: How is the job going?\n"
            "Ana: The job is great. I lead the data team now.\n"
            "Ben: Congrats on leading the data team!")
    out = make_surrogates(chat, "", CFG, COUNTER)
    for line in out["full"].splitlines():
        assert line.startswith(("Ana: ", "Ben: "))
    assert "Ana: I moved to Lisbon last spring. The light there is amazing!" in out["full"]


def test_code_is_summarised_by_lines() -> None:
    code = (
        "import os\n\ndef load_config(path):\n    with open(path) as fh:\n"
        "        return fh.read()\n\nclass Store:\n    def get(self, key):\n"
        "        return self.data[key]\n}"
    )
    out = make_surrogates(code, "config loader", CFG, COUNTER)
    lines = out["full"].splitlines()
    assert lines and all(line in code.splitlines() for line in lines)
    assert "def load_config(path):" in out["gist"]


def test_one_huge_sentence_is_cut_at_a_token_boundary() -> None:
    text = "日本語😀" * 3000  # one unit, no spaces, no sentence end
    out = make_surrogates(text, "", CFG, COUNTER)
    assert 0 < COUNTER.count(out["micro"]) <= CFG.micro_tokens
    assert out["micro"].endswith("…") and text.startswith(out["micro"][:-1])


@pytest.mark.parametrize("text", ["", "   \n\n\t ", "\n"])
def test_empty_text_gives_empty_tiers(text: str) -> None:
    assert make_surrogates(text, "t", CFG, COUNTER) == {"full": "", "gist": "", "micro": ""}


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=3000), st.text(max_size=30),
       st.sampled_from([SurrogateConfig(), SurrogateConfig(40, 12, 3, 0.3)]))
def test_caps_hold_for_any_text(text: str, title: str, cfg: SurrogateConfig) -> None:
    out = make_surrogates(text, title, cfg, COUNTER)
    assert COUNTER.count(out["full"]) <= cfg.full_tokens
    assert COUNTER.count(out["gist"]) <= cfg.gist_tokens
    assert COUNTER.count(out["micro"]) <= cfg.micro_tokens
    assert out == make_surrogates(text, title, cfg, COUNTER)  # deterministic


def test_fifty_kilobytes_is_fast() -> None:
    text = (PROSE + "\n".join(f"Line {i} mentions tide pool fact number {i}." for i in range(40)))
    text = (text * (50_000 // len(text) + 1))[:50_000]
    make_surrogates(text, "Tide pools", CFG, COUNTER)  # warm up
    runs = []
    for _ in range(3):
        start = time.perf_counter()
        out = make_surrogates(text, "Tide pools", CFG, COUNTER)
        runs.append(time.perf_counter() - start)
    assert COUNTER.count(out["full"]) <= CFG.full_tokens
    assert min(runs) < 0.25  # target 50 ms; generous against slow CI machines


def test_real_conversation_from_locomo() -> None:
    path = DATA / "locomo" / "locomo10.json"
    if not path.is_file():
        pytest.skip("shared LoCoMo data not present")
    conversation = json.loads(path.read_text(encoding="utf-8"))[0]["conversation"]
    turns = conversation["session_1"]
    text = "\n".join(f"{t['speaker']}: {t['text']}" for t in turns)
    out = make_surrogates(text, "", CFG, COUNTER)
    speakers = {t["speaker"] for t in turns}
    for tier in TIERS:
        assert 0 < COUNTER.count(out[tier]) <= getattr(CFG, f"{tier}_tokens")
        for line in out[tier].splitlines():
            assert line.split(":", 1)[0] in speakers
            first_sentence = re.split(r"(?<=[.!?]) ", line.split(": ", 1)[1])[0]
            assert first_sentence in text


@pytest.mark.parametrize("kwargs", [
    {"full_tokens": 0}, {"gist_tokens": 500}, {"micro_tokens": 100, "gist_tokens": 50},
    {"redundancy": 0.0}, {"redundancy": 1.5}, {"full_tokens": True},
])
def test_config_is_validated(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        SurrogateConfig(**kwargs)  # type: ignore[arg-type]
