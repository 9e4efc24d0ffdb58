"""Where a recall is asked from: the project of the folder an agent or a user works in.

A coding session's project is its working directory's folder name
(``model.project_from_cwd``). A question asked from a folder belongs to that
folder's repository: the nearest folder above it (itself included) that holds a
``.git``, a worktree under ``<repo>/.worktrees/<name>`` counting as ``<repo>``;
a folder in no repository (or one not on this machine) is named by itself.
The CLI, the session-start hook and the MCP server pass their working directory;
the engine decides what it means here, once.
"""

from __future__ import annotations

from pathlib import Path

from engine.recall.model import project_from_cwd


def project_of_folder(cwd: str) -> str | None:
    """The project a recall asked from ``cwd`` belongs to (None for an empty path)."""
    if not cwd or not cwd.strip():
        return None
    here = Path(cwd).expanduser()
    try:
        found = here.is_dir()
    except OSError:
        found = False
    if found:
        here = here.resolve()
        for folder in (here, *here.parents):
            if (folder / ".git").exists():
                if folder.parent.name == ".worktrees":
                    return folder.parent.parent.name
                return folder.name
    return project_from_cwd(str(here))
