"""The engine's writer thread ending by an error: every waiting job fails with that
error, later jobs fail at once, and the engine raises an alert (never a silent hang)."""

from __future__ import annotations

from pathlib import Path

from engine.facade import ContextEngine
from engine.metrics import ALERT_WRITER_FAILED


class _Fatal(BaseException):
    """Escapes a job body's ``except Exception``, as an abort in native code would."""


def test_the_engine_reports_a_dead_writer_and_never_hangs(data_dir: Path) -> None:
    with ContextEngine.open(data_dir) as eng:
        def fatal(job: object, progress: object) -> None:
            raise _Fatal()

        dead = eng._jobs.submit("paths", fatal)  # stands for a crash inside the writer
        assert eng.wait(dead.id, timeout=30).state == "failed"
        after = eng.wait(eng.ingest(text="a note after the writer died", title="n"), 10)
        assert after.state == "failed" and after.error is not None
        assert after.error.name == "internal_error"
        status = eng.status()
        assert ALERT_WRITER_FAILED in status.alerts
        assert "restart" in eng.metrics().alerts[ALERT_WRITER_FAILED].detail
