"""Recall's learned reader in a real store (fake embedder): fitted after a sync, kept
encrypted in the vault, gone with the sessions it came from, refitted by a repair, off
by config, and reported by status."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from engine.api.status import AdaptStatus
from engine.facade import ContextEngine
from engine.flows.recall.adapt import QueryAdapter, learned, query_adapter
from engine.flows.search.plan import adapted, plan_query
from engine.store.vault import adapt as adapt_rows
from tests.engine.recall.recall_helpers import ClaudeLines, text, tool_use, write_lines

CANARY = "zqxjcanaryword"  # a word of the user's requests: the term table learns it
TOPICS = [("parser", "tokenizer quotes escaping"), ("deploy", "docker compose registry"),
          ("flaky", "retry backoff timeout"), ("login", "session cookie oauth")]
FIT = """
[recall.adapt_fit]
min_pairs = 20
holdout = 0.0
steps = 30
batch = 32
terms_min_count = 2
"""


def write_sessions(folder: Path, n: int, start: int = 0) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for s in range(start, start + n):
        b = ClaudeLines(session=f"sess-{s:03d}")
        lines = []
        for t in range(4):
            topic, words = TOPICS[(s + t) % len(TOPICS)]
            lines.append(b.user(f"please look at the {topic} problem {CANARY} number {t}"))
            call = f"call-{s}-{t}"
            lines.append(b.assistant([text(f"Checking {words} first."),
                                      tool_use(call, "Bash", {"command": f"grep {topic} ."})],
                                     msg_id=f"m-{s}-{t}-a"))
            lines.append(b.tool_result(call, f"src/{topic}.py: {words}", is_error=t == 1))
            lines.append(b.assistant([text(f"Fixed the {topic}: {words} now handled.")],
                                     msg_id=f"m-{s}-{t}-b"))
        out.append(write_lines(folder / f"s{s:03d}.jsonl", lines))
    return out


@pytest.fixture
def configured(data_dir: Path) -> Path:
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "config.toml").write_text(FIT, encoding="utf-8")
    return data_dir


@pytest.fixture
def eng(configured: Path) -> Iterator[ContextEngine]:
    e = ContextEngine.open(configured)
    try:
        yield e
    finally:
        e.close()


def adapt_of(e: ContextEngine) -> AdaptStatus:
    """The engine's status of recall's learned reader (reported whenever recall is on)."""
    adapt = e.status().adapt
    assert adapt is not None
    return adapt


def synced(e: ContextEngine, folder: Path) -> str:
    """Sync ``folder`` and wait for the fit it queues; the fit's job id."""
    result = e.sync([str(folder)])
    if result.adapt_job:
        assert e.wait(result.adapt_job, timeout=60).state == "done"
    return result.adapt_job


def test_a_sync_fits_it_and_status_says_on_what(eng: ContextEngine, tmp_path: Path) -> None:
    assert adapt_of(eng).fitted is None
    assert synced(eng, write_sessions(tmp_path / "t", 12)[0].parent)
    a = eng.status().adapt
    assert a is not None and a.enabled and a.fitted is not None
    assert a.sessions == 12 and a.pairs > 20 and a.map and a.terms > 0
    assert eng.status().to_dict()["adapt"]["pairs"] == a.pairs  # on the wire too
    adapter = query_adapter(eng.rt, ("parser",))
    assert adapter is not None and adapter.vector_map is not None
    hits = eng.recall("what went wrong with the parser", k=5).hits
    assert hits  # recall runs through the adapted plan


def test_a_small_sync_after_does_not_refit(eng: ContextEngine, tmp_path: Path) -> None:
    folder = tmp_path / "t"
    write_sessions(folder, 12)
    assert synced(eng, folder)
    write_sessions(folder, 1, start=12)  # under refit_growth (25%) more replies
    assert synced(eng, folder) == ""
    write_sessions(folder, 6, start=13)
    assert synced(eng, folder)
    assert adapt_of(eng).sessions == 19


