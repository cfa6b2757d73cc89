"""The Python SDK's client against a Streamable HTTP server (ours: examples/echo_server.rs).

    python client.py URL SCENARIO

Scenarios:
    full       initialize, tools/list, echo, progress, ping_client, broadcast, DELETE
    json       the same against a `--json-response` server: JSON bodies, but SSE when a request
               sends progress or a ping before its response (SPEC S5)
    stateless  against a `--stateless` server: no session, ping_client fails at once (S20)
    modern     the SDK's `Client` pinned to protocol 2026-07-28 (per-request, no initialize):
               tools/list, echo, progress on the request's stream; ping_client and broadcast
               fail at once (a 2026-07-28 server sends no requests and nothing unrelated to a
               request); no session id, no GET, every POST at 2026-07-28
    auto       the same with the SDK's `mode="auto"`: its `server/discover` probe must keep it
               on 2026-07-28 (it falls back to initialize silently, so the wire is checked)

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
from mcp import Client, ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

OVERALL_TIMEOUT_S = 60
# How long one awaited event (the broadcast, a 2026-07-28 refusal) may take.
WAIT_S = 5
# S20: a server-to-client request in stateless mode fails at once, not after a timeout.
STATELESS_PING_LIMIT_S = 5
TOOLS = ["broadcast", "count", "echo", "ping_client", "progress", "sleep"]
# And those it lists to a 2026-07-28 client only: listen streams, input-required, Mcp-Param-*.
MODERN_TOOLS = sorted(TOOLS + ["confirm", "lookup", "notify_change"])
MODERN_VERSION = "2026-07-28"
# The `mode=` of the SDK's `Client` for each per-request scenario.
MODERN_MODES = {"modern": MODERN_VERSION, "auto": "auto"}
SCENARIOS = ("full", "json", "stateless", *MODERN_MODES)
# What our transport says when a 2026-07-28 tool tries to send the client a request
# (mcp-streamable-server, `Session::send`), and a message unrelated to its request.
NO_REQUESTS = "takes no requests from the server"
NO_UNRELATED = "what it sends must relate to that request"

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


def mcp_headers(headers: httpx2.Headers) -> dict[str, str]:
    return {name: value for name, value in headers.items() if name.startswith("mcp-")}


class WireLog:
    """Every HTTP exchange (`POST tools/call echo -> 200 application/json`), for checks on the
    wire and for failure messages."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, int, str]] = []
        # The Mcp-Session-Id headers the server sent.
        self.session_ids: set[str] = set()
        # The MCP-Protocol-Version headers of the POSTs (None: a POST without one).
        self.versions: set[str | None] = set()
        # The method of every request sent, answered or not.
        self.methods: list[str] = []

    async def on_request(self, request: httpx2.Request) -> None:
        self.methods.append(request.method)

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
            self.versions.add(request.headers.get("mcp-protocol-version"))
            verbose(f"{what}: sent {mcp_headers(request.headers)}")
        if "mcp-session-id" in response.headers:
            self.session_ids.add(response.headers["mcp-session-id"])
        content_type = response.headers.get("content-type", "").split(";")[0]
        self.entries.append((what, response.status_code, content_type))
        verbose(f"{what}: {response.status_code} {content_type} {mcp_headers(response.headers)}")

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


