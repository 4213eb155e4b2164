"""Alice's activation patterns: a query or call that matches pre-loads the tools she named;
bad patterns are refused with a clear reason; charlie cannot see or touch hers."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from rest_framework.test import APIClient

from apps.accounts.services import create_access_token
from apps.discovery.services import create_pattern
from apps.toolsets.services import update_endpoint
from tests.live_hub import mcp_client


def _client(user) -> APIClient:
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {create_access_token(user=user, name='t', scope='api_write')[1]}"
    )
    return client


def _url(endpoint, suffix: str = "") -> str:
    return f"/api/endpoints/{endpoint.slug}/patterns/{suffix}"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        (
            {"pattern": "(unclosed", "targets": ["time.now"]},
            "pattern",
            "Not a valid regular expression",
        ),
        ({"pattern": "(?<=a)b", "targets": ["time.now"]}, "pattern", "lookbehind"),
        ({"pattern": "time", "targets": ["Not A Target"]}, "targets", "Not a tool"),
        ({"pattern": "time", "targets": []}, "targets", "List 1 to 50"),
        ({"pattern": "time"}, "targets", "required"),
    ],
)
def test_bad_patterns_are_refused_clearly_and_nothing_is_saved(alice, body, field, words):
    endpoint = alice.endpoints.get()

    reply = _client(alice).post(_url(endpoint), body, format="json")

    assert reply.status_code == 400
    assert words in str(reply.json()[field])
    assert endpoint.activation_patterns.count() == 0


@pytest.mark.django_db
def test_alice_manages_her_patterns_and_charlie_cannot_see_them(alice, charlie):
    endpoint = alice.endpoints.get()
    as_alice = _client(alice)

    created = as_alice.post(
        _url(endpoint),
        {"pattern": r"\btime\b", "targets": ["time.*"], "priority": 5},
        format="json",
    )
    pk = created.json()["id"]
    changed = as_alice.patch(_url(endpoint, f"{pk}/"), {"priority": 9}, format="json")
    charlie_lists = _client(charlie).get(_url(endpoint))
    charlie_deletes = _client(charlie).delete(_url(endpoint, f"{pk}/"))
    listed = as_alice.get(_url(endpoint)).json()

    assert created.status_code == 201 and changed.json()["priority"] == 9
    assert charlie_lists.status_code == 404 and charlie_deletes.status_code == 404
    assert [(p["pattern"], p["targets"], p["priority"]) for p in listed] == [
        (r"\btime\b", ["time.*"], 9)
    ]
    assert as_alice.delete(_url(endpoint, f"{pk}/")).status_code == 204


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_matching_search_preloads_the_named_tools(hub, alice, echo_server, alice_hub_token):
    def setup():
        endpoint = update_endpoint(endpoint=alice.endpoints.get(), mode="dynamic")
        create_pattern(
            endpoint=endpoint, pattern=r"\b(sum|total)\b", targets=["echo.add"], priority=1
        )
        return endpoint

    endpoint = await sync_to_async(setup)()
    heard = asyncio.Event()

    async def handler(message) -> None:
        if (
            getattr(getattr(message, "root", message), "method", None)
            == "notifications/tools/list_changed"
        ):
            heard.set()

    async with mcp_client(
        hub.url(endpoint.path), alice_hub_token, message_handler=handler
    ) as client:
        quiet = await client.call_tool("search_tools", {"query": "repeat my text"})
        before = {t.name for t in (await client.list_tools()).tools}
        found = await client.call_tool("search_tools", {"query": "the total of my invoices"})
        await asyncio.wait_for(heard.wait(), 10)
        after = {t.name for t in (await client.list_tools()).tools}

    assert "activated" not in quiet.structured_content and "add" not in before
    assert found.structured_content["activated"] == {"loaded": ["add"], "unloaded": []}
    assert "add" in after


@pytest.mark.django_db
def test_alice_adds_and_removes_a_pattern_on_her_endpoint_page_and_a_bad_one_says_why(
    alice, charlie
):
    from django.test import Client

    client, endpoint = Client(), alice.endpoints.get()
    client.force_login(alice)
    page = f"/endpoints/{endpoint.slug}/"

    client.post(
        page + "patterns/",
        {"pattern": r"\bissues?\b", "targets": "github.*, slack.post_message", "priority": "3"},
    )
    shown = client.get(page).content.decode()
    refused = client.post(
        page + "patterns/", {"pattern": "(oops", "targets": "github.*"}, follow=True
    ).content.decode()
    pattern = endpoint.activation_patterns.get()
    charlie_client = Client()
    charlie_client.force_login(charlie)
    charlie_try = charlie_client.post(page + f"patterns/{pattern.pk}/delete/")
    client.post(page + f"patterns/{pattern.pk}/delete/")

    assert pattern.targets == ["github.*", "slack.post_message"] and pattern.priority == 3
    assert "github.*, slack.post_message" in shown
    assert "Pattern not added: Not a valid regular expression for RE2" in refused
    assert charlie_try.status_code == 404
    assert endpoint.activation_patterns.count() == 0


@pytest.mark.django_db
def test_pattern_changes_are_in_the_audit_trail(alice):
    from auditlog.models import LogEntry

    from apps.discovery.models import ActivationPattern

    _client(alice).post(
        _url(alice.endpoints.get()), {"pattern": "deploy", "targets": ["ci.*"]}, format="json"
    )

    assert (
        LogEntry.objects.get_for_model(ActivationPattern)
        .filter(action=LogEntry.Action.CREATE)
        .count()
        == 1
    )
