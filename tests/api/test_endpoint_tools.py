"""The per-endpoint calls: list tools with state, toggle one or a server's, replace the set, budget."""

from __future__ import annotations

import asyncio

from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer

from apps.catalog.models import McpServer
from apps.toolsets.events import endpoint_group


def _url(endpoint, suffix: str = "") -> str:
    return f"/api/endpoints/{endpoint.slug}/{suffix}"


def test_alice_lists_every_visible_tool_with_its_enabled_state(
    as_alice, alice_enabled, alice_private_server, make_tool
):
    make_tool(alice_private_server, "read_note", 50)

    rows = as_alice.get(_url(alice_enabled, "tools/")).json()["results"]

    assert [(r["key"], r["enabled"], r["token_estimate"]) for r in rows] == [
        ("alice-notes.read_note", False, 50),
        ("time.convert", False, 300),
        ("time.now", True, 100),
        ("time.zones", False, 600),
    ]


def test_the_tool_list_searches_and_filters(as_alice, alice_enabled):
    def keys(query: str) -> list[str]:
        return [
            r["key"] for r in as_alice.get(_url(alice_enabled, f"tools/?{query}")).json()["results"]
        ]

    assert keys("search=conv") == ["time.convert"]
    assert keys("enabled=true") == ["time.now"]
    assert keys("enabled=false&server=time") == ["time.convert", "time.zones"]
    assert keys("server=nope") == []


def test_enabled_tools_lists_only_those_with_the_budget(as_alice, alice_enabled):
    body = as_alice.get(_url(alice_enabled, "enabled-tools/")).json()

    assert [t["key"] for t in body["tools"]] == ["time.now"]
    assert body["budget"]["used"] == 100


def test_toggling_a_tool_on_and_off(as_alice, alice_enabled):
    on = as_alice.patch(
        _url(alice_enabled, "tools/time.convert/"), {"enabled": True}, format="json"
    )
    assert on.status_code == 200
    assert on.json()["tool"]["enabled"] is True
    assert on.json()["budget"]["used"] == 400

    off = as_alice.patch(_url(alice_enabled, "tools/time.now/"), {"enabled": False}, format="json")
    assert off.json()["budget"]["used"] == 300
    assert [t.key for t in alice_enabled.tools.all()] == ["time.convert"]


def test_a_tool_detail_shows_its_schema_and_annotations(as_alice, alice_enabled, time_tools):
    time_tools["now"].annotations = {"readOnlyHint": True}
    time_tools["now"].save()

    body = as_alice.get(_url(alice_enabled, "tools/time.now/")).json()

    assert body["input_schema"] == {"type": "object"}
    assert body["annotations"] == {"readOnlyHint": True}


def test_enabling_beyond_the_budget_is_refused_saying_by_how_much(as_alice, alice_enabled):
    alice_enabled.token_budget = 500
    alice_enabled.save()

    response = as_alice.patch(
        _url(alice_enabled, "tools/time.zones/"), {"enabled": True}, format="json"
    )

    assert response.status_code == 409
    assert response.json()["over_by"] == 200
    assert "200 over" in response.json()["detail"]
    assert [t.key for t in alice_enabled.tools.all()] == ["time.now"]


def test_a_warn_only_endpoint_goes_over_budget_and_says_so(as_alice, alice_enabled):
    alice_enabled.token_budget, alice_enabled.budget_enforced = 500, False
    alice_enabled.save()

    response = as_alice.patch(
        _url(alice_enabled, "tools/time.zones/"), {"enabled": True}, format="json"
    )

    assert response.status_code == 200
    assert response.json()["budget"] == {
        "used": 700,
        "limit": 500,
        "enforced": False,
        "over_by": 200,
        "percent": 140,
        "state": "over",
    }


def test_replacing_the_enabled_set(as_alice, alice_enabled):
    response = as_alice.put(
        _url(alice_enabled, "enabled-tools/"),
        {"tools": ["time.convert", "time.zones"]},
        format="json",
    )

    assert response.status_code == 200
    assert [t["key"] for t in response.json()["tools"]] == ["time.convert", "time.zones"]
    assert response.json()["budget"]["used"] == 900


