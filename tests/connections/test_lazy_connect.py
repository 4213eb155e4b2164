"""An admin registers servers; nothing starts until the first call, then the session stays open."""

import pytest
from mcp.shared.exceptions import MCPError

from tests.connections.conftest import child_pids, sdk_spec, text, tiny_spec

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


async def test_first_call_opens_the_connection_and_keeps_it(pool):
    spec = tiny_spec()
    assert child_pids() == []
    assert text(await pool.call_tool(spec, "echo", {"text": "hello"})) == "hello"
    pid = (await pool.stats())["servers"]["tiny"]["pid"]
    assert text(await pool.call_tool(spec, "echo", {"text": "again"})) == "again"
    stats = await pool.stats()
    assert stats["open_sessions"] == 1 and stats["servers"]["tiny"]["pid"] == pid == child_pids()[0]


async def test_discovery_returns_the_whole_catalog_of_an_sdk_server(pool):
    spec = sdk_spec("echo")
    found = await pool.discover(spec)
    assert found.server_info.name == "echo" and found.instructions == "Echoes things back."
    assert {"echo", "add", "slow", "crash"} <= {tool.name for tool in found.tools}
    assert [r.uri for r in found.resources] == ["echo://static"]
    assert [t.uri_template for t in found.resource_templates] == ["echo://item/{item_id}"]
    assert [p.name for p in found.prompts] == ["greet"]
    assert found.config_hash == spec.config_hash
    assert type(found).from_wire(found.to_wire()) == found

    assert (await pool.call_tool(spec, "add", {"a": 2, "b": 3})).structured_content == {"result": 5}
    assert (await pool.read_resource(spec, "echo://item/7")).contents[0].text == "item 7"
    assert (
        "Hello, Ada!"
        in (await pool.get_prompt(spec, "greet", {"name": "Ada"})).messages[0].content.text
    )
    assert await pool.ping(spec) > 0


async def test_backend_errors_keep_their_json_rpc_shape(pool):
    spec = tiny_spec()
    assert (await pool.call_tool(spec, "no_such_tool", {})).is_error
    with pytest.raises(MCPError) as excinfo:
        await pool.list_prompts(spec)  # tiny has no prompts/list
    assert excinfo.value.code == -32601


async def test_listings_follow_every_cursor(pool):
    spec = sdk_spec("paged", "paged.py")
    assert len(await pool.list_tools(spec)) == 25
    assert len(await pool.list_resources(spec)) == 12
    assert len(await pool.list_prompts(spec)) == 3
    found = await pool.discover(spec)
    assert (len(found.tools), len(found.resources), len(found.prompts)) == (25, 12, 3)
