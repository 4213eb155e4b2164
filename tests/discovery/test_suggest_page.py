"""The Tools page's "Which tools for this task?" box: alice gets reasons and applies the
suggestion in one click; nothing of alice's private servers reaches charlie's endpoint."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.catalog.models import McpServer, Tool
from apps.toolsets.models import Preset

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def _login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def web_tools(db):
    web = McpServer.objects.create(name="web", transport="stdio", command="web-server")
    for name, description, tokens in (
        ("get_weather_forecast", "Weather forecast for a city.", 120),
        ("current_weather", "The weather right now.", 80),
        ("send_email", "Send an email.", 90),
    ):
        Tool.objects.create(
            server=web,
            name=name,
            description=description,
            input_schema={"type": "object"},
            token_estimate=tokens,
        )
    return web


def test_alice_sees_why_each_tool_is_suggested_and_applies_them(alice, web_tools):
    as_alice, endpoint = _login(alice), alice.endpoints.get()
    Tool.objects.filter(name="send_email").get().endpoint_tools.create(endpoint=endpoint)

    page = as_alice.post(
        f"/endpoints/{endpoint.slug}/suggest/",
        {"task": "weather in Paris", "budget": "1000"},
        **HTMX,
    ).content.decode()
    merged = as_alice.post(
        f"/endpoints/{endpoint.slug}/suggest/apply/",
        {"mode": "merge", "tools": ["web.current_weather"]},
    )
    after_merge = sorted(endpoint.tools.values_list("name", flat=True))
    as_alice.post(
        f"/endpoints/{endpoint.slug}/suggest/apply/",
        {"mode": "replace", "tools": ["web.get_weather_forecast"]},
    )
    after_replace = sorted(endpoint.tools.values_list("name", flat=True))
    as_alice.post(
        f"/endpoints/{endpoint.slug}/suggest/apply/",
        {"mode": "preset", "name": "Weather", "tools": ["web.current_weather"]},
    )

    assert "get_weather_forecast" in page and "matches: weather" in page
    assert merged.status_code == 302
    assert after_merge == ["current_weather", "send_email"]
    assert after_replace == ["get_weather_forecast"]
    assert Preset.objects.get(owner=alice, name="Weather").latest_version.tool_keys == [
        "web.current_weather"
    ]


def test_bad_input_and_other_peoples_tools_change_nothing(
    alice, charlie, alice_private_server, web_tools, make_tool
):
    make_tool(alice_private_server, "read_notes")
    as_charlie, endpoint = _login(charlie), charlie.endpoints.get()

    no_task = as_charlie.post(
        f"/endpoints/{endpoint.slug}/suggest/", {"task": " ", "budget": "10"}, **HTMX
    ).content.decode()
    bad_budget = as_charlie.post(
        f"/endpoints/{endpoint.slug}/suggest/", {"task": "weather", "budget": "-5"}, **HTMX
    ).content.decode()
    sneaky = as_charlie.post(
        f"/endpoints/{endpoint.slug}/suggest/apply/",
        {"mode": "merge", "tools": ["alice-notes.read_notes"]},
        follow=True,
    )
    foreign = as_charlie.post(
        f"/endpoints/{alice.endpoints.get().slug}/suggest/", {"task": "notes"}, **HTMX
    )

    assert "Describe the task" in no_task and "Describe the task" in bad_budget
    assert "Nothing applied" in sneaky.content.decode()
    assert endpoint.tools.count() == 0
    assert foreign.status_code == 404
