"""`recall --auto`: Recent sessions, Related memory, Failures to avoid, within a budget.

Each section is packed by the engine's packer under its share of the budget;
the joined result is de-duplicated line by line and counted exactly, and a
section is re-packed smaller until the whole fits.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from engine.api import RecallHit
from engine.flows.recall.hits import presented
from engine.flows.runtime import Runtime
from engine.flows.search.ranking import search
from engine.packing.candidates import PackCandidate
from engine.packing.packer import pack
from engine.recall.chunks import RECALL_CHUNK_KINDS
from engine.retrieval.dedupe import text_similarity
from engine.store.vault import recall_sessions as session_rows
from engine.store.vault.rows import ChunkRow, Filters

RECALL_KINDS = RECALL_CHUNK_KINDS  # the chunk kinds of coding sessions, theirs alone
RELATED_DEPTH = 30  # ranked hits read for the Related and Failures sections


def _day(ts: float | None) -> str:
    if ts is None:
        return "----------"
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M")


def _one_line(text: str, limit: int = 110) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def recent_sessions(rt: Runtime, project: str | None, branch: str | None, limit: int
                    ) -> list[dict[str, Any]]:
    """Latest sessions of a project (and branch): time span, turns, failures, first request."""
    out = []
    for row in session_rows.recent_sessions(rt.vault, project, branch, limit):
        request = (session_rows.first_request(rt.vault, row.session) or "").split("\n", 1)[0]
        request = request.split(":", 1)[1].strip() if request.startswith("User:") else request
        out.append({"session": row.session, "start": row.start, "end": row.end,
                    "turns": int(row.turns or 0), "failures": int(row.failures or 0),
                    "branch": row.branch, "title": row.title, "request": request})
    return out


def _recent_lines(sessions: Sequence[dict[str, Any]]) -> list[str]:
    lines = []
    for s in sessions:
        about = s["request"] or s["title"] or s["session"]
        lines.append(f"- {_day(s['end'])} · {s['branch'] or '-'} · {_one_line(about)} · "
                     f"{s['turns']} turns, {s['failures']} failures")
    return lines


def failure_rows(rt: Runtime, project: str | None, limit: int = 200) -> list[ChunkRow]:
    ids = session_rows.failure_ids(rt.vault, project, limit)
    rows = rt.vault.chunks(ids)
    return [rows[i] for i in ids if i in rows]


def distinct(rows: Sequence[ChunkRow], threshold: float = 0.6) -> list[ChunkRow]:
    """Failures with near-repeats removed (the same error hit again and again)."""
    kept: list[ChunkRow] = []
    for row in rows:
        if any(row.meta.get("tool") == k.meta.get("tool")
               and text_similarity(row.text, k.text) >= threshold for k in kept):
            continue
        kept.append(row)
    return kept


def failure_line(row: ChunkRow) -> str:
    """One line for a failure: when, which session and branch, what kind, what was
    tried, and how it ended."""
    lines = [ln.strip() for ln in row.text.split("\n") if ln.strip()]
    first = lines[0] if lines else ""
    for prefix in ("User:", "Assistant:"):
        if first.startswith(prefix):
            first = first[len(prefix):].strip()
    last = lines[-1] if len(lines) > 1 else ""
    for prefix in ("Assistant:", "Result:"):
        if last.startswith(prefix):
            last = last[len(prefix):].strip()
    kind = row.meta.get("error_kind") or "failure"
    tool = row.meta.get("tool")
    what = f"{kind} ({tool})" if tool else kind
    tail = f" → {_one_line(last, 90)}" if last else ""
    where = f"{str(row.meta.get('session') or '-')[:8]} · {row.meta.get('branch') or '-'}"
    return f"- {_day(row.time)} · {where} · {what} · {_one_line(first, 100)}{tail}"


def _candidate(hit: RecallHit, why: str) -> PackCandidate:
    """A ranked recall hit as the digest shows it: its line, then the excerpt that answers."""
    return PackCandidate(key=f"chunk:{hit.chunk_id}", section="memory", kind=hit.kind,
                         source=str(hit.meta.get("session") or hit.source), title=hit.title,
                         time=hit.time, score=float(hit.score),
                         text=f"{hit.line}\n{hit.excerpt}", chunk_ids=(hit.chunk_id,), why=why)


def ranked_failures(hits: Sequence[RecallHit], recent: Sequence[ChunkRow],
                    rows: dict[int, ChunkRow]) -> list[ChunkRow]:
    """Failures the task's ranking found first (best first), then the most recent ones."""
    first = [rows[h.chunk_id] for h in hits if h.meta.get("failure") and h.chunk_id in rows]
    seen = {r.id for r in first}
    return first + [r for r in recent if r.id not in seen]


