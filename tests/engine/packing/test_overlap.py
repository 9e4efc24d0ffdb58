"""Neighbouring chunks' overlap is sent once: the lower-ranked piece is trimmed or dropped."""

from __future__ import annotations

from engine.packing.candidates import PackCandidate
from engine.packing.overlap import trim_overlaps

SOURCE = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron"


def _cand(key: str, start: int, end: int, score: float, source: str = "doc") -> PackCandidate:
    return PackCandidate(key=key, section="memory", kind="section", source=source,
                         title="t", time=None, score=score, text=SOURCE[start:end])


def test_the_lower_ranked_piece_loses_the_head_it_shares() -> None:
    a, b = _cand("a", 0, 40, 1.0), _cand("b", 28, 70, 0.5)
    out = trim_overlaps([b, a], {"a": (0, 40), "b": (28, 70)})
    assert [c.key for c in out] == ["b", "a"]  # order kept
    joined = out[1].text + out[0].text
    assert out[0].text.startswith("theta") and joined.count("zeta") == 1
    assert joined.replace(" ", "") == SOURCE[:70].replace(" ", "")


def test_the_lower_ranked_piece_loses_the_tail_it_shares() -> None:
    a, b = _cand("a", 28, 70, 1.0), _cand("b", 0, 40, 0.5)
    out = {c.key: c.text for c in trim_overlaps([a, b], {"a": (28, 70), "b": (0, 40)})}
    assert out["a"] == SOURCE[28:70]
    assert "zeta" not in out["b"] and out["b"].startswith("alpha")


def test_a_piece_inside_a_better_one_is_dropped_and_others_are_untouched() -> None:
    big, inner = _cand("big", 0, 70, 1.0), _cand("inner", 10, 30, 0.4)
    other = _cand("other", 10, 30, 0.3, source="elsewhere")
    nospan = _cand("nospan", 10, 30, 0.2)
    out = trim_overlaps([big, inner, other, nospan], {"big": (0, 70), "inner": (10, 30),
                                                      "other": (10, 30)})
    assert [c.key for c in out] == ["big", "other", "nospan"]
    assert out[1].text == SOURCE[10:30] and out[2].text == SOURCE[10:30]


def test_disjoint_pieces_are_kept_whole() -> None:
    a, b = _cand("a", 0, 20, 1.0), _cand("b", 40, 60, 0.9)
    out = trim_overlaps([a, b], {"a": (0, 20), "b": (40, 60)})
    assert [c.text for c in out] == [SOURCE[0:20], SOURCE[40:60]]
