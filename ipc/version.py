"""ctx's version, as the installed distribution records it (one answer for every surface:
`ctx --version`, the bundle's launcher, the MCP server's serverInfo)."""

from __future__ import annotations

__all__ = ["version"]


def version() -> str:
    """The installed ``ctx`` distribution's version; "unknown" when it is not installed
    (a bare source tree on PYTHONPATH)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("ctx")
    except PackageNotFoundError:
        return "unknown"
