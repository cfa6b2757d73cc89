"""The Python SDK's Streamable HTTP server, for the "our client -> their server" pairs.

    python server.py [--json-response] [--stateless]

Listens on 127.0.0.1 with a free port and prints `listening on http://127.0.0.1:PORT/mcp` as its
first line. Tools: `echo {text}` returns the text; `progress {steps, delay_ms}` sends `steps`
progress notifications when the request has a progress token, then returns "done". SIGINT or
SIGTERM stops it; so does the hard limit below, so a forgotten server cannot linger.
"""

from __future__ import annotations

import os
import socket
import sys
import threading

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer

# A peer for a test run, not a service: it exits on its own after this long.
MAX_LIFETIME_S = 10 * 60
FLAGS = ("--json-response", "--stateless")

server = MCPServer("interop-py-server", version="0.0.0")


@server.tool(description="Returns the text it is given.")
def echo(text: str) -> str:
    return text


@server.tool(description='Sends progress notifications, then returns "done".')
async def progress(ctx: Context, steps: int = 3, delay_ms: int = 0) -> str:
    steps = max(0, min(steps, 10_000))
    delay_s = max(0, min(delay_ms, 60_000)) / 1000
    # A no-op when the request carries no progress token.
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps)
        if delay_s:
            await anyio.sleep(delay_s)
    return "done"


def main() -> None:
    args = sys.argv[1:]
    unknown = [arg for arg in args if arg not in FLAGS]
    if unknown:
        print(f"unknown argument {unknown[0]}; usage: python server.py [--json-response] [--stateless]", file=sys.stderr)
        sys.exit(2)
    app = server.streamable_http_app(json_response="--json-response" in args, stateless_http="--stateless" in args)

    # Bind first, so the port is known before uvicorn starts; connections wait in the backlog
    # until it accepts them.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.set_inheritable(True)
    port = sock.getsockname()[1]
    # The first line, which scripts wait for.
    print(f"listening on http://127.0.0.1:{port}/mcp", flush=True)

    def expire() -> None:
        print(f"stopping after {MAX_LIFETIME_S // 60} minutes", file=sys.stderr, flush=True)
        os._exit(0)

    timer = threading.Timer(MAX_LIFETIME_S, expire)
    timer.daemon = True
    timer.start()
    # uvicorn handles SIGINT and SIGTERM: it stops accepting, then ends the open streams.
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
