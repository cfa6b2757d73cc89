"""The Python SDK's 1.x client against a Streamable HTTP server (ours: examples/echo_server.rs).

    python client.py URL SCENARIO

Scenarios:
    full  initialize, logging/setLevel (what many 1.x-based clients send right after
          initialize), tools/list, echo, progress, ping_client, broadcast (its log message on the
          standalone stream), a broadcast below the level set (filtered, nothing sent), DELETE

Prints `ok: ...` and exits 0, or `FAIL (step): reason` and exits 1. It never runs longer than
OVERALL_TIMEOUT_S. INTEROP_VERBOSE=1 prints the HTTP exchanges to stderr.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

import anyio
import httpx
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

OVERALL_TIMEOUT_S = 60
# How long the broadcast may take to arrive on the standalone stream.
WAIT_S = 5
TOOLS = ["broadcast", "count", "echo", "ping_client", "progress", "sleep"]
SCENARIOS = ("full",)

current_step = "start"


class Failed(Exception):
    """A check that did not hold."""


def fail(reason: str) -> None:
    print(f"FAIL ({current_step}): {reason}", flush=True)
    # os._exit: nothing (an SDK task, a socket) can keep the process alive.
    os._exit(1)


def step(name: str) -> None:
    global current_step
    current_step = name


def check(condition: Any, message: str) -> None:
    if not condition:
        raise Failed(message)


def verbose(line: str) -> None:
    if os.environ.get("INTEROP_VERBOSE"):
        print(line, file=sys.stderr, flush=True)


def describe(error: BaseException) -> str:
    """A failed check's message, or the error's type and message; errors raised inside the SDK's
    task groups arrive wrapped in exception groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, Failed):
        return str(error)
    return f"{type(error).__name__}: {error}"


def text(result: types.CallToolResult) -> str | None:
    first = result.content[0] if result.content else None
    return first.text if isinstance(first, types.TextContent) else None


class WireLog:
    """Every HTTP exchange (`POST tools/call echo -> 200 application/json`), for checks on the
    wire and for failure messages."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, int, str]] = []
        # The Mcp-Session-Id headers the server sent.
        self.session_ids: set[str] = set()

    async def on_response(self, response: httpx.Response) -> None:
        request = response.request
        what = request.method
        if what == "POST":
            try:
                message = json.loads(request.content)
                name = (message.get("params") or {}).get("name")
                what = f"POST {message.get('method', 'response')}" + (f" {name}" if name else "")
            except (ValueError, AttributeError):
                pass
        if "mcp-session-id" in response.headers:
            self.session_ids.add(response.headers["mcp-session-id"])
        content_type = response.headers.get("content-type", "").split(";")[0]
        self.entries.append((what, response.status_code, content_type))
        verbose(f"{what}: {response.status_code} {content_type}")

    def find(self, what: str) -> tuple[str, int, str] | None:
        return next((entry for entry in self.entries if entry[0] == what), None)

    def __str__(self) -> str:
        return "; ".join(f"{what} -> {status} {ctype}".rstrip() for what, status, ctype in self.entries)


async def run(url: str) -> str:
    wire = WireLog()
    logs: list[tuple[str, Any]] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.LoggingMessageNotification
        ):
            logs.append((message.root.params.level, message.root.params.data))
            arrived.set()
        elif isinstance(message, Exception):
            verbose(f"transport error: {message!r}")

    http = create_mcp_http_client()
    http.event_hooks["response"].append(wire.on_response)
    try:
        async with http:
            async with streamable_http_client(url, http_client=http) as (read, write, _):
                async with ClientSession(read, write, message_handler=on_message) as session:
                    await exercise(session, wire, logs, arrived)
            # Leaving `streamable_http_client` sent the DELETE (terminate_on_close).
            step("terminate")
            deleted = wire.find("DELETE")
            check(deleted and 200 <= deleted[1] < 300, f"DELETE answered {deleted and deleted[1]}")
    except Exception as error:
        fail(f"{describe(error)}\n  wire: {wire}")
    verbose(f"wire: {wire}")
    return "initialize, logging/setLevel, tools/list, echo, progress, ping_client, broadcast filtered by level, DELETE"


async def exercise(session: ClientSession, wire: WireLog, logs: list[tuple[str, Any]], arrived: anyio.Event) -> None:
    step("initialize")
    init = await session.initialize()
    check(len(wire.session_ids) == 1, f"session ids {wire.session_ids}, expected one on initialize")
    check(init.capabilities.logging is not None, f"no logging capability in {init.capabilities}")

    step("logging/setLevel")
    await session.set_logging_level("warning")

    step("tools/list")
    names = sorted(tool.name for tool in (await session.list_tools()).tools)
    check(names == TOOLS, f"tools {names}, expected {TOOLS}")

    step("echo")
    result = await session.call_tool("echo", {"text": "hello from the python sdk 1.x"})
    check(text(result) == "hello from the python sdk 1.x", f"echo answered {result}")

    step("progress")
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    result = await session.call_tool("progress", {"steps": 5, "delay_ms": 10}, progress_callback=on_progress)
    check(text(result) == "done", f"progress answered {result}")
    expected = [(n, 5) for n in range(1, 6)]
    check(seen == expected, f"progress notifications {seen}, expected {expected}")

    step("ping_client")
    result = await session.call_tool("ping_client", {})
    check(text(result) == "pong", f"ping_client answered {result}")

    step("broadcast")
    # Below the level set: not sent at all.
    result = await session.call_tool("broadcast", {"text": "below the level", "level": "info"})
    check(text(result) == "filtered", f"a broadcast at info after setLevel warning answered {result}")
    message = f"broadcast from the python sdk 1.x {os.getpid()}"
    result = await session.call_tool("broadcast", {"text": message, "level": "error"})
    check(text(result) == "sent", f"broadcast answered {result}")
    with anyio.move_on_after(WAIT_S):
        await arrived.wait()
    check(logs == [("error", message)], f"log messages {logs} after {WAIT_S} s, expected [('error', {message!r})]")


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[2] not in SCENARIOS:
        print(f"usage: python client.py URL {'|'.join(SCENARIOS)}", flush=True)
        sys.exit(2)
    url, scenario = sys.argv[1], sys.argv[2]
    # A timer thread, so that a hang anywhere (even a blocked event loop) still ends the run.
    timer = threading.Timer(OVERALL_TIMEOUT_S, fail, args=(f"timed out after {OVERALL_TIMEOUT_S} s",))
    timer.daemon = True
    timer.start()
    what = anyio.run(run, url)
    print(f"ok: py1-client {scenario}: {what}", flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
