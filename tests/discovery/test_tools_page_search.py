"""Alice searches the Tools page: results are ranked by the discovery index (word stems, split
tool names, parameters), so "forecasts" finds get_weather_forecast and the best match is first."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.catalog.models import McpServer, Tool

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def _tool(server: McpServer, name: str, description: str, schema: dict | None = None) -> Tool:
    return Tool.objects.create(
        server=server,
        name=name,
        description=description,
        input_schema=schema or {"type": "object"},
        token_estimate=50,
    )


@pytest.fixture
def as_alice(alice) -> Client:
    client = Client()
    client.force_login(alice)
    return client


def test_search_is_ranked_and_understands_word_forms(as_alice, alice, alice_private_server):
    web = McpServer.objects.create(name="web", transport="stdio", command="web-server")
    _tool(web, "get_weather_forecast", "Forecast for a city.")
    _tool(web, "send_email", "Send an email; mention the weather if you like.")
    _tool(
        web,
        "geocode",
        "Coordinates of a place.",
        {"type": "object", "properties": {"city_name": {"type": "string"}}},
    )
    _tool(alice_private_server, "weather_notes", "Notes about weather.")
    page = f"/endpoints/{alice.endpoints.get().slug}/tools/"

    forecasts = as_alice.get(page, {"q": "forecasts"}, **HTMX).content.decode()
    weather = as_alice.get(page, {"q": "weather"}, **HTMX).content.decode()
    city = as_alice.get(page, {"q": "city names"}, **HTMX).content.decode()

    assert "get_weather_forecast" in forecasts and "send_email" not in forecasts
    assert weather.index("get_weather_forecast") < weather.index("send_email")
    assert "weather_notes" in weather  # her own private server's tools are hers to search
    assert "geocode" in city  # found by its parameter's name
