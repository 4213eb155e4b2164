"""A tiny MCP server over stdio without the SDK: starts in ~20 ms, for churn and failure tests.

Importing the SDK costs ~2 s of CPU per process, which would make 500 connect/close
cycles take minutes; this speaks just enough JSON-RPC (initialize, ping, tools/*).
Flags: --fail MSG (exit 3 at start), --silent (never answer), --startup-delay S,
--stderr-lines N (flood stderr at start), --stubborn (ignore SIGTERM and stdin EOF: only
SIGKILL ends it), --tag T (a marker in the command line for tests to find it by),
--while PATH (--fail and --silent apply only while the file PATH exists: a fault to fix).
"""

import json
import os
import signal
import sys
import time

TOOLS = ["echo", "env", "env_keys", "argv", "pid", "crash", "sleep", "spam"]


def text(value):
    return {"content": [{"type": "text", "text": str(value)}], "isError": False}


def call(name, args):
    if name == "echo":
        return text(args.get("text", ""))
    if name == "env":
        return text(os.environ.get(args["name"], "<unset>"))
    if name == "env_keys":
        return text(",".join(sorted(os.environ)))
    if name == "argv":
        return text(json.dumps(sys.argv[1:]))
    if name == "pid":
        return text(os.getpid())
    if name == "crash":
        sys.stderr.write("tiny: crashing on request\n")
        sys.stderr.flush()
        os._exit(int(args.get("code", 1)))
    if name == "sleep":
        time.sleep(float(args.get("seconds", 3600)))
        return text("slept")
    if name == "spam":
        for i in range(int(args.get("lines", 1000))):
            sys.stderr.write(f"spam line {i}\n")
        sys.stderr.flush()
        return text("spammed")
    return {"content": [{"type": "text", "text": f"unknown tool {name}"}], "isError": True}


def answer(msg):
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "tiny", "version": "1.0"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in TOOLS]}
    if method == "tools/call":
        return call(params["name"], params.get("arguments") or {})
    return None


def flags():
    argv = sys.argv[1:]
    return {
        argv[i]: (argv[i + 1] if i + 1 < len(argv) else "")
        for i in range(len(argv))
        if argv[i].startswith("--")
    }


def main():
    opts = flags()
    if "--while" in opts and not os.path.exists(opts["--while"]):
        opts.pop("--fail", None)
        opts.pop("--silent", None)
    if "--stubborn" in opts:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "--fail" in opts:
        sys.stderr.write(f"tiny: {opts['--fail']}\n")
        sys.exit(3)
    for i in range(int(opts.get("--stderr-lines", 0) or 0)):
        sys.stderr.write(f"startup noise {i} " + "x" * 100 + "\n")
    sys.stderr.flush()
    time.sleep(float(opts.get("--startup-delay", 0) or 0))
    for line in sys.stdin:
        msg = json.loads(line)
        if "--silent" in opts or "id" not in msg or "method" not in msg:
            continue
        result = answer(msg)
        if result is None:
            reply = {
                "jsonrpc": "2.0",
                "id": msg["id"],
                "error": {"code": -32601, "message": "Method not found"},
            }
        else:
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    while "--stubborn" in opts:
        time.sleep(3600)


main()
