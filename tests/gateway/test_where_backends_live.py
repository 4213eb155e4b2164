"""With REDIS_URL, backends live only in pool workers: the web process never spawns one (its only
child may be the search's encoder process, apps/discovery/embeddings.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from apps.discovery import embeddings
from tests.live_hub import mcp_client

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not settings.REDIS_URL,
        reason="the embedded default holds backends in the web process by design",
    ),
]


def children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.update(int(child) for child in text)
    return found


def command_line(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


async def test_the_call_runs_in_the_worker_and_the_web_process_has_no_backend_child(
    hub, alice_endpoint, alice_hub_token
):
    web, worker = hub.processes

    async with mcp_client(hub.url(alice_endpoint.path), alice_hub_token) as client:
        backend_pid = (await client.call_tool("pid", {})).structured_content["result"]

    web_children = {pid: command_line(pid) for pid in children(web.pid)}
    encoder = f"-m {embeddings.WORKER}"
    assert {pid: line for pid, line in web_children.items() if encoder not in line} == {}
    assert backend_pid in children(worker.pid), (
        backend_pid,
        {pid: command_line(pid) for pid in children(worker.pid)},
    )
    assert "echo.py" in command_line(backend_pid)
