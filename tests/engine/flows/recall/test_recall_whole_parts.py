"""Which part a shown call carries, and which of its lines (issue 31 item 5): the part
chosen among all the call's parts, read from the vault for the calls shown
(``recall.part_from`` "call"), by the weight of the query terms it holds that the call
lacks; its lines where those terms fall thickest (``recall.part_lines_by`` "weight").
Real vault and chunker; the engine fixture's embedder."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from engine.errors import ConfigError
from engine.facade import ContextEngine
from engine.flows.recall.parts import (
    call_of,
    line_weigher,
    shown_with_parts,
    term_weights,
    whole_parts,
)
from engine.flows.search.ranking import Ranked, rank_query
from engine.recall.config import RecallConfig
from engine.recall.present import densest, part_lines
from engine.retrieval.lexicon import STOPWORDS
from engine.retrieval.query import analyze_query
from engine.store.vault.call_parts import call_parts
from engine.store.vault.core import ChunkRow
from engine.tokens import TokenCounter
from tests.engine.recall.recall_helpers import (
    ClaudeLines,
    call_lines,
    synced,
    text,
    tool_use,
    write_lines,
)

RARE = "zephyrquartz"  # a word only one line of one call's output holds
COUNTER = TokenCounter.shared()


def _weights(query: str) -> dict[str, float]:
    return dict.fromkeys(analyze_query(query).terms, 1.0)


# --- the lines: where the question's terms fall thickest --------------------------------

def _limitations_doc() -> str:
    """A file read whole (a part of a Read's output): the answer (the first limitation's
    title) holds none of the question's words; the lines around it do, and one line far
    below holds more of the question's words than any line near it."""
    lines = ["1→# Known Limitations", "2→", "3→## Git", "4→### Amending Commits with -m Flag"]
    lines += [f"{i}→lorem ipsum filler sentence number {i}" for i in range(5, 51)]
    lines.append("51→However, the git trailer limitation is restored by the git hook")
    return "Tool Read (output): " + "\n".join(lines)


def test_a_parts_lines_are_where_the_weighed_terms_fall_thickest() -> None:
    query = "what was the first git limitation in the known limitations doc"
    part = _limitations_doc()
    weigher = line_weigher(_weights(query), STOPWORDS)
    got = part_lines(part, query, COUNTER, 40, "Tool Read: docs/limitations.md", weigher)
    assert "Amending Commits" in got and COUNTER.count(got) <= 40
    # by the query's words alone (today's "words"): the line that holds most of them,
    # far from the answer
    old = part_lines(part, query, COUNTER, 40, "Tool Read: docs/limitations.md")
    assert "trailer limitation" in old and "Amending Commits" not in old


def test_the_terms_its_call_already_shows_weigh_nothing_when_the_part_holds_others() -> None:
    """The call's own text shows the manifest's name line ("services"); the build line is
    what it lacks."""
    manifest = ["{", '  "name": "@repo/services",', '  "version": "0.0.0",']
    manifest += [f'    "./dist/file{i}.js": "./dist/es/file{i}.js",' for i in range(40)]
    manifest += ['  "scripts": {', '    "build": "bunchee",', '    "lint": "eslint src/"', "  }"]
    part = "Tool shell (output): " + "\n".join(manifest)
    known = 'Tool shell: cat packages/services/package.json\nResult: {\n  "name": "@repo/services",'
    query = "what did the services manifest show it builds with"
    weights = {**_weights(query), "servic": 3.0}  # services outweighs build
    got = part_lines(part, query, COUNTER, 30, known, line_weigher(weights, STOPWORDS))
    assert '"build": "bunchee"' in got
    # with no call text (nothing known), the heavier term leads
    got = part_lines(part, query, COUNTER, 30, "", line_weigher(weights, STOPWORDS))
    assert '"@repo/services"' in got


def test_densest_is_none_when_no_line_weighs_anything_and_keeps_the_budget() -> None:
    assert densest("a\nb\nc", lambda line: 0.0, COUNTER, 10) is None
    long = "\n".join(f"line {i} " + "word " * 30 for i in range(20))
    got = densest(long, lambda line: 1.0 if line.startswith("line 7 ") else 0.0, COUNTER, 25)
    assert got is not None and got.startswith("line 7 ") and COUNTER.count(got) <= 25


# --- the part: among all the call's parts, read from the vault --------------------------

