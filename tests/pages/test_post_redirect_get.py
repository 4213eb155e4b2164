"""Every form that creates something answers with a redirect, so reloading the page it lands on creates nothing."""

from __future__ import annotations

import json

import pytest

from apps.accounts.models import AccessToken
from apps.catalog.models import McpServer
from apps.chat.models import Conversation
from apps.toolsets.models import Endpoint, Preset

CONFIG = json.dumps(
    {"mcpServers": {"notes": {"type": "http", "url": "https://notes.example.com/mcp"}}}
)


def _digest(client) -> str:
    return client.post("/servers/import/", {"text": CONFIG, "preview": "1"}).context["digest"]


CREATIONS = [
    (
        "token",
        lambda c, u: (f"/endpoints/{u.endpoints.get().slug}/", {"name": "laptop"}),
        AccessToken,
    ),
    (
        "endpoint",
        lambda c, u: (
            "/endpoint/new/",
            {
                "name": "Research",
                "naming_strategy": "hybrid",
                "mode": "static",
                "token_budget": "1000",
            },
        ),
        Endpoint,
    ),
    ("preset", lambda c, u: ("/presets/save/", {"name": "review"}), Preset),
    ("conversation", lambda c, u: ("/chat/new/", {}), Conversation),
    (
        "import",
        lambda c, u: ("/servers/import/", {"text": CONFIG, "previewed": _digest(c), "apply": "1"}),
        McpServer,
    ),
]


@pytest.mark.parametrize("what,request_for,model", CREATIONS, ids=[c[0] for c in CREATIONS])
def test_creating_redirects_and_a_reload_creates_nothing_more(
    client, admin_user, what, request_for, model
):
    client.force_login(admin_user)
    path, data = request_for(client, admin_user)
    before = model.objects.count()

    response = client.post(path, data)
    assert response.status_code == 302, response.content.decode()[:500]
    client.get(response["Location"])
    client.get(response["Location"])

    assert model.objects.count() == before + 1
