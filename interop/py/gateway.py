"""The Python SDK's client against `mcp-gateway serve` in front of a stdio server nobody here
wrote.

    python gateway.py URL SCENARIO

Scenarios:
    everything  the TypeScript SDK's everything server behind the gateway, in a session (the
                SDK's `ClientSession`, protocol 2025-11-25): tools/list, echo,
                trigger-long-running-operation with its progress, trigger-sampling-request
                answered by this client's sampling callback, a long operation cancelled at its
                first notification, DELETE
    py-stdio    the same against the Python SDK's stdio server (stdio_server.py): echo,
                progress, sample, a `wait` cancelled and the child's own count of it
    modern      either child through the gateway's pool, the SDK's `Client` pinned to 2026-07-28:
                no initialize, echo, progress, a call cancelled (the Python child, a pool of one,
                then counts it), no session id, POSTs only

Prints `ok: ...` and exits 0, or `FAIL (step): reason` and exits 1, within OVERALL_TIMEOUT_S.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable

import anyio
from client import MODERN_VERSION, Failed, WireLog, check, describe, fail, step, text
from mcp import Client, ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

OVERALL_TIMEOUT_S = 60
# How long a call's first progress notification, and then the child's count of cancelled
# calls, may take.
WAIT_S = 15
CANCEL_POLLS = 50
CANCEL_POLL_S = 0.1


@dataclass
class Child:
    """The tools of one stdio server and how this script calls them."""

    tools: list[str]
    echo: Callable[[str], tuple[str, dict[str, Any], str]]
    progress: tuple[str, dict[str, Any]]
    sample: Callable[[str], tuple[str, dict[str, Any]]] | None
    slow: tuple[str, dict[str, Any]]
    counts_cancels: bool


EVERYTHING = Child(
    tools=["echo", "trigger-long-running-operation", "trigger-sampling-request"],
    echo=lambda t: ("echo", {"message": t}, f"Echo: {t}"),
    progress=("trigger-long-running-operation", {"duration": 0.25, "steps": 5}),
    sample=lambda p: ("trigger-sampling-request", {"prompt": p, "maxTokens": 16}),
    slow=("trigger-long-running-operation", {"duration": 2, "steps": 4}),
    counts_cancels=False,
)
PY_STDIO = Child(
    tools=["cancelled", "echo", "progress", "sample", "wait"],
    echo=lambda t: ("echo", {"text": t}, t),
    progress=("progress", {"steps": 5, "delay_ms": 20}),
    sample=lambda p: ("sample", {"prompt": p}),
    slow=("wait", {"ms": 20_000}),
    counts_cancels=True,
)
CHILDREN = {"everything": EVERYTHING, "py-stdio": PY_STDIO}
# The children by the name their `initialize` gives, for the per-request scenario.
BY_SERVER_NAME = {"mcp-servers/everything": EVERYTHING, "interop-py-stdio": PY_STDIO}


async def echo(client: Any, child: Child, words: str) -> None:
    name, arguments, expected = child.echo(words)
    result = await client.call_tool(name, arguments)
    check(text(result) == expected, f"echo answered {result}")


async def progress(client: Any, child: Child) -> None:
    seen: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(value)

    name, arguments = child.progress
    await client.call_tool(name, arguments, progress_callback=on_progress)
    check(seen == [1, 2, 3, 4, 5], f"progress notifications {seen}")


async def cancel_slow(client: Any, child: Child) -> None:
    """Calls the slow tool and cancels it (the SDK's abandon: `notifications/cancelled`, or the
    stream closed at 2026-07-28) at its first progress notification."""
    first = anyio.Event()
    answered: list[Any] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        first.set()

    scope = anyio.CancelScope()

    async def slow() -> None:
        with scope:
            name, arguments = child.slow
            answered.append(await client.call_tool(name, arguments, progress_callback=on_progress))

    async with anyio.create_task_group() as group:
        group.start_soon(slow)
        with anyio.fail_after(WAIT_S):
            await first.wait()
        scope.cancel()
    check(not answered, f"the cancelled call was answered {answered}")
    if child.counts_cancels:
        for _ in range(CANCEL_POLLS):
            seen = text(await client.call_tool("cancelled", {}))
            if seen == "1":
                break
            await anyio.sleep(CANCEL_POLL_S)
        else:
            raise Failed("the child counted no cancelled wait")
    await echo(client, child, "after the cancel")


async def sampled(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    prompt = " ".join(m.content.text for m in params.messages if isinstance(m.content, types.TextContent))
    samples.append(prompt)
    return types.CreateMessageResult(
        model="interop", role="assistant", content=types.TextContent(type="text", text=f"sampled: {prompt}")
    )


samples: list[str] = []


async def run_session(url: str, scenario: str) -> str:
    child = CHILDREN[scenario]
    wire = WireLog()
    http = create_mcp_http_client()
    http.event_hooks["response"].append(wire.on_response)
    try:
        async with http:
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write, sampling_callback=sampled) as session:
                    step("initialize")
                    await session.initialize()
                    check(len(wire.session_ids) == 1, f"session ids {wire.session_ids}")
                    step("tools/list")
                    names = sorted(tool.name for tool in (await session.list_tools()).tools)
                    check(all(name in names for name in child.tools), f"tools {names}")
                    step("echo")
                    await echo(session, child, "through the gateway")
                    step("progress")
                    await progress(session, child)
                    step("sampling")
                    name, arguments = child.sample("gateway sampling")
                    answer = text(await session.call_tool(name, arguments))
                    check(samples and "gateway sampling" in samples[0], f"the child asked {samples}")
                    check(answer and "sampled: " in answer, f"the tool returned {answer!r}")
                    step("cancel")
                    await cancel_slow(session, child)
            step("terminate")
            deleted = wire.find("DELETE")
            check(deleted and 200 <= deleted[1] < 300, f"DELETE answered {deleted and deleted[1]}")
    except Exception as error:
        fail(f"{describe(error)}\n  wire: {wire}")
    return "initialize, tools/list, echo, 5 progress in order, sampling through the gateway, cancel, DELETE"


async def run_modern(url: str) -> str:
    wire = WireLog()
    http = create_mcp_http_client()
    http.event_hooks["request"].append(wire.on_request)
    http.event_hooks["response"].append(wire.on_response)
    try:
        async with http:
            step("connect")
            transport = streamable_http_client(url, http_client=http)
            async with Client(transport, mode=MODERN_VERSION) as client:
                check(client.protocol_version == MODERN_VERSION, f"protocol {client.protocol_version}")
                step("tools/list")
                names = sorted(tool.name for tool in (await client.list_tools()).tools)
                child = EVERYTHING if "trigger-long-running-operation" in names else PY_STDIO
                check(all(name in names for name in child.tools if name != "trigger-sampling-request"), f"tools {names}")
                step("echo")
                await echo(client, child, "per request through the gateway")
                step("progress")
                await progress(client, child)
                step("cancel")
                await cancel_slow(client, child)
        step("wire")
        check(not wire.session_ids, f"session ids {wire.session_ids}")
        others = [method for method in wire.methods if method != "POST"]
        check(not others, f"requests other than POSTs: {others}")
        check(not wire.find("POST initialize"), "the SDK sent initialize")
        check(wire.versions == {MODERN_VERSION}, f"POSTs carried MCP-Protocol-Version {wire.versions}")
    except Exception as error:
        fail(f"{describe(error)}\n  wire: {wire}")
    return "2026-07-28 through the pool: tools/list, echo, 5 progress in order, cancel, POSTs only, no session"


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[2] not in (*CHILDREN, "modern"):
        print("FAIL (usage): python gateway.py URL everything|py-stdio|modern", flush=True)
        sys.exit(1)
    url, scenario = sys.argv[1:]
    timer = threading.Timer(OVERALL_TIMEOUT_S, lambda: fail(f"timed out after {OVERALL_TIMEOUT_S} s"))
    timer.daemon = True
    timer.start()
    what = anyio.run(run_modern, url) if scenario == "modern" else anyio.run(run_session, url, scenario)
    print(f"ok: py-client {scenario}: {what}", flush=True)


if __name__ == "__main__":
    main()