def _long_output_session(engine: ContextEngine, tmp_path: Path) -> None:
    """Two test runs whose 300-line outputs are stored in parts; the first run's line 60
    holds the rare word (beyond the head the call's chunk shows)."""
    claude = ClaudeLines()
    first = [f"PASS tests/test_export.py::test_case_{i} exporter handles rows" for i in range(300)]
    first[60] = f"WARN the {RARE} exporter dropped a column"
    second = [f"PASS tests/test_import.py::test_case_{i} importer reads rows" for i in range(300)]
    synced(engine, tmp_path, [
        claude.user("run the exporter tests"),
        *call_lines(claude, "t1", "Bash", {"command": "pytest -v tests/test_export.py"},
                    "\n".join(first), "m1"),
        *call_lines(claude, "t2", "Bash", {"command": "pytest -v tests/test_import.py"},
                    "\n".join(second), "m2"),
        claude.assistant([text("The exporter and importer tests pass.")], msg_id="m3"),
    ])


def _calls(engine: ContextEngine) -> dict[str, tuple[ChunkRow, list[ChunkRow]]]:
    """Each call's tool_use id -> (its chunk, its parts in order), read from the vault."""
    rows = engine.rt.vault.session_chunks(["sess-1"], 10_000)
    out = {}
    for row in rows:
        key = row.meta.get("key")
        if row.kind == "tool" and not row.meta.get("part") and isinstance(key, str):
            out[key.rpartition(":")[2]] = (row, [r for r in rows if call_of(r) == key])
    return out


def test_call_parts_reads_each_calls_own_parts_in_order(engine: ContextEngine,
                                                        tmp_path: Path) -> None:
    _long_output_session(engine, tmp_path)
    calls = _calls(engine)
    (one, one_parts), (two, two_parts) = calls["t1"], calls["t2"]
    assert len(one_parts) > 1 and len(two_parts) > 1
    got = call_parts(engine.rt.vault, [(c.source_id, c.ordinal, c.meta["key"]) for c in (one, two)],
                     64)
    assert [r.id for r in got[one.meta["key"]]] == [r.id for r in one_parts]
    assert [r.id for r in got[two.meta["key"]]] == [r.id for r in two_parts]
    assert call_parts(engine.rt.vault, [(one.source_id, one.ordinal, one.meta["key"])], 0) == {}


def test_call_parts_reads_the_input_parts_an_earlier_sync_stored(engine: ContextEngine,
                                                                 tmp_path: Path) -> None:
    """A Write's input, read by a sync while the call waited for its result, is stored in
    that sync's segment; the call, with its result, in the next one: its parts are read
    from the file's every segment (before: from the call's own source only, none)."""
    claude = ClaudeLines()
    content = "\n".join(f"line {i} of the new module" for i in range(400))
    folder = tmp_path / "sessions"
    folder.mkdir()
    path = write_lines(folder / "s.jsonl", [
        claude.user("write the module"),
        claude.assistant([tool_use("t1", "Write", {"file_path": "/x/a.py", "content": content})],
                         msg_id="m1"),
    ])
    engine.sync([str(folder)])
    with path.open("a", encoding="utf-8") as fh:
        fh.write(claude.tool_result("t1", "File written") + "\n")
        fh.write(claude.assistant([text("Done.")], msg_id="m2") + "\n")
    engine.sync([str(folder)])
    call, parts = _calls(engine)["t1"]
    assert len(parts) > 1 and {p.meta["part"] for p in parts} == {"input"}
    assert {p.source_id for p in parts} != {call.source_id}  # another segment
    got = call_parts(engine.rt.vault, [(call.source_id, call.ordinal, call.meta["key"])], 64)
    assert [r.id for r in got[call.meta["key"]]] == [r.id for r in parts]


def test_a_shown_call_carries_its_answering_part_even_when_no_lane_found_it(
        engine: ContextEngine, tmp_path: Path) -> None:
    """Among the candidates, only a part of the call that does not hold the rare word (a
    sibling full of the call's own words): today's choice shows that sibling; read from
    the vault, the part holding the words the call lacks is shown."""
    _long_output_session(engine, tmp_path)
    call, parts = _calls(engine)["t1"]
    answer = next(p for p in parts if RARE in p.text)
    sibling = next(p for p in parts if RARE not in p.text)
    assert RARE not in call.text
    query = f"which {RARE} warning did the exporter print"
    res, _, _ = rank_query(engine.rt, query, 10, expand_session=True)
    res = dataclasses.replace(res, rows={**res.rows, call.id: call, sibling.id: sibling})
    ranked: list[Ranked] = [(call.id, 1.0, {}), (sibling.id, 0.5, {})]
    shown, today = shown_with_parts(ranked, res.rows, 1, res.analysis.terms, STOPWORDS)
    assert [c for c, _, _ in shown] == [call.id] and today == {call.id: sibling.id}
    weights = term_weights(engine.rt, res.analysis)
    assert weights[RARE] > weights["exporter"]  # the rare word weighs more
    chosen, rows = whole_parts(engine.rt, res, ranked, shown, weights)
    assert chosen == {call.id: answer.id} and rows[answer.id].text == answer.text