async def run_modern(url: str, scenario: str) -> str:
    """`modern` and `auto`: the SDK's high-level `Client` on the per-request protocol."""
    wire = WireLog()
    # Anything the server sent outside a request's progress (a broadcast would land here).
    unexpected: list[Any] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            verbose(f"transport error: {message!r}")
        elif not isinstance(message, types.ProgressNotification):
            unexpected.append(message)

    http = create_mcp_http_client()
    http.event_hooks["request"].append(wire.on_request)
    http.event_hooks["response"].append(wire.on_response)
    try:
        async with http:
            step("connect")
            # The transport over our own httpx client, so that the event hook sees every exchange.
            transport = streamable_http_client(url, http_client=http)
            async with Client(transport, mode=MODERN_MODES[scenario], message_handler=on_message) as client:
                check(
                    client.protocol_version == MODERN_VERSION,
                    f"the SDK settled on protocol {client.protocol_version}, expected {MODERN_VERSION}",
                )
                await exercise_modern(client, wire)
        step("wire")
        check(not unexpected, f"the server sent {unexpected}")
        check(not wire.session_ids, f"a 2026-07-28 exchange gave session ids {wire.session_ids}")
        others = [method for method in wire.methods if method != "POST"]
        check(not others, f"requests other than POSTs (a GET stream, a DELETE): {others}")
        check(not wire.find("POST initialize"), "the SDK sent initialize")
        check(wire.versions == {MODERN_VERSION}, f"POSTs carried MCP-Protocol-Version {wire.versions}")
        discover = wire.find("POST server/discover")
        if scenario == "auto":
            check(
                wire.entries and wire.entries[0] == ("POST server/discover", 200, "application/json"),
                f"the first exchange was {wire.entries[:1]}, expected the server/discover probe answered 200",
            )
        else:
            # A pinned version adopts without probing.
            check(not discover, "the SDK sent server/discover with its version pinned")
    except Exception as error:
        fail(f"{describe(error)}\n  wire: {wire}")
    verbose(f"wire: {wire}")
    probe = "server/discover, " if scenario == "auto" else ""
    return (
        f"{probe}tools/list, echo, progress, ping_client and broadcast refused at {MODERN_VERSION}, "
        "no session, no GET"
    )


async def exercise_modern(client: Client, wire: WireLog) -> None:
    step("tools/list")
    names = sorted(tool.name for tool in (await client.list_tools()).tools)
    check(names == MODERN_TOOLS, f"tools {names}, expected {MODERN_TOOLS}")

    step("echo")
    result = await client.call_tool("echo", {"text": "hello from the python sdk"})
    check(text(result) == "hello from the python sdk", f"echo answered {result}")

    step("progress")
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    result = await client.call_tool("progress", {"steps": 5, "delay_ms": 10}, progress_callback=on_progress)
    check(text(result) == "done", f"progress answered {result}")
    # Checked once the call returned: a notification delivered after the result would be missing.
    expected = [(n, 5) for n in range(1, 6)]
    check(seen == expected, f"progress notifications {seen}, expected {expected}")
    answer = wire.find("POST tools/call progress")
    check(answer and answer[2] == "text/event-stream", f"progress was answered with {answer}, expected SSE")

    # Neither tool may hang: the transport refuses at once.
    for tool, arguments, refusal in (
        ("ping_client", {}, NO_REQUESTS),
        ("broadcast", {"text": "unrelated to any request"}, NO_UNRELATED),
    ):
        step(tool)
        try:
            with anyio.fail_after(WAIT_S):
                result = await client.call_tool(tool, arguments)
        except TimeoutError:
            raise Failed(f"no answer in {WAIT_S} s") from None
        except MCPError as error:
            outcome = f"error {error.error.code}: {error.error.message}"
        else:
            check(result.is_error, f"{tool} succeeded ({result}) at {MODERN_VERSION}")
            outcome = f"tool error: {text(result)}"
        verbose(f"{tool} at {MODERN_VERSION}: {outcome}")
        check(refusal in outcome, f"{tool} failed with {outcome!r}, expected it to say {refusal!r}")


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[2] not in SCENARIOS:
        print(f"usage: python client.py URL {'|'.join(SCENARIOS)}")
        sys.exit(2)
    url, scenario = sys.argv[1], sys.argv[2]
    # A hard stop that does not depend on the event loop or on the SDK honouring cancellation.
    timer = threading.Timer(OVERALL_TIMEOUT_S, fail, [f"timed out after {OVERALL_TIMEOUT_S} s"])
    timer.daemon = True
    timer.start()
    what = anyio.run(run_modern if scenario in MODERN_MODES else run, url, scenario)
    print(f"ok: py-client {scenario}: {what}", flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
