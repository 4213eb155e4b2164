"""Backends asking for the client's roots get the endpoint's configured ones from chat and from
clients that declare no roots; a client that declares roots answers for itself."""

from __future__ import annotations

import json

import mcp_types as types
import pytest
from django.urls import reverse

from apps.toolsets.models import Endpoint
from tests.chat.conftest import Api, chat_socket, db
from tests.live_hub import mcp_client
from tests.llm_server import Reply

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]

PROJECT = [{"uri": "file:///home/alice/project", "name": "Project"}, {"uri": "file:///srv/data"}]


async def _set_roots(endpoint: Endpoint, roots: list) -> None:
    await db(Endpoint.objects.filter(pk=endpoint.pk).update)(roots=roots)


async def test_a_chat_turn_answers_roots_with_the_endpoints_roots(
    hub, llm, alice_provider, asker_endpoint, alice_hub_token
):
    await _set_roots(asker_endpoint, PROJECT)
    llm.script([Reply(tool_calls=[("c1", "workspace", {})]), Reply(text=["ok"])])
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "what is my workspace?"})
            result = await chat.until("tool_result", id="c1")

    assert result["payload"]["isError"] is False
    assert json.loads(result["payload"]["content"][0]["text"]) == [
        {"uri": "file:///home/alice/project", "name": "Project"},
        {"uri": "file:///srv/data", "name": None},
    ]


async def test_gateway_clients_without_roots_get_the_endpoints_and_others_answer_themselves(
    hub, asker_endpoint, alice_hub_token
):
    async def own_roots(context) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///client", name="mine")])

    async with mcp_client(hub.url(asker_endpoint.path), alice_hub_token) as client:
        empty = json.loads((await client.call_tool("workspace", {})).content[0].text)
        await _set_roots(asker_endpoint, PROJECT)
        configured = json.loads((await client.call_tool("workspace", {})).content[0].text)
    async with mcp_client(
        hub.url(asker_endpoint.path), alice_hub_token, list_roots_callback=own_roots
    ) as client:
        own = json.loads((await client.call_tool("workspace", {})).content[0].text)

    assert empty == []  # none configured: an empty list, not an error
    assert [r["uri"] for r in configured] == ["file:///home/alice/project", "file:///srv/data"]
    assert own == [{"uri": "file:///client", "name": "mine"}]


def test_the_endpoint_page_saves_roots_and_refuses_bad_ones(client, alice):
    endpoint = alice.endpoints.get()
    client.force_login(alice)
    url = reverse("web:endpoint_settings", args=[endpoint.slug])
    fields = {
        "name": "Default",
        "naming_strategy": "hybrid",
        "mode": "static",
        "token_budget": 5000,
    }

    client.post(
        url,
        {
            **fields,
            "sampling": "auto",
            "sampling_max_tokens": 500,
            "roots": "file:///home/alice/project Project\n\nfile:///srv/data\n",
        },
    )
    endpoint.refresh_from_db()
    assert endpoint.roots == PROJECT
    assert (endpoint.sampling, endpoint.sampling_max_tokens) == ("auto", 500)
    page = client.get(reverse("web:endpoint", args=[endpoint.slug])).content.decode()
    assert "file:///home/alice/project Project\nfile:///srv/data</textarea>" in page

    response = client.post(url, {**fields, "roots": "/etc/passwd"}, follow=True)
    assert "must be a file:// URI" in response.content.decode()
    endpoint.refresh_from_db()
    assert endpoint.roots == PROJECT  # unchanged
    client.post(url, fields)  # an older form without the new fields keeps them
    endpoint.refresh_from_db()
    assert endpoint.roots == PROJECT and endpoint.sampling == "auto"