def test_replacing_with_unknown_or_hidden_tools_changes_nothing(
    as_bob, bob, alice_private_server, make_tool, time_tools
):
    make_tool(alice_private_server, "read_note")
    endpoint = bob.endpoints.get()

    response = as_bob.put(
        _url(endpoint, "enabled-tools/"),
        {"tools": ["time.now", "alice-notes.read_note"]},
        format="json",
    )

    assert response.status_code == 400
    assert "alice-notes.read_note" in response.json()["tools"][0]
    assert endpoint.tools.count() == 0


def test_a_hidden_or_unknown_tool_cannot_be_toggled(
    as_charlie, charlie, alice_private_server, make_tool
):
    make_tool(alice_private_server, "read_note")
    endpoint = charlie.endpoints.get()

    response = as_charlie.patch(
        _url(endpoint, "tools/alice-notes.read_note/"), {"enabled": True}, format="json"
    )

    assert response.status_code == 404
    assert (
        as_charlie.patch(
            _url(endpoint, "tools/nope.nothing/"), {"enabled": True}, format="json"
        ).status_code
        == 404
    )


def test_toggle_input_is_validated(as_alice, alice_enabled):
    response = as_alice.patch(
        _url(alice_enabled, "tools/time.now/"), {"enabled": "perhaps"}, format="json"
    )

    assert response.status_code == 400
    assert "enabled" in response.json()


def test_an_unavailable_tool_cannot_be_enabled(as_alice, alice_enabled, time_tools):
    time_tools["zones"].available = False
    time_tools["zones"].save()

    response = as_alice.patch(
        _url(alice_enabled, "tools/time.zones/"), {"enabled": True}, format="json"
    )

    assert response.status_code == 400


def test_toggling_a_whole_server(as_alice, alice_enabled, make_tool):
    other = McpServer.objects.create(name="other", command="x")
    make_tool(other, "a")

    on = as_alice.patch(_url(alice_enabled, "servers/time/"), {"enabled": True}, format="json")
    assert on.status_code == 200
    assert on.json()["budget"]["used"] == 1000

    as_alice.patch(_url(alice_enabled, "servers/time/"), {"enabled": False}, format="json")
    assert alice_enabled.tools.count() == 0
    assert (
        as_alice.patch(
            _url(alice_enabled, "servers/missing/"), {"enabled": True}, format="json"
        ).status_code
        == 404
    )


def test_a_toggle_tells_connected_clients_the_list_changed(
    as_alice, alice_enabled, django_capture_on_commit_callbacks
):
    def toggle() -> None:
        with django_capture_on_commit_callbacks(execute=True):
            as_alice.patch(
                _url(alice_enabled, "tools/time.convert/"), {"enabled": True}, format="json"
            )

    async def listen_while_toggling() -> dict:
        # One event loop throughout: the Redis pub/sub layer subscribes per loop.
        layer = get_channel_layer()
        channel = await layer.new_channel()
        await layer.group_add(endpoint_group(alice_enabled.pk), channel)
        await sync_to_async(toggle)()
        return await asyncio.wait_for(layer.receive(channel), timeout=5)

    message = async_to_sync(listen_while_toggling)()

    assert (message["type"], message["endpoint"]) == ("endpoint.tools_changed", alice_enabled.pk)


def test_api_tool_list_filters_enabled_on_the_default_endpoint_or_a_named_one(
    as_alice, alice_enabled, time_tools
):
    rows = as_alice.get("/api/tools/?enabled=true").json()["results"]
    assert [r["key"] for r in rows] == ["time.now"]

    other = as_alice.post(
        "/api/endpoints/", {"name": "Other", "slug": "alice-other"}, format="json"
    ).json()
    assert (
        as_alice.get(f"/api/tools/?endpoint={other['slug']}&enabled=true").json()["results"] == []
    )
    assert as_alice.get("/api/tools/?endpoint=not-mine").json()["results"] == []


def test_api_tools_are_scoped_to_what_each_user_may_see(
    as_alice, as_charlie, alice_private_server, make_tool, time_tools
):
    private = make_tool(alice_private_server, "read_note")

    assert "alice-notes.read_note" in [
        r["key"] for r in as_alice.get("/api/tools/?page_size=100").json()["results"]
    ]
    assert "alice-notes.read_note" not in [
        r["key"] for r in as_charlie.get("/api/tools/").json()["results"]
    ]
    assert as_charlie.get(f"/api/tools/{private.pk}/").status_code == 404
    assert as_alice.get(f"/api/tools/{private.pk}/").json()["input_schema"] == {"type": "object"}
