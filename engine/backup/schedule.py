"""When the app's next backup is due, and which of the backups it made to delete.

Pure functions of times and file names: the app's scheduler (desktop) lists the
folder and asks. Only names the app gives its own backups are ever pruned
(``ctx-backup-DATE.ctxbackup``), never a file the user put there, and the pieces a
killed backup left (``.partial``) once they are older than ``STALE_S``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

STALE_S = 3600.0  # a partial backup older than this is not being written any more
_OURS = re.compile(r"^ctx-backup-\d{8}-\d{6}\.ctxbackup$")
_PARTIAL = re.compile(r"^\.?ctx-backup-\d{8}-\d{6}\.ctxbackup(\.vault)?\.partial$")


def backup_due(last: float | None, now: float, every_hours: float) -> bool:
    """Whether a backup is due: none yet, or the last one ``every_hours`` ago or more
    (or dated in the future: a clock set back)."""
    if last is None:
        return True
    return now - last >= every_hours * 3600.0 or last > now + 60.0


def backups_to_prune(files: Sequence[tuple[str, float]], keep: int, now: float) -> list[str]:
    """Of ``files`` (name, modified time) in the backup folder, the names to delete: the
    app's backups beyond the newest ``keep``, and stale partial ones."""
    ours = sorted((f for f in files if _OURS.match(f[0])), key=lambda f: (f[1], f[0]),
                  reverse=True)
    stale = [name for name, mtime in files if _PARTIAL.match(name) and now - mtime > STALE_S]
    return [name for name, _ in ours[keep:]] + stale
