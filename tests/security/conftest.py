"""The world the permission matrices look at: alice's things, some shared with bob's team."""

from __future__ import annotations

import types
from dataclasses import dataclass

import pytest
from django.conf import settings

from apps.accounts.models import Membership, TokenScope
from apps.accounts.services import add_member, create_access_token, create_team
from apps.catalog import operations
from apps.catalog.models import McpServer
from apps.chat.services import create_conversation
from apps.discovery.services import create_pattern
from apps.llm import services as llm_services
from apps.llm.services import create_provider
from apps.toolsets.models import ToolCall
from apps.toolsets.services import create_endpoint, create_preset, enable_tools

PRIVATE = "zqx-alice"  # in the name of everything only alice may see
TEAM = "zqt-team"  # in the name of what alice shares with her team (bob)


@pytest.fixture(scope="module")
def healthy_needs(request) -> None:
    """What a web process of its own needs to answer /health with 200: with REDIS_URL, a live pool
    worker (the session hub's)."""
    if settings.REDIS_URL:
        request.getfixturevalue("hub")


@dataclass
class World:
    endpoint: str
    server: str
    preset: int
    team: str
    token: int
    provider: int
    conversation: str
    tool_id: int
    pattern: int
    run: str = ""
    connection: int = 0  # an app alice allowed onto her endpoint with OAuth


@pytest.fixture
def world(alice, bob, charlie, dave, global_server, make_tool, settings, monkeypatch) -> World:
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_CLASSES": []}
    # Operations that would reach a backend: the matrix is about who may, not about backends.
    monkeypatch.setattr(
        operations,
        "check_health",
        lambda server, user=None: types.SimpleNamespace(
            status="down", round_trip_ms=None, reason="stub", ok=False, skipped=False
        ),
    )
    monkeypatch.setattr(
        operations,
        "discover_now",
        lambda server, user=None: types.SimpleNamespace(ok=False, report=None, error="stub"),
    )
    monkeypatch.setattr(
        llm_services,
        "list_models",
        lambda provider: llm_services.ConnectionCheck(ok=True, models=["m"]),
    )
    monkeypatch.setattr(
        operations,
        "live_state",
        lambda server_name: types.SimpleNamespace(
            stderr="", error="stub", stats=types.SimpleNamespace(as_dict=dict)
        ),
    )
    now = make_tool(global_server, "now")
    server = McpServer.objects.create(
        name=f"{PRIVATE}-notes",
        transport="streamable_http",
        url="http://127.0.0.1:9/mcp",
        headers={"X-Token": "${user:TOKEN}"},  # each user's own: /my-credentials/
        visibility=McpServer.Visibility.PRIVATE,
        owner=alice,
        enabled=False,
    )
    private_tool = make_tool(server, "search")
    endpoint = create_endpoint(owner=alice, name=f"{PRIVATE} work")
    enable_tools(endpoint=endpoint, tools=[now, private_tool])
    team = create_team(name=f"{TEAM} ops", slug=f"{TEAM}-ops", owner=alice)
    add_member(team=team, user=bob, role=Membership.Role.MEMBER)
    create_preset(owner=alice, name=f"{TEAM} shared", tool_keys=["time.now"], team=team)
    preset = create_preset(
        owner=alice, name=f"{PRIVATE} preset", tool_keys=["time.now", server.name + ".search"]
    )
    token, _ = create_access_token(user=alice, name=f"{PRIVATE} laptop", scope=TokenScope.API_READ)
    provider = create_provider(
        actor=alice, name=f"{PRIVATE} llm", kind="openai", base_url="http://127.0.0.1:9/v1"
    )
    conversation = create_conversation(
        owner=alice, title=f"{PRIVATE} chat", provider=provider, endpoint=endpoint
    )
    ToolCall.objects.create(
        user=alice,
        endpoint=endpoint,
        tool=private_tool,
        server_name=server.name,
        tool_name="search",
        exposed_name="search",
        started_at=conversation.created_at,
        duration_ms=3.0,
        ok=True,
    )
    pattern = create_pattern(endpoint=endpoint, pattern=f"{PRIVATE}-re", targets=["time.now"])
    from apps.chat.runs.models import Run

    run = Run.objects.create(
        owner=alice,
        task=f"{PRIVATE} task",
        provider=provider,
        endpoint=endpoint,
        status="interrupted",
        pending_approvals=[{"id": "c1", "name": "search", "arguments": {}}],
    )
    from oauth2_provider.models import Application

    from apps.oauth.models import ConnectedApp

    app = Application.objects.create(
        name=f"{PRIVATE} app",
        client_type="public",
        authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1:9/cb",
    )
    connection = ConnectedApp.objects.create(application=app, endpoint=endpoint)
    return World(
        endpoint.slug,
        server.name,
        preset.pk,
        team.slug,
        token.pk,
        provider.pk,
        str(conversation.pk),
        private_tool.pk,
        pattern.pk,
        str(run.pk),
        connection.pk,
    )
