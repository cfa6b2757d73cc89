"""The stdio MCP server every gateway of the load suite fronts (`mcp-load-suite --gateways`).

Newline-delimited JSON-RPC on stdin and stdout, the standard library only, one thread: as small
as a stdio server gets, so that what the suite measures is the gateway. It answers
`initialize`, `ping`, `tools/list` and `tools/call`, ignores notifications, and exits when
stdin ends (so a gateway that is killed leaves no child behind).

Tools:
  echo {text}   the text
  pid {}        this process's id (the child-death measurement kills it)
  sleep {ms}    "slept" after ms milliseconds (a timer: other requests go on meanwhile)
"""

import json
import os
import sys
import threading

TOOLS = [
    {"name": "echo", "description": "Returns its text.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                     "required": ["text"]}},
    {"name": "pid", "description": "This process's id.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "sleep", "description": "Answers after ms milliseconds.",
     "inputSchema": {"type": "object", "properties": {"ms": {"type": "number"}}}},
]
LOCK = threading.Lock()


def send(message):
    line = json.dumps(message, separators=(",", ":")) + "\n"
    with LOCK:
        sys.stdout.write(line)
        sys.stdout.flush()


def text(value):
    return {"content": [{"type": "text", "text": value}]}


def call(ident, params):
    name = params.get("name")
    args = params.get("arguments") or {}
    if name == "echo":
        return text(args.get("text", ""))
    if name == "pid":
        return text(str(os.getpid()))
    if name == "sleep":
        answer = {"jsonrpc": "2.0", "id": ident, "result": text("slept")}
        threading.Timer(args.get("ms", 0) / 1000, send, [answer]).start()
        return None
    raise KeyError(name)


def answer(request):
    method, ident = request.get("method"), request.get("id")
    params = request.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "echo-child", "version": "0.0.0"}}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        return call(ident, params)
    raise LookupError(method)


def main():
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if "id" not in request or "method" not in request:
            continue  # a notification, or a response to a request we never send
        try:
            result = answer(request)
        except (KeyError, LookupError) as unknown:
            send({"jsonrpc": "2.0", "id": request["id"],
                  "error": {"code": -32601, "message": "unknown: %s" % unknown}})
            continue
        if result is not None:
            send({"jsonrpc": "2.0", "id": request["id"], "result": result})


if __name__ == "__main__":
    main()