def test_deleting_a_session_removes_what_was_learned_from_it(
        eng: ContextEngine, tmp_path: Path) -> None:
    files = write_sessions(tmp_path / "t", 12)
    synced(eng, files[0].parent)
    texts = adapt_rows.text_count(eng.rt.vault)
    assert texts > 0
    fitted = adapt_of(eng).fitted
    assert fitted is not None
    with eng.rt.vault.write() as c:  # a delete below the engine's own (a folder forgotten)
        c.execute("DELETE FROM sources WHERE uri LIKE ?", (f"transcript:{files[1]}#%",))
    assert adapt_of(eng).fitted is None  # the model went with the session
    assert learned(eng.rt) is None
    assert 0 < adapt_rows.text_count(eng.rt.vault) < texts  # its texts' vectors too
    assert synced(eng, files[0].parent)  # the next sync fits it again, without it
    assert adapt_of(eng).sessions == 11
    left = adapt_rows.text_count(eng.rt.vault)
    eng.delete(str(files[0]))  # the engine's delete queues a fit without it at once
    assert adapt_rows.text_count(eng.rt.vault) < left
    assert eng._recall.adapt_job and eng.wait(eng._recall.adapt_job, timeout=60).state == "done"
    a = adapt_of(eng)
    assert a.fitted is not None and a.fitted > fitted and a.sessions == 10


def test_it_survives_a_reopen_encrypted(configured: Path, tmp_path: Path) -> None:
    with ContextEngine.open(configured) as e:
        synced(e, write_sessions(tmp_path / "t", 12)[0].parent)
        before = learned(e.rt)
        assert before is not None and CANARY in before.terms
        fitted = adapt_of(e).fitted
    for path in configured.rglob("*"):
        if path.is_file():
            assert CANARY.encode() not in path.read_bytes(), path
    with ContextEngine.open(configured) as e:
        after = learned(e.rt)
        assert adapt_of(e).fitted == fitted
        assert after is not None and after.matrix is not None and before.matrix is not None
        assert after.matrix.tobytes() == before.matrix.tobytes()
        assert after.terms == before.terms


def test_repair_fits_it_again(eng: ContextEngine, tmp_path: Path) -> None:
    synced(eng, write_sessions(tmp_path / "t", 12)[0].parent)
    fitted = adapt_of(eng).fitted
    assert fitted is not None
    eng.repair()
    job = eng._recall.adapt_job
    assert job and eng.wait(job, timeout=60).state == "done"
    refitted = adapt_of(eng).fitted
    assert refitted is not None and refitted > fitted


def test_off_by_config(configured: Path, tmp_path: Path) -> None:
    (configured / "config.toml").write_text("[recall]\nadapt = false\n" + FIT,
                                            encoding="utf-8")
    with ContextEngine.open(configured) as e:
        assert synced(e, write_sessions(tmp_path / "t", 12)[0].parent) == ""
        a = e.status().adapt
        assert a is not None and not a.enabled and a.fitted is None
        assert adapt_rows.model(e.rt.vault) is None
        assert query_adapter(e.rt, ("parser",)) is None


def test_the_plan_takes_the_map_and_the_learned_lane(eng: ContextEngine) -> None:
    plan = plan_query(eng.rt, "parser trouble", eng.rt.cfg)
    flip = QueryAdapter(lambda v: -v, ("tokenizer", 'bad"word', "quotes"), 0.5)
    out = adapted(plan, flip)
    assert out.learned is not None and out.learned.match == '"tokenizer" OR "quotes"'
    assert out.weights["learned"] == pytest.approx(0.5 * plan.weights["keyword"])
    assert out.vector_map is not None
    v = np.ones(3, dtype=np.float32)
    assert (out.vector_map(v) == -v).all()
    assert adapted(plan, None) is plan


def test_the_map_as_a_lane_of_its_own(eng: ContextEngine, tmp_path: Path) -> None:
    """``recall.adapt_fit.map_lane`` > 0: the mapped query is searched as the "adapted"
    lane, weighted that share of the vector lane, and the vector lane (and the rerank's
    similarities) keep the plain query's vector."""
    from engine.flows.search.lanes import lane_stage
    from engine.flows.search.stages import StageTimer

    synced(eng, write_sessions(tmp_path / "t", 12)[0].parent)
    plan = plan_query(eng.rt, "parser trouble", eng.rt.cfg)
    flip = QueryAdapter(lambda v: -v, (), 0.5, lane_weight=0.7)
    out = adapted(plan, flip)
    assert out.vector_map is None and out.lane_map is not None
    assert out.weights["adapted"] == pytest.approx(0.7 * plan.weights["vector"])
    hits = lane_stage(eng.rt, out, StageTimer())
    plain = eng.rt.embed_query("parser trouble")
    assert hits.query_vector is not None and np.allclose(hits.query_vector, plain)
    assert hits.lanes["vector"] == lane_stage(eng.rt, plan, StageTimer()).lanes["vector"]
    flipped = eng.rt.vectors.query(-plain, 5)
    assert hits.lanes["adapted"][0] == max(flipped, key=lambda h: (h[1], -h[0]))[0]
    assert hits.lanes["adapted"][0] != hits.lanes["vector"][0]
