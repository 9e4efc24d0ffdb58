"""Vault.turn_outcome_rows: what a turn's outcome reads of the chunks around a recall
hit that belong to the given turns, told apart in SQL. It must give exactly the rows of
``neighbours`` whose ``meta["turn"]`` is one of them (None: chunks with no turn, the work
before a session's first request), in the same order, with the meta's fields as the
rows hold them and a reply's text."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from engine.facade import ContextEngine
from tests.engine.recall.recall_helpers import ClaudeLines, text, tool_use, write_lines


def _session(path: Path) -> Path:
    c = ClaudeLines(session="sess-turns")
    lines = [c.assistant([text("Picking up where the last session stopped: " + "w " * 30)],
                         msg_id="m0"),  # before the first request: no turn
             c.tool_result("t0", "resumed")]
    for turn in range(4):
        lines += [c.user(f"request {turn}: fix the parser for case {turn}"),
                  c.assistant([text(f"Looking at case {turn}. " + "x " * 40),
                               tool_use(f"t{turn + 1}", "Bash", {"command": f"make t{turn}"})],
                              msg_id=f"m{turn + 1}"),
                  c.tool_result(f"t{turn + 1}", f"case {turn} ok\n" * 3, is_error=turn == 2),
                  c.assistant([text(f"Done with case {turn}.")], msg_id=f"n{turn + 1}")]
    return write_lines(path, lines)


def _reference(eng: ContextEngine, sid: int, lo: int, hi: int, turns: Sequence[object]
               ) -> list[tuple[object, ...]]:
    return [(r.meta.get("session"), r.meta.get("turn"), r.kind, bool(r.meta.get("failure")),
             r.meta.get("error_kind"), r.meta.get("tool"),
             r.text if r.kind == "turn_pair" else "")
            for r in eng.rt.vault.neighbours(sid, lo, hi)
            if any(r.meta.get("turn") == t for t in turns)]


def test_turn_outcome_rows_are_the_neighbours_of_those_turns(engine: ContextEngine,
                                                         tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    folder.mkdir()
    _session(folder / "sess-turns.jsonl")
    engine.sync([str(folder)])
    vault = engine.rt.vault
    (sid,) = {r[0] for r in vault._conn().execute("SELECT source_id FROM chunks")}
    rows = vault.neighbours(sid, -10, 1000)
    turns = {r.meta.get("turn") for r in rows}
    assert None in turns and len(turns - {None}) == 4  # both kinds are there
    for wanted in ([0], [2, 3], [None], [None, 1], [7], [1, 1]):
        for lo, hi in ((-10, 1000), (2, 6), (5, 5)):
            got = vault.turn_outcome_rows(sid, lo, hi, wanted)
            assert got == _reference(engine, sid, lo, hi, wanted), (wanted, lo, hi)
    assert vault.turn_outcome_rows(sid, -10, 1000, []) == []
    one = vault.turn_outcome_rows(sid, -10, 1000, [1])
    assert one and all(r[1] == 1 for r in one)
    failed = [r for r in vault.turn_outcome_rows(sid, -10, 1000, list(turns)) if r[3]]
    assert failed and failed[0][5] == "Bash"  # a failed call: its flag and tool read
    kinds = {r[2] for r in one}
    assert {"turn_pair", "tool"} <= kinds  # replies carry their text, calls none
    assert all((r[6] != "") == (r[2] == "turn_pair") for r in one)
