"""bench.recall_quality: reads the question file it is given (``--questions``), and its
``today`` method ranks as main did before issue 31: none of
issue 31's turn roles (engine.retrieval.turn_roles) may reach it, or the run's "ahead of
today" comparison credits today with them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench import recall_quality as rq
from engine import Config


def test_today_ranks_without_the_turn_roles() -> None:
    eng = SimpleNamespace(rt=SimpleNamespace(cfg=Config()))  # only its settings are read
    roles = rq.today_settings(eng)["recall"]["turn_roles"]
    assert not roles.on
    assert roles.repeat_penalty == roles.ask_weight == 0.0
    assert dataclasses.replace(roles, named_bonus=0.05).on  # the product's default is on


def _question(qid: str, session: str, split: str) -> dict[str, object]:
    return {"id": qid, "session": session, "kind": "turn", "q": "what came of it",
            "evidence": ["done"], "paraphrased": True, "split": split}


def test_questions_come_from_the_file_given(tmp_path: Path) -> None:
    """``--questions``: another file of the same schema (set B) is read, not the default
    one; its split check holds."""
    infos = {"sess-a": "id-a", "sess-b": "id-b"}  # sess-a is in dev, sess-b in test
    other = tmp_path / "set_b.json"
    other.write_text(json.dumps({"about": {}, "questions": [
        _question("b1-001", "sess-a", "dev"), _question("b1-002", "sess-b", "test")]}))
    asked = rq.load_questions("dev", infos, other)
    assert [(q["id"], q["sid"]) for q in asked] == [("b1-001", "id-a")]
    other.write_text(json.dumps({"about": {}, "questions": [
        _question("b1-003", "sess-b", "dev")]}))
    with pytest.raises(ValueError, match="b1-003: split dev is not split_of its session"):
        rq.load_questions("dev", infos, other)


def test_a_missing_question_file_is_a_clear_error(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere.json"
    assert rq.main(["--questions", str(missing), "--store-cache", str(tmp_path)]) == 2
    assert f"--questions: no file {missing}" in capsys.readouterr().err
