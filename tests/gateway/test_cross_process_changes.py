"""A shell changes the catalog or alice's tools (`mcp_import` of an edited config, `mcp_enable`)
while the hub runs: the hub's next call sees it and her connected clients are told, in both shapes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
from asgiref.sync import sync_to_async

from apps.catalog.models import Tool
from tests.catalog.conftest import tiny_args
from tests.gateway.test_list_changed import _collector
from tests.live_hub import ROOT, hub_env, mcp_client
from tests.waiting import eventually_async

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


def _manage(*args: str) -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=hub_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture
def shell(tmp_path):
    """Runs manage.py commands in another process, as a user at a terminal would."""

    async def run(*args: str) -> None:
        await sync_to_async(_manage, thread_sensitive=False)(*args)

    def config(greeting: str) -> str:
        path = tmp_path / ".mcp.json"
        path.write_text(
            json.dumps(
                {
                    "mcpServers": {
                        "tiny": {
                            "command": sys.executable,
                            "args": tiny_args(),
                            "env": {"GREETING": greeting},
                        }
                    }
                }
            )
        )
        return str(path)

    run.config = config
    return run


async def _tiny_with_env_enabled_for(alice, shell) -> str:
    await shell("mcp_import", shell.config("one"))
    await eventually_async(
        sync_to_async(lambda: Tool.objects.filter(server__name="tiny", name="env").exists()),
        timeout=20,
    )
    await shell("mcp_enable", "--user", "alice", "tiny.env")
    return (await sync_to_async(alice.endpoints.get)()).path


async def test_a_reimported_env_value_reaches_the_next_call(hub, alice, alice_hub_token, shell):
    path = await _tiny_with_env_enabled_for(alice, shell)

    async with mcp_client(hub.url(path), alice_hub_token) as client:
        before = await client.call_tool("env", {"name": "GREETING"})
        await shell("mcp_import", shell.config("two"))
        after = await client.call_tool("env", {"name": "GREETING"})

    assert before.content[0].text == "one"
    assert after.content[0].text == "two"


async def test_mcp_enable_in_a_shell_pushes_list_changed_and_the_next_list_has_the_tool(
    hub, alice, alice_hub_token, shell
):
    path = await _tiny_with_env_enabled_for(alice, shell)
    handler, changed = _collector()

    async with mcp_client(hub.url(path), alice_hub_token, message_handler=handler) as client:
        before = {tool.name for tool in (await client.list_tools()).tools}
        await asyncio.sleep(0.5)  # let the client open its notification stream
        await shell("mcp_enable", "--user", "alice", "tiny.echo")
        await asyncio.wait_for(changed.wait(), 10)
        after = {tool.name for tool in (await client.list_tools()).tools}

    assert after - before == {"echo"}
