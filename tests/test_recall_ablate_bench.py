"""bench.recall_ablate: its "all off" row turns off every knob it ablates one by one,
its folds keep a session's questions together, a question without a knob's cue is not
asked again (only those a knob can change), and its paired delta is default minus off."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

from bench import recall_ablate as ra
from bench import recall_quality as rq
from engine import Config


def _engine() -> Any:
    return SimpleNamespace(rt=SimpleNamespace(cfg=Config()))  # only its settings are read


def _applied(eng: Any, settings: ra.Settings) -> Any:
    cfg = eng.rt.cfg
    return dataclasses.replace(
        cfg, recall=dataclasses.replace(cfg.recall, **settings.get("recall", {})),
        rerank=dataclasses.replace(cfg.rerank, **settings.get("rerank", {})))


def test_each_knob_moves_its_own_setting_from_on_to_off() -> None:
    eng = _engine()
    for knob in ra.KNOBS:
        assert knob.read(eng.rt.cfg) in (knob.on, knob.off), knob.name  # the product's
        for value in (knob.on, knob.off):
            assert knob.read(_applied(eng, knob.make(eng, value))) == value, knob.name
        assert knob.grid[0] == knob.off and knob.on in knob.grid, knob.name


def test_all_off_turns_off_every_knob() -> None:
    eng = _engine()
    off = _applied(eng, ra.all_off(eng))
    for knob in ra.KNOBS:
        if knob.name == "rerank.session_expand_words":
            assert off.rerank.session_expand == 1  # no later session to add chunks of
        else:
            assert knob.read(off) == knob.off, knob.name
    assert off.recall.turn_roles.output_bonus == off.recall.turn_roles.call_bonus == 0.0
    assert rq.today_settings(eng)["rerank"]["session_expand"] == 1


def test_folds_keep_sessions_whole_and_even() -> None:
    qs = [{"id": f"q{i}", "session": f"s{i % 7}"} for i in range(40)]
    folds = ra.folds_of(qs, 5)
    assert sorted(i for f in folds for i in f) == list(range(40))
    for f in folds:
        sessions = {qs[i]["session"] for i in f}
        assert all(qs[j]["session"] not in sessions for g in folds if g is not f for j in g)
    assert max(map(len, folds)) - min(map(len, folds)) <= 6  # one session's questions


def test_only_questions_with_the_cue_are_asked_again() -> None:
    eng = _engine()
    knobs = {k.name: k for k in ra.KNOBS}
    cause = ra.cue_of(knobs["recall.turn_roles.cause_bonus"], eng, set())
    shown = ra.cue_of(knobs["recall.turn_roles.shown_bonus"], eng, set())
    named = ra.cue_of(knobs["recall.turn_roles.named_bonus"], eng, {"WebSearch"})
    assert cause is not None and shown is not None and named is not None
    assert cause("why did the lint step fail") and not cause("which file did we edit")
    assert shown("what were the commits on that branch") and not shown("what was the commit")
    assert named("what did I search online") and not named("how did the build end")
    call = ra.cue_of(knobs["recall.turn_roles.call_bonus"], eng, set())
    assert call is not None
    assert call("how did we check that it still builds") and not call("what did we add")
    output = ra.cue_of(knobs["recall.turn_roles.output_bonus"], eng, set())
    assert output is not None
    assert output("what did the test run report") and not output("where is the output dir")
    ask = ra.cue_of(knobs["recall.turn_roles.ask_weight"], eng, set())
    assert ask is not None
    assert ask("after the rename, why did lint fail?") and not ask("why did lint fail?")
    assert ra.cue_of(knobs["recall.adapt"], eng, set()) is None  # every question


def test_paired_delta_is_default_minus_off() -> None:
    qs = [{"id": f"q{i}", "session": f"s{i}"} for i in range(4)]
    default = {"q0": (1, 1), "q1": (3, None), "q2": (None, None), "q3": (7, 2)}
    off = {"q0": (1, 1), "q1": (None, None), "q2": (None, None), "q3": (4, None)}
    assert ra.paired(qs, default, off, "hit@5", 200)[0] == 0.0  # q1 gained, q3 lost
    assert ra.paired(qs, default, off, "view", 200)[0] == 0.25
    assert ra.moved(qs, default, off, "hit@5") == (["q1"], ["q3"])
    mean, lo, hi = ra.paired(qs, default, off, "hit@10", 500)
    assert mean == 0.25 and lo <= mean <= hi
