"""A small stdio MCP server for the gateway's tests: newline-delimited JSON-RPC, no packages.

Usage: server.py [MODE], MODE one of
  normal             (default) answers as below
  exit-on-initialize exits as soon as it reads `initialize`
  mute               reads everything and answers nothing

Tools (each `tools/call` runs on a thread of its own, so calls overlap):
  echo {text}            the text
  sleep {ms, text}       the text after ms milliseconds, or nothing if cancelled first
  pid {}                 the process id
  progress {steps}       `steps` progress notifications (with the call's token), then "done"
  sample {}              asks the client `sampling/createMessage`, returns the answer's text
  cancelled {}           the request ids this process was told were cancelled, as JSON
  stderr {text}          writes the text on stderr, returns "written"
  garble {}              writes a line that is not JSON
  huge {bytes}           a text of `bytes` characters
  received {}            the methods read so far, in order, as JSON (`initialize` as
                         `initialize CLIENT-NAME`)
"""

import json
import os
import sys
import threading
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "normal"
write_lock = threading.Lock()
state_lock = threading.Lock()
cancelled_ids = []
cancel_events = {}
waiting_answers = {}
received = []


def send(message):
    line = json.dumps(message, separators=(",", ":")) + "\n"
    with write_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def text(value):
    return {"content": [{"type": "text", "text": value}]}


def ask_client(method, params):
    """Sends a request to the client and waits (at most 10 s) for its answer."""
    ident = "child-%d" % threading.get_ident()
    done = threading.Event()
    with state_lock:
        waiting_answers[ident] = [done, None]
    send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
    done.wait(10)
    with state_lock:
        return waiting_answers.pop(ident)[1]


def call_tool(request):
    params = request.get("params") or {}
    name = params.get("name")
    args = params.get("arguments") or {}
    ident = request["id"]
    if name == "echo":
        return text(args.get("text", ""))
    if name == "sleep":
        event = threading.Event()
        with state_lock:
            cancel_events[json.dumps(ident)] = event
        if event.wait(args.get("ms", 0) / 1000):
            return None
        return text(args.get("text", "slept"))
    if name == "pid":
        return text(str(os.getpid()))
    if name == "progress":
        token = (params.get("_meta") or {}).get("progressToken")
        for step in range(args.get("steps", 1)):
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": token, "progress": step + 1}})
        return text("done")
    if name == "sample":
        answer = ask_client("sampling/createMessage", {"messages": [], "maxTokens": 1})
        result = (answer or {}).get("result") or {}
        return text((result.get("content") or {}).get("text", "no answer"))
    if name == "cancelled":
        with state_lock:
            return text(json.dumps(cancelled_ids))
    if name == "stderr":
        sys.stderr.write(args.get("text", "") + "\n")
        sys.stderr.flush()
        return text("written")
    if name == "garble":
        with write_lock:
            sys.stdout.write("this is not json\n")
            sys.stdout.flush()
        return None
    if name == "huge":
        return text("x" * args.get("bytes", 0))
    if name == "received":
        with state_lock:
            return text(json.dumps(received))
    return {"content": [], "isError": True}


def serve_call(request):
    result = call_tool(request)
    if result is not None:
        send({"jsonrpc": "2.0", "id": request["id"], "result": result})


def handle(message):
    method = message.get("method")
    if method is not None:
        with state_lock:
            if method == "initialize":
                client = ((message.get("params") or {}).get("clientInfo") or {}).get("name")
                received.append("initialize %s" % client)
            else:
                received.append(method)
    if method is None:
        with state_lock:
            slot = waiting_answers.get(message.get("id"))
        if slot is not None:
            slot[1] = message
            slot[0].set()
        return
    if MODE == "mute":
        return
    if method == "initialize":
        if MODE == "exit-on-initialize":
            os._exit(3)
        version = message["params"].get("protocolVersion", "2025-06-18")
        send({"jsonrpc": "2.0", "id": message["id"], "result": {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "test-child", "version": "1"},
        }})
    elif method == "notifications/cancelled":
        ident = message["params"]["requestId"]
        with state_lock:
            cancelled_ids.append(ident)
            event = cancel_events.get(json.dumps(ident))
        if event is not None:
            event.set()
    elif method == "tools/call":
        threading.Thread(target=serve_call, args=(message,), daemon=True).start()
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}})
    elif "id" in message:
        send({"jsonrpc": "2.0", "id": message["id"], "result": {}})


def main():
    for line in sys.stdin:
        if line.strip():
            handle(json.loads(line))


main()
