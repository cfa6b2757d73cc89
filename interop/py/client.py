"""The Python SDK's client against a Streamable HTTP server (ours: examples/echo_server.rs).

    python client.py URL SCENARIO

Scenarios:
    full       initialize, tools/list, echo, progress, ping_client, broadcast, DELETE
    json       the same against a `--json-response` server: JSON bodies, but SSE when a request
               sends progress or a ping before its response (SPEC S5)
    stateless  against a `--stateless` server: no session, ping_client fails at once (S20)

Prints `ok: ...` and exits 0, or `FAIL (step): reason` and exits 1. It never runs longer than
OVERALL_TIMEOUT_S. INTEROP_VERBOSE=1 prints the HTTP exchanges to stderr.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

import anyio
import httpx2
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

OVERALL_TIMEOUT_S = 60
# How long one awaited event (the broadcast) may take.
WAIT_S = 5
# S20: a server-to-client request in stateless mode fails at once, not after a timeout.
STATELESS_PING_LIMIT_S = 5
TOOLS = ["broadcast", "echo", "ping_client", "progress", "sleep"]
SCENARIOS = ("full", "json", "stateless")

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

    async def on_response(self, response: httpx2.Response) -> None:
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

    def find(self, what: str) -> tuple[str, int, str] | None:
        return next((entry for entry in self.entries if entry[0] == what), None)

    def __str__(self) -> str:
        return "; ".join(f"{what} -> {status} {ctype}".rstrip() for what, status, ctype in self.entries)


async def run(url: str, scenario: str) -> str:
    wire = WireLog()
    broadcasts: list[Any] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.LoggingMessageNotification):
            broadcasts.append(message.params.data)
            arrived.set()
        elif isinstance(message, Exception):
            verbose(f"transport error: {message!r}")

    http = create_mcp_http_client()
    http.event_hooks["response"].append(wire.on_response)
    try:
        async with http:
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write, message_handler=on_message) as session:
                    await exercise(session, scenario, wire, broadcasts, arrived)
            # Leaving `streamable_http_client` sent the DELETE (terminate_on_close).
            if scenario != "stateless":
                step("terminate")
                deleted = wire.find("DELETE")
                check(deleted and 200 <= deleted[1] < 300, f"DELETE answered {deleted and deleted[1]}")
    except Exception as error:
        fail(f"{describe(error)}\n  wire: {wire}")
    verbose(f"wire: {wire}")
    if scenario == "stateless":
        return "initialize, tools/list, echo, progress, ping_client failed promptly"
    return "initialize, tools/list, echo, progress, ping_client, broadcast, DELETE"


async def exercise(
    session: ClientSession, scenario: str, wire: WireLog, broadcasts: list[Any], arrived: anyio.Event
) -> None:
    step("initialize")
    await session.initialize()
    if scenario == "stateless":
        check(not wire.session_ids, f"a stateless server gave a session id {wire.session_ids}")
    else:
        check(len(wire.session_ids) == 1, f"session ids {wire.session_ids}, expected one on initialize")

    step("tools/list")
    names = sorted(tool.name for tool in (await session.list_tools()).tools)
    check(names == TOOLS, f"tools {names}, expected {TOOLS}")

    step("echo")
    result = await session.call_tool("echo", {"text": "hello from the python sdk"})
    check(text(result) == "hello from the python sdk", f"echo answered {result}")

    step("progress")
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    result = await session.call_tool("progress", {"steps": 5, "delay_ms": 10}, progress_callback=on_progress)
    check(text(result) == "done", f"progress answered {result}")
    expected = [(n, 5) for n in range(1, 6)]
    check(seen == expected, f"progress notifications {seen}, expected {expected}")

    step("ping_client")
    if scenario == "stateless":
        start = time.monotonic()
        try:
            with anyio.fail_after(3 * STATELESS_PING_LIMIT_S):
                result = await session.call_tool("ping_client", {})
            check(result.is_error, f"ping_client succeeded ({result}) on a stateless server")
            outcome = f"tool error: {text(result)}"
        except TimeoutError:
            outcome = "no answer"
        except Failed:
            raise
        except Exception as error:
            outcome = f"error: {error}"
        elapsed = time.monotonic() - start
        verbose(f"ping_client on a stateless server: {outcome}")
        check(elapsed < STATELESS_PING_LIMIT_S, f"ping_client took {elapsed:.1f} s to fail ({outcome})")
        return

    result = await session.call_tool("ping_client", {})
    check(text(result) == "pong", f"ping_client answered {result}")

    step("broadcast")
    message = f"broadcast from the python sdk {os.getpid()}"
    result = await session.call_tool("broadcast", {"text": message})
    check(text(result) == "sent", f"broadcast answered {result}")
    with anyio.move_on_after(WAIT_S):
        await arrived.wait()
    check(broadcasts == [message], f"broadcasts {broadcasts} after {WAIT_S} s, expected [{message!r}]")

    if scenario == "json":
        step("json-response")
        # Without this the scenario would pass against a server that streams everything.
        echo = wire.find("POST tools/call echo")
        check(echo and echo[2] == "application/json", f"echo was answered with {echo and echo[2]}, expected application/json")
        for tool in ("progress", "ping_client"):
            answer = wire.find(f"POST tools/call {tool}")
            check(
                answer and answer[2] == "text/event-stream",
                f"{tool} was answered with {answer and answer[2]}, expected a switch to text/event-stream",
            )


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[2] not in SCENARIOS:
        print(f"usage: python client.py URL {'|'.join(SCENARIOS)}")
        sys.exit(2)
    url, scenario = sys.argv[1], sys.argv[2]
    # A hard stop that does not depend on the event loop or on the SDK honouring cancellation.
    timer = threading.Timer(OVERALL_TIMEOUT_S, fail, [f"timed out after {OVERALL_TIMEOUT_S} s"])
    timer.daemon = True
    timer.start()
    what = anyio.run(run, url, scenario)
    print(f"ok: py-client {scenario}: {what}", flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
