"""Which project a folder belongs to, as the engine names a coding session's project.

Shared by ``ctx recall --auto``, the session-start hook and the MCP server, which
ask for the memory of the project the agent works in.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["current_project"]


def current_project(cwd: Path | None = None) -> str:
    """The project a transcript of this folder would carry: its repository's folder name."""
    here = (cwd or Path(os.getcwd())).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            if folder.parent.name == ".worktrees":
                return folder.parent.parent.name
            return folder.name
    return here.name
