"""The Python SDK's stdio server, for the pairs that run it behind `mcp-gateway serve`.

    python stdio_server.py

Speaks MCP on stdin and stdout (the SDK's `MCPServer.run("stdio")`), nothing else: the gateway
starts it, one process per session or per pool slot. Tools:

- `echo {text}`: the text.
- `progress {steps, delay_ms}`: `steps` progress notifications when the request has a progress
  token, then "done".
- `sample {prompt}`: asks the client `sampling/createMessage` with the prompt and returns the
  text of the client's answer (the request runs from the child, through the gateway, to the
  client and back).
- `wait {ms}`: a progress notification (when the request has a token), then sleeps `ms`
  milliseconds and returns "waited"; cancelled, it counts the cancellation instead of answering.
- `cancelled {}`: how many `wait` calls this process saw cancelled, as text.

A pair that checks cancellation calls `wait`, cancels it, then asks `cancelled` of the same
process: the count says the client's `notifications/cancelled` reached the child.
"""

from __future__ import annotations

import warnings

import anyio
from mcp import types
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("interop-py-stdio", version="0.0.0")
cancelled_waits = 0


@server.tool(description="Returns the text it is given.")
def echo(text: str) -> str:
    return text


@server.tool(description='Sends progress notifications, then returns "done".')
async def progress(ctx: Context, steps: int = 3, delay_ms: int = 0) -> str:
    steps = max(0, min(steps, 10_000))
    delay_s = max(0, min(delay_ms, 60_000)) / 1000
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps)
        if delay_s:
            await anyio.sleep(delay_s)
    return "done"


@server.tool(description="Asks the client to sample a message; returns the answer's text.")
async def sample(ctx: Context, prompt: str) -> str:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
    with warnings.catch_warnings():
        # Sampling is deprecated at 2026-07-28; the session revisions the gateway relays have it.
        warnings.simplefilter("ignore")
        result = await ctx.session.create_message([message], max_tokens=32, related_request_id=ctx.request_id)
    content = result.content
    return content.text if isinstance(content, types.TextContent) else repr(content)


@server.tool(description='Sleeps `ms` milliseconds, then returns "waited".')
async def wait(ctx: Context, ms: int = 1000) -> str:
    global cancelled_waits
    # A notification first, so that a client knows the call reached the child before it cancels.
    await ctx.report_progress(0, 1)
    try:
        await anyio.sleep(max(0, min(ms, 60_000)) / 1000)
    except anyio.get_cancelled_exc_class():
        cancelled_waits += 1
        raise
    return "waited"


@server.tool(description="How many `wait` calls this process saw cancelled.")
def cancelled() -> str:
    return str(cancelled_waits)


if __name__ == "__main__":
    server.run("stdio")
