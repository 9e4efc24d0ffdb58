"""Coding-agent sessions in the vault, as ``recall --auto`` reads them: the latest
sessions of a project with their spans and counts, a session's first request,
and the turns that failed.

Sessions are the chunks of transcript sources that carry a session id; a session
of a sub-agent (``meta.is_subagent``) is not one of the user's.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from engine.store.vault.core import Vault
from engine.store.vault.rows import where_equal


class SessionRow(NamedTuple):
    """One session: its id, first and last chunk time, turns, failed turns, branch,
    title of its source and whether it is a sub-agent's (always 0 here)."""

    session: str
    start: float | None
    end: float | None
    turns: int | None
    failures: int | None
    branch: str | None
    title: str | None
    subagent: int


def recent_sessions(vault: Vault, project: str | None, branch: str | None, limit: int
                    ) -> list[SessionRow]:
    """The ``limit`` sessions (of ``project`` and ``branch`` where given) whose last
    chunk is newest, newest first; sub-agents' sessions are left out."""
    where = ["s.state = 'ready'", "s.kind = 'transcript'", "c.session IS NOT NULL"]
    args: list[Any] = []
    where_equal(where, args, {"s.project": project, "json_extract(c.meta, '$.branch')": branch})
    rows = vault._query(
        "SELECT c.session, min(c.time), max(c.time), "
        "sum(c.kind = 'turn_pair' AND json_extract(c.meta, '$.part') IS NULL), sum(c.failure), "
        "max(json_extract(c.meta, '$.branch')), max(s.title), "
        "max(COALESCE(json_extract(c.meta, '$.is_subagent'), 0)) "
        f"FROM chunks c JOIN sources s ON s.id = c.source_id WHERE {' AND '.join(where)} "
        "GROUP BY c.session HAVING max(COALESCE(json_extract(c.meta, '$.is_subagent'), 0)) = 0 "
        "ORDER BY max(c.time) DESC LIMIT ?", (*args, limit))
    return [SessionRow(*r) for r in rows]


def first_request(vault: Vault, session: str) -> str | None:
    """The text of a session's first turn pair (None when it has none)."""
    first = vault._query(
        "SELECT text FROM chunks WHERE session = ? AND kind = 'turn_pair' "
        "AND json_extract(meta, '$.part') IS NULL ORDER BY time, id LIMIT 1", (session,))
    return first[0][0] if first else None


def failure_ids(vault: Vault, project: str | None, limit: int) -> list[int]:
    """Ids of the newest ``limit`` failed transcript chunks (of ``project`` where
    given), newest first."""
    where = ["s.state = 'ready'", "s.kind = 'transcript'", "c.failure = 1"]
    args: list[Any] = []
    where_equal(where, args, {"s.project": project})
    return [r[0] for r in vault._query(
        f"SELECT c.id FROM chunks c JOIN sources s ON s.id = c.source_id "
        f"WHERE {' AND '.join(where)} ORDER BY c.time DESC, c.id DESC LIMIT ?", (*args, limit))]
