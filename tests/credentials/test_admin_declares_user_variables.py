"""In the admin, a staff user turns a shared server's secret into each user's own (`${user:NAME}`)
and describes it; the page shows the placeholder (no secret) and who filled it, never a value."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from apps.catalog.models import McpServer
from apps.credentials.services import save_credentials
from tests.admin.browser import form_data, submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def github(db) -> McpServer:
    return McpServer.objects.create(
        name="github", command="npx", env={"GITHUB_TOKEN": "ghp_the-admins-own-token"}
    )


def test_the_admin_makes_a_secret_per_user_and_sees_who_filled_it(
    client, admin_user, alice, github
):
    client.force_login(admin_user)
    url = reverse("admin:catalog_mcpserver_change", args=[github.pk])
    described = [
        {
            "name": "GITHUB_TOKEN",
            "label": "GitHub token",
            "help_text": "repo:read",
            "required": True,
        }
    ]

    response = submit(
        client,
        url,
        {"env": "GITHUB_TOKEN=${user:GITHUB_TOKEN}", "user_variables": json.dumps(described)},
    )
    github.refresh_from_db()
    save_credentials(user=alice, server=github, values={"GITHUB_TOKEN": "ghp_alices-own-token"})
    html = client.get(url).content.decode()

    assert response.status_code == 302
    assert github.env == {"GITHUB_TOKEN": "${user:GITHUB_TOKEN}"}
    assert [(v.name, v.label) for v in github.user_variable_list()] == [
        ("GITHUB_TOKEN", "GitHub token")
    ]
    assert form_data(html)["env"] == "GITHUB_TOKEN=${user:GITHUB_TOKEN}", (
        "a placeholder is no secret: shown as written"
    )
    assert "<code>GITHUB_TOKEN</code> (env GITHUB_TOKEN): 1 user(s)" in html
    assert "ghp_alices-own-token" not in html and "ghp_the-admins-own-token" not in html


def test_a_placeholder_in_the_arguments_is_refused_and_nothing_changes(client, admin_user, github):
    client.force_login(admin_user)
    url = reverse("admin:catalog_mcpserver_change", args=[github.pk])

    response = submit(client, url, {"args": "--token\n${user:GITHUB_TOKEN}"})

    assert response.status_code == 200 and "process listings" in response.content.decode()
    github.refresh_from_db()
    assert github.args == [] and github.env == {"GITHUB_TOKEN": "ghp_the-admins-own-token"}
