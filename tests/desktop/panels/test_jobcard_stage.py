"""A job card says when the text is searchable and how far its vectors are."""

from __future__ import annotations

import time

from desktop.panels.jobcard import summary
from engine import JobSnapshot


def test_a_job_in_its_vector_stage_says_it_is_searchable_by_keyword() -> None:
    job = JobSnapshot(id="j", kind="paths", state="running", created=0.0, started=1.0,
                      files_total=10, files_done=10, chunks=80, stage="vectors",
                      to_embed=80, embedded=32, stage_started=time.time() - 200)
    assert summary(job) == (
        "Every file stored, searchable by keyword now · making vectors for search by "
        "meaning (step 2 of 2): 32 of 80 chunks (40%), 5 min left")
