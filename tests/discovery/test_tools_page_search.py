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


def test_the_page_ranks_as_search_tools_does_and_finds_by_meaning(as_alice, alice):
    """The page lists what search_tools would rank (words and meaning fused), in its order:
    a tool that shares no word with the query but means it is listed; unrelated ones are not."""
    from apps.discovery import catalog as discovery_catalog
    from apps.discovery import embeddings
    from tests.waiting import eventually

    if not embeddings.available():
        pytest.skip("the embedding model package is not installed")
    web = McpServer.objects.create(name="web", transport="stdio", command="web-server")
    _tool(web, "convert_currency", "Convert an amount between currencies at today's rate.")
    _tool(web, "get_weather_forecast", "Forecast for a city.")
    _tool(web, "send_email", "Send an email; mention the weather if you like.")
    endpoint = alice.endpoints.get()
    eventually(
        lambda: discovery_catalog.fresh(endpoint.pk).retriever.dense.ready.is_set(),
        timeout=120,
        what="the tools' vectors",
    )
    page = f"/endpoints/{endpoint.slug}/tools/"

    money = as_alice.get(page, {"q": "exchange dollars to euros"}, **HTMX).content.decode()
    weather = as_alice.get(page, {"q": "weather"}, **HTMX).content.decode()
    ranked = [h.entry.name for h in discovery_catalog.fresh(endpoint.pk).search("weather", 3)]

    assert "convert_currency" in money  # no shared word: found by meaning
    assert "send_email" not in money and "get_weather_forecast" not in money
    listed = [name for name in ranked if name in weather]
    assert listed == ranked[: len(listed)] and len(listed) >= 2
    assert [weather.index(name) for name in listed] == sorted(weather.index(n) for n in listed)
