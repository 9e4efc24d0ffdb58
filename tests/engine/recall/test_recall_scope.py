"""What recall draws on (issue 31): coding sessions only, never ingested documents, and
the sessions of the project it is asked from first, without hiding the others."""

from __future__ import annotations

from pathlib import Path

from engine.facade import ContextEngine
from engine.recall.asked_from import project_of_folder
from engine.recall.chunks import RECALL_CHUNK_KINDS, SESSION_CODE
from tests.engine.recall.recall_helpers import ClaudeLines, text, write_lines

QUESTION = "why did the websocket reconnect loop spin at full cpu"
ANSWER = ("The websocket reconnect loop spun at full cpu because the backoff delay was "
          "reset to zero after every failed attempt; it now doubles up to 30 seconds.\n\n"
          "```python\ndelay = min(delay * 2, 30.0)  # websocket reconnect backoff\n```")


def _session(folder: Path, name: str, cwd: str) -> Path:
    """One Claude Code session in ``cwd`` asking the question and answering it."""
    lines = ClaudeLines(session=f"sess-{name}", cwd=cwd)
    return write_lines(folder / f"{name}.jsonl", [
        lines.user(f"{QUESTION}? please fix it in {name}"),
        lines.assistant([text(ANSWER)], msg_id=f"msg_{name}"),
    ])


def _code_folder(root: Path) -> Path:
    """Source files whose words match the question better than any session does."""
    root.mkdir()
    (root / "reconnect.py").write_text(
        '"""Why the websocket reconnect loop spin at full cpu."""\n\n'
        "def reconnect_loop(websocket, delay):\n"
        "    # websocket reconnect loop: spin at full cpu without a delay\n"
        "    while not websocket.open:\n"
        "        websocket.reconnect()\n", encoding="utf-8")
    (root / "notes.md").write_text(
        "# Websocket reconnect loop\n\nWhy did the websocket reconnect loop spin at full "
        "cpu? See reconnect.py.\n", encoding="utf-8")
    return root


def test_recall_returns_sessions_only_with_code_ingested(engine: ContextEngine,
                                                         tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    _session(sessions, "one", "/home/u/src/alpha")
    engine.recall(index=[str(sessions)])
    engine.ingest(paths=[str(_code_folder(tmp_path / "src"))], wait=True)
    # the documents are there, and search finds them
    assert any(h.kind == "code" for h in engine.search(QUESTION, k=10))
    for res in (engine.recall(QUESTION, k=10), engine.recall(QUESTION, k=10, budget=2000),
                engine.recall(QUESTION, k=10, types=["code"])):
        assert res.hits
        assert all(h.kind in RECALL_CHUNK_KINDS and h.meta.get("session") == "sess-one"
                   for h in res.hits), [(h.kind, h.title) for h in res.hits]
    code = engine.recall(QUESTION, k=10, types=["code"])  # the sessions' code blocks
    assert code.hits and all(h.kind == SESSION_CODE for h in code.hits)
    digest = engine.recall(QUESTION, auto=True, project="alpha", budget=2000)
    assert "reconnect.py" not in (digest.context or "")


def test_asked_from_a_project_ranks_its_sessions_first(engine: ContextEngine,
                                                       tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    _session(sessions, "alpha", "/home/u/src/alpha")
    _session(sessions, "beta", "/home/u/src/beta")
    engine.recall(index=[str(sessions)])
    repo = tmp_path / "beta"
    (repo / ".git").mkdir(parents=True)
    (repo / "pkg").mkdir()
    for cwd, project in ((str(repo / "pkg"), "beta"), ("/home/u/src/alpha", "alpha")):
        res = engine.recall(QUESTION, k=10, cwd=cwd)
        assert res.hits is not None
        projects = [h.meta.get("project") for h in res.hits]
        assert projects[0] == project, projects
        assert set(projects) == {"alpha", "beta"}  # the other project is not hidden
    named = engine.recall(QUESTION, k=10, project="alpha")
    assert named.hits is not None
    assert named.hits[0].meta.get("project") == "alpha"
    assert {h.meta.get("project") for h in named.hits} == {"alpha", "beta"}


def test_project_of_folder(tmp_path: Path) -> None:
    repo = tmp_path / "shop"
    (repo / ".git").mkdir(parents=True)
    (repo / "web" / "src").mkdir(parents=True)
    assert project_of_folder(str(repo / "web" / "src")) == "shop"
    tree = repo / ".worktrees" / "fix-cart"
    (tree / "api").mkdir(parents=True)
    (tree / ".git").write_text("gitdir: ../../.git/worktrees/fix-cart\n", encoding="utf-8")
    assert project_of_folder(str(tree / "api")) == "shop"
    assert project_of_folder("/nowhere/on/this/machine/spotter") == "spotter"
    assert project_of_folder("  ") is None


def test_words_only_one_session_uses_tell_look_alikes_apart(engine: ContextEngine,
                                                            tmp_path: Path) -> None:
    """Two sessions of one project on the same task; the question names a word only the
    second one uses: that session's share is the larger (``session_words``)."""
    from engine.flows.search.plan import plan_query
    from engine.flows.search.session_words import session_words

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for name, extra in (("first", "the retry counter"), ("second", "the jitter seed")):
        lines = ClaudeLines(session=f"sess-{name}", cwd="/home/u/src/alpha")
        write_lines(sessions / f"{name}.jsonl", [
            lines.user(f"{QUESTION}? look at {extra}"),
            lines.assistant([text(f"{ANSWER}\nAlso checked {extra}.")], msg_id=f"m_{name}")])
    engine.recall(index=[str(sessions)])
    rt = engine.rt
    plan = plan_query(rt, "what did we find about the jitter seed of the reconnect loop",
                      rt.cfg)
    shares = session_words(rt, rt.cfg, plan.analysis)
    assert shares["sess-second"] > shares.get("sess-first", 0.0)
    assert shares["sess-second"] == 1.0  # it holds every word some session holds
