"""`ctx mcp`: ctx's tools for coding agents over MCP (stdio, the official `mcp` SDK).

Tools: ``build_context`` (the best context for a task, within a token budget),
``search`` (ranked passages), ``recall`` (memory of past coding sessions, or
``auto``: recent work, related memory and failures to avoid), ``sources``
(what is stored) and ``ingest`` (a text or a file/folder path). Each returns
compact text within the budget asked. The server talks to the running engine
and starts one in the background when none runs; stdout carries nothing but
the protocol (logs go to stderr).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from engine import LIMITS, CtxError
from ipc.mcp.compact import fit, hit_entries, recall_text, source_entries
from ipc.mcp.link import EngineLink

INSTRUCTIONS = (
    "ctx is the user's local, encrypted memory: their documents, notes and the transcripts of "
    "past coding-agent sessions (Claude Code, Codex). Call build_context before a task that may "
    "depend on earlier decisions, conventions or documents; recall to find what was done or "
    "what failed in past sessions; search for specific passages. Results never exceed the "
    "token budget you pass."
)

# One rule for a budget everywhere (build_context, recall, the MCP tools): docs/wire.md.
Budget = Annotated[int, Field(ge=LIMITS.min_budget, le=LIMITS.max_budget,
                              description="Most tokens (cl100k) the result may use.")]


def _tool_error(exc: CtxError) -> Exception:
    """The engine's error as the agent reads it: name, message, the parameter it is about,
    and (for errors the user must fix: no key, wrong key, locked store) what to do."""
    from mcp.server.mcpserver.exceptions import ToolError

    from ipc.fixes import FIXES

    field = exc.details.get("field")
    text = f"{exc.name}: {exc.message}" + (f" ({field})" if isinstance(field, str) else "")
    if exc.name in FIXES:
        text += f". To fix: {FIXES[exc.name]}."
    return ToolError(text)


class CtxTools:
    """The tool bodies; each maps engine errors to MCP tool errors."""

    def __init__(self, link: EngineLink, default_budget: int) -> None:
        self.link = link
        self.default_budget = default_budget

    def _call(self, fn: Any) -> Any:
        try:
            return self.link.call(fn)
        except CtxError as exc:
            raise _tool_error(exc) from None

    def build_context(self, query: Annotated[str, Field(
            min_length=1, max_length=20_000,
            description="The task or question, in plain words (e.g. 'how do we retry failed "
                        "uploads?').")],
            budget: Budget = 2000) -> str:
        """Build the most relevant context for a task from the user's stored documents and
        past sessions, packed within `budget` tokens. Returns the context text, with its
        sources named; use it before answering questions about this user's projects."""
        payload = self._call(lambda e: e.build_context(query, budget=budget))
        return payload.context or "(nothing relevant is stored)"

    def search(self, query: Annotated[str, Field(min_length=1, max_length=20_000,
                                                 description="What to look for.")],
               k: Annotated[int, Field(ge=1, le=50, description="Most hits to return.")] = 8,
               kinds: Annotated[list[str] | None, Field(
                   description="Only these kinds (e.g. ['markdown', 'code', 'transcript']).")
               ] = None,
               path_prefix: Annotated[str | None, Field(
                   description="Only sources under this path.")] = None,
               budget: Budget = 1500) -> str:
        """Hybrid (keyword + semantic) search of everything stored. Returns ranked hits, one
        per passage: kind, title, source, date, score and a snippet, within `budget` tokens."""
        hits = self._call(lambda e: e.search(query, k, kinds=kinds, path_prefix=path_prefix))
        if not hits:
            return "no results"
        return fit(hit_entries(hits), budget, what="hits")

    def recall(self, query: Annotated[str | None, Field(
            max_length=20_000,
            description="What to recall from past coding sessions; leave empty with auto=true.")
            ] = None,
            auto: Annotated[bool, Field(
                description="Instead of searching: what a new session should know (recent "
                            "sessions of the project, memory related to `query`, failures "
                            "to avoid).")] = False,
            project: Annotated[str | None, Field(
                description="Project (repository folder name) whose sessions rank first "
                            "(the others still follow); default: the current folder's.")
            ] = None,
            branch: Annotated[str | None, Field(description="Git branch.")] = None,
            types: Annotated[list[Literal["turn_pair", "thinking", "code", "tool"]] | None,
                             Field(description="Kinds of session chunks to search.")] = None,
            k: Annotated[int, Field(ge=1, le=50, description="Most hits.")] = 8,
            budget: Budget = 2000) -> str:
        """Memory of past Claude Code and Codex sessions: what was asked, done, decided and
        what failed. With a query: ranked session excerpts, sized to fill `budget`. With
        auto=true: a digest for starting work. Within `budget` tokens."""
        if auto:
            result = self._call(lambda e: e.recall(query, auto=True, project=project,
                                                   branch=branch, budget=budget,
                                                   cwd=os.getcwd()))
            return result.context or "(no session memory for this project yet)"
        if not query or not query.strip():
            from mcp.server.mcpserver.exceptions import ToolError

            raise ToolError("invalid_input: give a query, or set auto=true")
        result = self._call(lambda e: e.recall(query, project=project, branch=branch,
                                               types=types, k=k, budget=budget,
                                               cwd=os.getcwd()))
        return recall_text(result, budget)

    def sources(self, project: Annotated[str | None, Field(
                    description="Only transcript sources of this project.")] = None,
                limit: Annotated[int, Field(ge=1, le=1000, description="Most rows.")] = 50,
                budget: Budget = 1500) -> str:
        """List what ctx has stored (id, kind, title, location, chunks, date), newest first;
        a coding session is one source, however many syncs stored it."""
        rows = self._call(lambda e: e.sources(project=project))
        rows = sorted(rows, key=lambda s: -(s.ingested_at or 0))
        if not rows:
            return "nothing stored yet"
        return fit(source_entries(rows[:limit]), budget,
                   header=f"{len(rows)} sources" + (f" (newest {limit})" if len(rows) > limit
                                                     else ""), what="sources")

    def ingest(self, text: Annotated[str | None, Field(
                   max_length=2_000_000,
                   description="Text to remember (a note, a decision, a snippet).")] = None,
               path: Annotated[str | None, Field(
                   description="Absolute path of a file or folder to ingest "
                               "(folders honour .gitignore).")] = None,
               title: Annotated[str | None, Field(
                   max_length=512, description="Title for `text`.")] = None,
               wait: Annotated[bool, Field(
                   description="Wait until it is stored (false: return the job id at "
                               "once).")] = True) -> str:
        """Store a text or a file/folder in the user's encrypted memory so later
        build_context, search and recall calls find it. Give exactly one of text or path."""
        from mcp.server.mcpserver.exceptions import ToolError

        if (text is None) == (path is None):
            raise ToolError("invalid_input: give exactly one of text or path")
        if path is not None:
            p = Path(path).expanduser()
            if not p.is_absolute():
                raise ToolError("invalid_input: path must be absolute")
            if not p.exists():
                raise ToolError(f"not_found: {p}")
            job_id = self._call(lambda e: e.ingest(paths=[str(p)]))
        else:
            job_id = self._call(lambda e: e.ingest(text=text, title=title or "note from agent"))
        if not wait:
            return f"queued: job {job_id}"
        snap = self._call(lambda e: e.wait(job_id, timeout=600.0))
        errors = len(snap.errors)
        return (f"{snap.state}: job {job_id}, {snap.files_done} files, "
                f"{snap.chunks} chunks" + (f", {errors} skipped" if errors else ""))


