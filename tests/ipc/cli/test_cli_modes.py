"""Every CLI command gives the same results with a running `ctx serve`, without one, and --local.

The same suite (ingest, search, build, sources, recall --index/query/--auto,
delete, status, audit) runs three ways, each against a fresh store: against a
real `ctx serve` process; with no server (commands that need the model start
the background engine themselves); and with ``--local`` (the store opened in
the command's own process). The normalized results must be equal.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.agents.engines import REPO, ctx, stop_engine
from tests.conftest import shared_data

TRANSCRIPTS = ("marot__spotter__short.jsonl", "obra__episodic-memory__tiny-conversation.jsonl",
               "codemie-ai__codemie-code__4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl")
_TIME = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d)?( UTC)?")


def _norm(text: str) -> str:
    return _TIME.sub("<time>", text)


def _suite(docs: Path, sessions: Path, local: bool) -> dict[str, Any]:
    flag = ["--local"] if local else []
    out: dict[str, Any] = {}

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return ctx(*flag, *args, stdin=stdin)

    r = run("ingest", str(docs), "--json")
    assert r.returncode == 0, r.stderr
    out["ingest"] = [(j["state"], j["chunks"], j["files_done"]) for j in json.loads(r.stdout)["jobs"]]
    r = run("ingest", "-", "--title", "pasted", stdin="Gulls nest on the northern cliffs.\n")
    out["ingest_stdin"] = (r.returncode, r.stdout.strip())
    r = run("search", "when does the night ferry leave", "-k", "3", "--json")
    assert r.returncode == 0, r.stderr
    out["search"] = [(Path(h["source"]).name, h["kind"], h["text"]) for h in
                     json.loads(r.stdout)["hits"]]
    r = run("build", "night ferry", "--budget", "120", "--format", "json", "--now", "2026-01-01")
    assert r.returncode == 0, r.stderr
    payload = json.loads(r.stdout)
    out["build"] = (_norm(payload["context"]), payload["total_tokens"])
    r = run("build", "night ferry", "--budget", "-5")
    out["bad_budget"] = (r.returncode, "invalid_budget" in r.stderr)
    r = run("recall", "--index", str(sessions), "--json")
    assert r.returncode == 0, r.stderr
    idx = json.loads(r.stdout)["indexed"]
    out["recall_index"] = (idx["files"], idx["chunks"], len(idx["errors"]))
    r = run("recall", "test", "-k", "5", "--json")
    assert r.returncode == 0, r.stderr
    hits = json.loads(r.stdout)["hits"]
    # the top hits; the tail of a k=5 list can swap hits whose scores tie (seen once)
    out["recall_query"] = ([(h["kind"], h["title"], h["text"]) for h in hits[:3]], len(hits))
    r = run("recall", "test", "-k", "5", "--budget", "300", "--json")  # excerpts fill it
    assert r.returncode == 0, r.stderr
    fitted = json.loads(r.stdout)
    assert fitted["budget"] == 300 and 0 < fitted["total_tokens"] <= 300
    out["recall_budget"] = [h["excerpt"] for h in fitted["hits"][:2]]
    r = run("recall", "--sync", "--auto", "--project", "spotter", "--budget", "600",
            "--format", "json")
    assert r.returncode == 0, r.stderr
    auto = json.loads(r.stdout)
    out["recall_auto"] = (_norm(auto["context"]), auto["synced"]["chunks"])
    r = run("sources", "--json")
    out["sources"] = sorted((s["kind"], Path(s["uri"]).name if "/" in s["uri"] else s["kind"],
                             s["n_chunks"]) for s in json.loads(r.stdout)["sources"])
    r = run("delete", str(docs / "trains.md"), "--json")
    out["delete"] = (r.returncode, json.loads(r.stdout)["deleted"])
    r = run("delete", str(docs / "trains.md"))
    out["delete_again"] = (r.returncode, "not_found" in r.stderr)
    r = run("status", "--json")
    status = json.loads(r.stdout)["status"]
    out["status"] = {k: status[k] for k in ("sources", "chunks")}
    r = run("audit", "--json")
    methods = {row["method"] for row in json.loads(r.stdout)["audit"]}
    out["audited"] = {"search", "build_context", "recall", "ingest_job"} <= methods
    return out


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ferries.md").write_text("# Ferries\n\nThe night ferry leaves the harbour at 22:40.\n")
    (docs / "trains.md").write_text("# Trains\n\nThe first train to the coast departs at 06:15.\n")
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for name in TRANSCRIPTS:
        shutil.copy(shared_data("transcripts", "claude", name), sessions / name)
    return docs, sessions


def _serve(home: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "ipc.cli.main", "serve"], cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    from ipc.discovery import find_live

    deadline = time.monotonic() + 120
    while find_live(home) is None:
        assert proc.poll() is None, "ctx serve exited"
        assert time.monotonic() < deadline, "ctx serve not ready"
        time.sleep(0.05)
    return proc


@pytest.mark.timeout(1800)  # 3 x 16 real processes; slow on a loaded 2-core machine
def test_cli_results_match_with_and_without_a_server(
        inputs: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docs, sessions = inputs
    results = {}
    for mode in ("served", "autostart", "local"):
        home = tmp_path / f"home-{mode}"
        monkeypatch.setenv("CTX_HOME", str(home))
        proc = _serve(home) if mode == "served" else None
        try:
            results[mode] = _suite(docs, sessions, local=mode == "local")
            from ipc.discovery import find_live

            info = find_live(home)
            if mode == "local":
                assert info is None  # --local never starts an engine
            else:
                assert info is not None
                if proc is not None:
                    assert info["pid"] == proc.pid  # the served run used that server
        finally:
            stop_engine(home)
            if proc is not None:
                proc.wait(30)
    assert results["served"]["search"], "the suite found nothing"
    assert results["served"]["recall_query"], "recall found nothing"
    assert results["served"]["bad_budget"] == (2, True)
    assert results["served"]["delete_again"] == (3, True)
    assert results["served"] == results["autostart"]
    assert results["served"] == results["local"]
