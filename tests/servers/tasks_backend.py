"""A stdio MCP server that runs tool calls as tasks (MCP 2025-11-25), for the hub's pass-through.

Written on plain JSON-RPC lines: the `mcp` SDK 2.x server has the task types but dispatches no
`tasks/*`. Tools: `slow_sum(a, b, seconds)` (taskSupport optional: a plain call waits, a
task-augmented one answers at once) and `long_job(seconds)` (taskSupport required: a plain call is
-32601; it runs until done or cancelled). Task ids are this server's own (`backend-N`), so a test
can tell them from the hub's.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from datetime import UTC, datetime
from typing import Any

VERSIONS = ("2025-03-26", "2025-06-18", "2025-11-25")
TOOLS = [
    {
        "name": "slow_sum",
        "description": "Add two numbers, slowly.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "a": {"type": "number"},
                "b": {"type": "number"},
                "seconds": {"type": "number"},
            },
            "required": ["a", "b"],
        },
        "execution": {"taskSupport": "optional"},
    },
    {
        "name": "long_job",
        "description": "Work for a while; only as a task.",
        "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}},
        "execution": {"taskSupport": "required"},
    },
]
RELATED = "io.modelcontextprotocol/related-task"

_ids = itertools.count(1)
_tasks: dict[str, dict[str, Any]] = {}


def now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


class Error(Exception):
    def __init__(self, code: int, message: str) -> None:
        self.code, self.message = code, message


async def run_tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(float(arguments.get("seconds", 0.2)))
    if name == "slow_sum":
        total = arguments["a"] + arguments["b"]
        return {"content": [{"type": "text", "text": f"sum is {total}"}], "isError": False}
    return {"content": [{"type": "text", "text": "job done"}], "isError": False}


def public(task: dict[str, Any]) -> dict[str, Any]:
    return {k: task[k] for k in ("taskId", "status", "createdAt", "lastUpdatedAt", "ttl")} | {
        "pollInterval": 100,
        **({"statusMessage": task["statusMessage"]} if task.get("statusMessage") else {}),
    }


def known(params: dict[str, Any]) -> dict[str, Any]:
    task = _tasks.get(params.get("taskId", ""))
    if task is None:
        raise Error(-32602, "Failed to retrieve task: Task not found")
    return task


async def start_task(name: str, arguments: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    task_id = f"backend-{next(_ids)}"
    task = {
        "taskId": task_id,
        "status": "working",
        "createdAt": now(),
        "lastUpdatedAt": now(),
        "ttl": meta.get("ttl", 60000),
        "done": asyncio.Event(),
        "result": None,
    }
    _tasks[task_id] = task

    async def work() -> None:
        try:
            task["result"] = await run_tool(name, arguments)
            task["status"] = "completed"
        except asyncio.CancelledError:
            task["result"] = {"content": [{"type": "text", "text": "cancelled"}], "isError": True}
        finally:
            task["lastUpdatedAt"] = now()
            task["done"].set()

    task["worker"] = asyncio.get_running_loop().create_task(work())
    return {"task": public(task)}


async def handle(method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "initialize":
        asked = params.get("protocolVersion")
        return {
            "protocolVersion": asked if asked in VERSIONS else VERSIONS[-1],
            "capabilities": {
                "tools": {},
                "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
            },
            "serverInfo": {"name": "tasks-backend", "version": "1"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        name, arguments = params.get("name"), params.get("arguments") or {}
        if name not in ("slow_sum", "long_job"):
            raise Error(-32602, f"Unknown tool: {name}")
        if "task" in params:
            return await start_task(name, arguments, params["task"] or {})
        if name == "long_job":
            raise Error(-32601, "long_job must be called as a task")
        return await run_tool(name, arguments)
    if method == "tasks/get":
        return public(known(params))
    if method == "tasks/result":
        task = known(params)
        await task["done"].wait()
        return {**task["result"], "_meta": {RELATED: {"taskId": task["taskId"]}}}
    if method == "tasks/cancel":
        task = known(params)
        if task["status"] != "working":
            raise Error(-32602, f"Cannot cancel task: already {task['status']}")
        task["status"], task["statusMessage"] = "cancelled", "Cancelled by request."
        task["worker"].cancel()
        return public(task)
    if method == "tasks/list":
        return {"tasks": [public(t) for t in _tasks.values()]}
    raise Error(-32601, f"Method not found: {method}")


async def answer(message: dict[str, Any]) -> None:
    try:
        result = await handle(message["method"], message.get("params") or {})
        send({"jsonrpc": "2.0", "id": message["id"], "result": result})
    except Error as exc:
        send(
            {
                "jsonrpc": "2.0",
                "id": message["id"],
                "error": {"code": exc.code, "message": exc.message},
            }
        )


async def main() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    pending: set[asyncio.Task[None]] = set()
    while line := await reader.readline():
        message = json.loads(line)
        if "method" in message and "id" in message:
            job = loop.create_task(answer(message))
            pending.add(job)
            job.add_done_callback(pending.discard)


if __name__ == "__main__":
    asyncio.run(main())
