"""``ctx mcp``'s stdio transport: the SDK's, plus a reply to a line it cannot read.

The SDK drops a line that is not a JSON-RPC message without a word; JSON-RPC 2.0
says the server answers with ``id`` null: -32700 (Parse error) for text that is not
JSON, -32600 (Invalid Request) for JSON that is not a request or notification.
"""

from __future__ import annotations

from typing import Any

__all__ = ["refusal", "serve_stdio"]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def refusal(exc: Exception) -> Any:
    """The JSON-RPC error reply (id null) for a line the transport could not read."""
    from mcp_types import ErrorData, JSONRPCError

    errors = getattr(exc, "errors", None)
    kinds = {e.get("type") for e in errors(include_url=False)} if callable(errors) else set()
    if "json_invalid" in kinds or not kinds:
        error = ErrorData(code=PARSE_ERROR,
                          message="Parse error: the line is not JSON (one JSON-RPC message "
                                  "per line)")
    else:
        error = ErrorData(code=INVALID_REQUEST,
                          message="Invalid Request: the line is JSON but not a JSON-RPC 2.0 "
                                  "request, notification or response")
    return JSONRPCError(jsonrpc="2.0", id=None, error=error)


async def serve_stdio(server: Any) -> None:
    """Run ``server`` (an MCPServer) on stdin/stdout until the client closes stdin."""
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    low = server._lowlevel_server
    async with stdio_server() as (read, write):
        send, receive = anyio.create_memory_object_stream[Any](0)

        async def pump() -> None:
            async with send:
                async for item in read:
                    if isinstance(item, Exception):
                        await write.send(SessionMessage(refusal(item)))
                    else:
                        await send.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)
            await low.run(receive, write, low.create_initialization_options())
