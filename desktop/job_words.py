"""What the tray and the quit dialog say of the jobs under way: the engine's own
description of a job's progress (``JobSnapshot.progress``, in the words of
``ipc.status_text.progress_text``, as ``ctx status`` and the job card say it), never
counts added up here."""

from __future__ import annotations

from collections.abc import Sequence

from desktop.messages import job_title, plural
from engine import JobSnapshot
from ipc.status_text import progress_text


def leading(active: Sequence[JobSnapshot]) -> JobSnapshot:
    """The job spoken of: the one running (the oldest if several are: one in its vector
    stage and one storing text), else the first queued."""
    running = [j for j in active if j.state == "running"]
    return min(running or list(active), key=lambda j: j.created)


def quit_question(active: Sequence[JobSnapshot]) -> str:
    """The quit dialog's question: what is still running, how far, and, once every file
    is stored, that only vectors are left."""
    lead = leading(active)
    more = f" (and {plural(len(active) - 1, 'other job')})" if len(active) > 1 else ""
    title = job_title(lead)
    if lead.progress.files_stored and lead.progress.stage == "vectors":
        return (f"Every file of {title} is stored and searchable by keyword; only its "
                f"vectors are left{more}: {progress_text(lead)}.")
    return f"Still running: {title}{more}, {progress_text(lead)}."
