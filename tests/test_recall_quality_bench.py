"""bench.recall_quality's ``today`` method ranks as main did before issue 31: none of
issue 31's turn roles (engine.retrieval.turn_roles) may reach it, or the run's "ahead of
today" comparison credits today with them."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from bench import recall_quality as rq
from engine import Config


def test_today_ranks_without_the_turn_roles() -> None:
    eng = SimpleNamespace(rt=SimpleNamespace(cfg=Config()))  # only its settings are read
    roles = rq.today_settings(eng)["recall"]["turn_roles"]
    assert not roles.on
    assert roles.repeat_penalty == 0.0
    assert dataclasses.replace(roles, cause_bonus=0.03).on  # the product's default is on
