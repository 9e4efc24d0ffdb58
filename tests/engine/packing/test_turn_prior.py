"""TurnPrior: turns weighed by who spoke them against who the query names."""

from __future__ import annotations

import pytest

from engine.errors import ConfigError
from engine.packing.config import PackingConfig
from engine.packing.turn_prior import TurnPrior


def prior(entities: list[str], speakers: list[str | None]) -> TurnPrior:
    return TurnPrior.for_query(entities, speakers, other_speaker=0.85, other_neighbour=0.7,
                               question=0.95)


def test_a_named_speakers_statement_keeps_its_score() -> None:
    p = prior(["Ann"], ["Ann Lee", "Bo", None])
    assert p.named == frozenset({"Ann Lee"})
    assert p.weight("Ann Lee", "Ann Lee: we moved in May.") == 1.0


def test_the_other_speaker_weighs_less_and_less_again_as_a_neighbour() -> None:
    p = prior(["Ann's"], ["Ann", "Bo"])  # a possessive still names her
    assert p.weight("Bo", "Bo: nice.") == pytest.approx(0.85)
    assert p.weight("Bo", "Bo: nice.", neighbour=True) == pytest.approx(0.7)
    assert p.weight(None, "a turn without a speaker") == pytest.approx(0.85)


def test_a_question_weighs_less_whoever_asks_it() -> None:
    p = prior(["Ann"], ["Ann", "Bo"])
    assert p.weight("Ann", "Ann: how was the trip?") == pytest.approx(0.95)
    assert p.weight("Bo", "Bo: and you?", neighbour=True) == pytest.approx(0.7 * 0.95)


def test_a_query_naming_no_speaker_leaves_speakers_alone() -> None:
    for entities in ([], ["Lisbon"], ["ann"]):
        p = prior(entities, ["Anna", "Bo"])
        assert not p.named
        assert p.weight("Bo", "Bo: nice.") == 1.0


def test_both_named_speakers_keep_their_score() -> None:
    p = prior(["Ann", "Bo"], ["Ann", "Bo", "Cy"])
    assert p.weight("Ann", "x") == p.weight("Bo", "y") == 1.0 and p.weight("Cy", "z") < 1.0


def test_factors_outside_zero_one_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="speaker_other"):
        PackingConfig(speaker_other=1.5)
    with pytest.raises(ConfigError, match="question_turn"):
        PackingConfig(question_turn=-0.1)
    with pytest.raises(ConfigError, match="whole_kinds"):
        PackingConfig(whole_kinds="turn")  # type: ignore[arg-type]