def make_server(data_dir: str | None = None, *, default_budget: int = 2000) -> Any:
    """The MCPServer with ctx's tools registered (``run()`` it, or test it in memory)."""
    import threading

    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations

    from ipc.mcp.compact import counter
    from ipc.version import version

    threading.Thread(target=counter, name="ctx-mcp-warm", daemon=True).start()  # tokenizer
    tools = CtxTools(EngineLink(data_dir), default_budget)
    server = MCPServer("ctx", title="ctx: local context engine", instructions=INSTRUCTIONS,
                       version=version(), log_level="WARNING")
    read_only = ToolAnnotations.model_validate({"readOnlyHint": True, "openWorldHint": False})
    server.add_tool(tools.build_context, name="build_context", annotations=read_only)
    server.add_tool(tools.search, name="search", annotations=read_only)
    server.add_tool(tools.recall, name="recall", annotations=read_only)
    server.add_tool(tools.sources, name="sources", annotations=read_only)
    server.add_tool(tools.ingest, name="ingest",
                    annotations=ToolAnnotations.model_validate({
                        "readOnlyHint": False, "destructiveHint": False, "idempotentHint": True,
                        "openWorldHint": False}))
    for tool in server._tool_manager.list_tools():
        _refuse_unknown_arguments(tool)
    server.ctx_tools = tools  # type: ignore[attr-defined]
    return server


def _refuse_unknown_arguments(tool: Any) -> None:
    """An argument the tool does not take is an error naming it (``extra_forbidden``),
    never dropped unread; the input schema says so (``additionalProperties: false``)."""
    model = tool.fn_metadata.arg_model
    model.model_config["extra"] = "forbid"
    model.model_config["hide_input_in_errors"] = True  # name the argument, not its value
    model.model_rebuild(force=True)
    tool.parameters["additionalProperties"] = False
    _plain_argument_errors(tool)


def argument_errors(exc: Any) -> str:
    """A pydantic ValidationError as an agent reads it: each argument named with what is
    wrong, without pydantic's title, input values or links to its website."""
    parts = []
    for err in exc.errors(include_url=False, include_input=False):
        name = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        what = ("not an argument of this tool" if err.get("type") == "extra_forbidden"
                else str(err.get("msg", "invalid")))
        parts.append(f"{name}: {what}")
    return "; ".join(parts)


def _plain_argument_errors(tool: Any) -> None:
    """Arguments that fail the tool's schema are a tool error naming each argument (the
    SDK's text ends with a pydantic URL and repeats its model's name)."""
    from mcp.server.mcpserver.exceptions import ToolError
    from pydantic import ValidationError

    run = tool.run

    async def checked(arguments: dict[str, Any], context: Any, convert_result: bool = False
                      ) -> Any:
        try:
            return await run(arguments, context, convert_result=convert_result)
        except ToolError as exc:
            if type(exc) is ToolError and isinstance(exc.__cause__, ValidationError):
                raise ToolError(f"invalid arguments for {tool.name}: "
                                f"{argument_errors(exc.__cause__)}") from None
            raise

    object.__setattr__(tool, "run", checked)  # a pydantic model: set past its fields


def run_mcp(args: argparse.Namespace) -> int:
    """Serve MCP on stdin/stdout until the client closes the stream."""
    import logging

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, force=True)
    import anyio

    from ipc.mcp.stdio import serve_stdio

    server = make_server(args.data_dir, default_budget=args.budget)
    try:
        anyio.run(serve_stdio, server)
    finally:
        server.ctx_tools.link.close()
    return 0
