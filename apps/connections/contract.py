"""`PoolAPI`: the one interface of a pool, whichever process holds the connections.

`Pool` (this process holds the backends) and `RemotePool` (pool workers hold them, reached
through Redis) both implement it, and `wire.OPS` / `wire.NAME_OPS` carry each of its
operations to the worker; `tests/connections/test_contract.py` fails when the Protocol, the
two classes and the wire drift apart. Callers type against `PoolAPI`.

Operations taking a `ServerSpec` open (or reuse) that server's connection; `stderr_tail`
and `close` take a pool key (a server name, or `name#partition`); `stats` takes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, Self

if TYPE_CHECKING:
    import mcp_types as types

    from apps.connections.hooks import ProgressFn, Relay
    from apps.connections.listing import Discovery
    from apps.connections.specs import ServerSpec


class PoolAPI(Protocol):
    async def call_tool(
        self,
        spec: ServerSpec,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress_callback: ProgressFn | None = None,
        relay: Relay | None = None,
        meta: Mapping[str, Any] | None = None,
        raw: bool = False,
    ) -> Any:
        """The backend's `CallToolResult`; with `raw=True`, the result as a JSON-ready dict."""
        ...

    async def list_tools(
        self, spec: ServerSpec, *, timeout: float | None = None
    ) -> list[types.Tool]: ...

    async def list_resources(
        self, spec: ServerSpec, *, timeout: float | None = None
    ) -> list[types.Resource]: ...

    async def list_resource_templates(
        self, spec: ServerSpec, *, timeout: float | None = None
    ) -> list[types.ResourceTemplate]: ...

    async def list_prompts(
        self, spec: ServerSpec, *, timeout: float | None = None
    ) -> list[types.Prompt]: ...

    async def read_resource(
        self,
        spec: ServerSpec,
        uri: str,
        *,
        timeout: float | None = None,
        relay: Relay | None = None,
    ) -> types.ReadResourceResult: ...

    async def subscribe_resource(
        self, spec: ServerSpec, uri: str, *, timeout: float | None = None
    ) -> None:
        """Ask for `notifications/resources/updated` about `uri`; again after a restart."""
        ...

    async def get_prompt(
        self,
        spec: ServerSpec,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
        relay: Relay | None = None,
    ) -> types.GetPromptResult: ...

    async def complete(
        self,
        spec: ServerSpec,
        ref: types.ResourceTemplateReference | types.PromptReference,
        argument: Mapping[str, str],
        context_arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> types.CompleteResult: ...

    async def task_request(
        self,
        spec: ServerSpec,
        method: str,
        params: Mapping[str, Any],
        *,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """An MCP 2025-11-25 task request to the backend, its result as JSON: a task-augmented
        `tools/call` (params carry `task`), `tasks/get`, `tasks/result` or `tasks/cancel`."""
        ...

    async def ping(self, spec: ServerSpec, *, timeout: float | None = None) -> float:
        """Round-trip seconds of a ping (connecting first if needed)."""
        ...

    async def discover(self, spec: ServerSpec, *, timeout: float | None = None) -> Discovery: ...

    async def stderr_tail(self, name: str) -> str: ...

    async def close(self, name: str) -> None:
        """Close one pool key's connection; a plain server name closes its per-user ones too."""
        ...

    async def stats(self) -> dict[str, Any]: ...

    async def hand_off(self, kind: str, work_id: str) -> bool:
        """Start work of `kind` (a chat turn, a run: `worker.take_work`) in a process that holds
        connections, if one takes it now; False: the caller starts it its own way (Celery)."""
        ...

    async def aclose(self) -> None: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, *exc: object) -> None: ...


# MCP 2025-11-25 task requests a gateway client's task may need a backend to answer.
TASK_METHODS = frozenset({"tools/call", "tasks/get", "tasks/result", "tasks/cancel"})

# Methods that are not operations sent to a worker as calls: the pool's lifecycle, and work handed
# over (a message of its own on a link).
NOT_OPS = frozenset({"aclose", "__aenter__", "__aexit__", "hand_off"})
