"""Alice asks which tools fit a task: she gets a set within her budget, each with its reason;
charlie's suggestions never include alice's private tools, and bad input changes nothing."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from apps.accounts.services import create_access_token
from apps.catalog.models import McpServer, Tool

pytestmark = pytest.mark.django_db


def _client(user) -> APIClient:
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {create_access_token(user=user, name='t', scope='api_write')[1]}"
    )
    return client


def _tool(server: McpServer, name: str, description: str, tokens: int) -> Tool:
    return Tool.objects.create(
        server=server,
        name=name,
        description=description,
        input_schema={"type": "object"},
        token_estimate=tokens,
    )


@pytest.fixture
def catalog(alice_private_server):
    web = McpServer.objects.create(name="web", transport="stdio", command="web-server")
    _tool(
        web,
        "get_weather_forecast",
        "Weather forecast for a city: temperature, rain and wind for the next days.",
        120,
    )
    _tool(web, "current_weather", "The weather right now in a city.", 80)
    _tool(web, "send_email", "Send an email message to a recipient.", 90)
    _tool(web, "convert_currency", "Convert an amount between currencies at today's rate.", 70)
    _tool(alice_private_server, "read_notes", "Read alice's private notes.", 50)


def _suggest(client: APIClient, endpoint, **body):
    return client.post(f"/api/endpoints/{endpoint.slug}/suggest/", body, format="json")


def test_alice_gets_the_weather_tools_for_a_weather_task_within_her_budget(alice, catalog):
    reply = _suggest(
        _client(alice),
        alice.endpoints.get(),
        task="What will the weather be in Paris tomorrow?",
        budget=150,
    )

    body = reply.json()
    assert reply.status_code == 200, body
    assert body["tools"][0]["key"] in {"web.current_weather", "web.get_weather_forecast"}
    assert body["tokens"] <= 150 and body["tokens"] == sum(t["tokens"] for t in body["tools"])
    assert "weather" in body["tools"][0]["reason"]
    assert body["left_out"] >= 1  # both weather tools are relevant; only one fits 150 tokens
    assert "web.send_email" not in [t["key"] for t in body["tools"]]


def test_charlie_never_gets_alices_private_tools(alice, charlie, catalog):
    as_charlie = _client(charlie)
    his = _suggest(as_charlie, charlie.endpoints.get(), task="read my private notes").json()
    hers = _suggest(_client(alice), alice.endpoints.get(), task="read my private notes").json()
    peeking = _suggest(as_charlie, alice.endpoints.get(), task="read my private notes")

    assert "alice-notes.read_notes" in [t["key"] for t in hers["tools"]]
    assert all(not t["key"].startswith("alice-notes.") for t in his["tools"])
    assert peeking.status_code == 404


@pytest.mark.parametrize(
    "body",
    [{"task": ""}, {"task": "weather", "budget": 0}, {"budget": 100}, {"task": "x", "limit": 1000}],
)
def test_bad_input_is_a_clear_400(alice, catalog, body):
    reply = _suggest(_client(alice), alice.endpoints.get(), **body)

    assert reply.status_code == 400
    assert set(reply.json()) & {"task", "budget", "limit"}