def test_a_part_no_lane_found_joins_its_call_only_with_a_term_the_call_lacks(
        engine: ContextEngine, tmp_path: Path) -> None:
    """The call's own lines hold every query term: a part read from the vault would only
    take room from them in the excerpt."""
    _long_output_session(engine, tmp_path)
    call, _ = _calls(engine)["t2"]
    res, _, _ = rank_query(engine.rt, "importer tests", 10, expand_session=True)
    res = dataclasses.replace(res, rows={**res.rows, call.id: call})
    ranked: list[Ranked] = [(call.id, 1.0, {})]
    chosen, _ = whole_parts(engine.rt, res, ranked, ranked, term_weights(engine.rt, res.analysis))
    assert chosen == {}


@pytest.mark.parametrize("budget", [None, 2000])
def test_recall_shows_the_answering_line_within_the_budget(engine: ContextEngine, tmp_path: Path,
                                                           budget: int | None) -> None:
    _long_output_session(engine, tmp_path)
    engine.rt.cfg = dataclasses.replace(engine.rt.cfg, recall=dataclasses.replace(
        engine.rt.cfg.recall, part_from="call", part_lines_by="weight"))
    res = engine.recall(f"which {RARE} warning did the exporter print", k=8, budget=budget)
    hits = res.hits or ()
    call = next(h for h in hits if h.kind == "tool" and not h.meta.get("part"))
    assert len(call.chunks) == 2 and RARE in call.text and RARE in call.excerpt
    if budget is not None:
        assert res.total_tokens <= budget
    else:
        assert COUNTER.count(call.excerpt) <= engine.rt.cfg.recall.hit_excerpt_tokens


def test_the_part_settings_are_checked() -> None:
    bad: dict[str, Any] = {"part_from": "all", "part_lines_by": "idf", "part_cosine": 2.0}
    for key, value in bad.items():
        with pytest.raises(ConfigError) as err:
            dataclasses.replace(RecallConfig(), **{key: value})
        assert f"recall.{key}" in str(err.value)


def test_recall_shows_the_answering_line_of_a_file_read_whole(engine: ContextEngine,
                                                             tmp_path: Path) -> None:
    """A doc read whole (a part of the Read's output): the answer, the first limitation's
    title, holds none of the question's words, the two headings above it hold them
    thickest; one line further down holds more of them than either heading. With the
    defaults (``part_lines_by`` "weight") the call's hit shows the title; by the query's
    words alone (main before it) it showed the line further down."""
    doc = [f"intro {i}" for i in range(15)]
    doc += ["## Known Limitations", "### Git limitations", "#### Amending Commits with -m Flag"]
    doc += [f"filler line {i} of the setup notes, kept as written" for i in range(14)]
    doc.append("However, the git trailer limitation is a known issue restored by the git hook")
    doc += [f"outro line {i} of the closing notes, as written" for i in range(8)]
    claude = ClaudeLines()
    synced(engine, tmp_path, [
        claude.user("review the readme"),
        *call_lines(claude, "t1", "Read", {"file_path": "/repo/notes/caveats.md"},
                    "\n".join(doc), "m1"),
        claude.assistant([text("The readme is fine.")], msg_id="m2"),
    ])
    call, parts = _calls(engine)["t1"]
    part = next(p for p in parts if "Amending" in p.text)
    assert "trailer limitation" in part.text  # the title and the line below, one part
    assert "Amending" not in call.text and "trailer" not in call.text  # only the part
    hits = engine.recall("what was the first git limitation in the known limitations doc",
                         k=5).hits or ()
    shown = next(h for h in hits if h.chunk_id == call.id)
    assert shown.chunks == (call.id, part.id)
    assert "Amending Commits with -m Flag" in shown.text