def auto_context(rt: Runtime, *, budget: int, project: str | None, branch: str | None,
                 task: str | None, fmt: str) -> dict[str, Any]:
    counter = rt.counter
    sessions = recent_sessions(rt, project, branch, rt.cfg.recall.recent_sessions)
    recent = _recent_lines(sessions)
    recent_failures = failure_rows(rt, project)
    hits: list[RecallHit] = []
    if task and task.strip():  # the one ranked search, transcript profile (as recall)
        found = search(rt, task, RELATED_DEPTH, expand_session=True,
                       filters=Filters(kinds=RECALL_KINDS, project=project))
        hits = presented(rt, task, found, once=False)  # the packer picks among them
    failed = [h.chunk_id for h in hits if h.meta.get("failure")]
    failures = distinct(ranked_failures(hits, recent_failures, rt.vault.chunks(failed)))
    fail_ids = {r.id for r in failures}
    fail_lines = list(dict.fromkeys(failure_line(r) for r in failures))
    related = [_candidate(h, "related") for h in hits if h.chunk_id not in fail_ids]
    related = _unique_lines([related])[0]
    markdown = fmt == "markdown"
    pcfg = dataclasses.replace(rt.cfg.packing, fmt="markdown" if markdown else "text",
                               expand_top=0, include_time=True)
    heads = (("## Recent", "## Related", "## Failures to avoid") if markdown else
             ("Recent sessions:", "Related:", "Failures to avoid:"))

    shares = {"recent": 0.2, "failures": 0.35 if related else 0.8}
    shares["related"] = 1.0 - shares["recent"] - shares["failures"]
    scale = 1.0
    for _ in range(8):
        parts: list[str] = []
        lines = _fit_lines(recent, int(budget * shares["recent"] * scale), counter)
        if lines:
            parts.append(heads[0] + "\n" + "\n".join(lines))
        sub = int(budget * shares["related"] * scale)
        body = pack(related, sub, pcfg, counter).context.strip() if related and sub > 0 else ""
        if body:
            parts.append(heads[1] + "\n" + body)
        lines = _fit_lines(fail_lines, int(budget * shares["failures"] * scale), counter)
        if lines:
            parts.append(heads[2] + "\n" + "\n".join(lines))
        text = _dedupe_lines("\n\n".join(parts) + "\n") if parts else ""
        total = counter.count(text)
        if total <= budget:
            break
        scale *= 0.9
    else:  # pragma: no cover - the shares above always converge
        text, total = "", 0
    result = {"context": text, "total_tokens": total, "budget": budget,
              "project": project, "branch": branch, "sessions": len(sessions),
              "failures": len(failures), "related": len(related), "format": fmt}
    if fmt == "claude-hook":
        result["output"] = json.dumps({"hookSpecificOutput": {
            "hookEventName": "SessionStart", "additionalContext": text}})
    return result


def _unique_lines(groups: Sequence[Sequence[PackCandidate]]) -> list[list[PackCandidate]]:
    """Strip from each candidate the lines an earlier one already holds; drop emptied ones."""
    seen: set[str] = set()
    out: list[list[PackCandidate]] = []
    for group in groups:
        kept = []
        for cand in group:
            lines = [ln for ln in cand.text.split("\n") if not ln.strip() or ln.strip() not in seen]
            text = "\n".join(lines).strip()
            if not text:
                continue
            seen.update(ln.strip() for ln in lines if ln.strip())
            kept.append(dataclasses.replace(cand, text=text))
        out.append(kept)
    return out


def _fit_lines(lines: Sequence[str], budget: int, counter: Any) -> list[str]:
    out: list[str] = []
    used = 0
    for line in lines:
        cost = counter.count(line + "\n")
        if used + cost > budget:
            break
        out.append(line)
        used += cost
    return out


def _dedupe_lines(text: str) -> str:
    """Drop repeated non-blank lines (the output must hold no duplicate line)."""
    seen: set[str] = set()
    out = []
    for line in text.split("\n"):
        key = line.strip()
        if key and key in seen:
            continue
        if key:
            seen.add(key)
        out.append(line)
    return "\n".join(out)
