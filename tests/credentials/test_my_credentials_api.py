"""`/api/servers/<name>/my-credentials/`: each user reads whether their values are set, never a value;
writes are checked whole (bad input changes nothing); values are encrypted at rest."""

from __future__ import annotations

import pytest
from django.db import connection
from rest_framework.test import APIClient

from apps.catalog.models import McpServer
from apps.credentials.models import UserCredential

pytestmark = pytest.mark.django_db

URL = "/api/servers/{}/my-credentials/"


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_alice_fills_reads_and_removes_her_own_values(alice, bob, http_server):
    alice_api = client_for(alice)

    before = alice_api.get(URL.format("whttp")).json()
    saved = alice_api.put(
        URL.format("whttp"), {"values": {"TOKEN": "alice-secret-1", "KEY": "k-1"}}, format="json"
    )
    partly = alice_api.put(URL.format("whttp"), {"values": {"KEY": None}}, format="json")
    bobs_view = client_for(bob).get(URL.format("whttp")).json()
    removed = alice_api.delete(URL.format("whttp"))

    assert before["complete"] is False
    assert [(v["name"], v["used_in"], v["is_set"]) for v in before["variables"]] == [
        ("TOKEN", "header X-User-Token", False),
        ("KEY", "URL", False),
    ]
    assert saved.status_code == 200 and saved.json()["complete"] is True
    assert "alice-secret-1" not in saved.content.decode() and "k-1" not in saved.content.decode()
    assert [v["is_set"] for v in partly.json()["variables"]] == [True, False]
    assert [v["is_set"] for v in bobs_view["variables"]] == [False, False], "bob sees only his own"
    assert removed.status_code == 204
    assert not UserCredential.objects.filter(user=alice).exists()


@pytest.mark.parametrize(
    "body, complaint",
    [
        ({"values": {"NOPE": "x"}}, "not a variable of this server"),
        ({"values": {"TOKEN": "line\nbreak"}}, "line breaks"),
        ({"values": {"TOKEN": "x" * 9000}}, "too long"),
        ({"values": {}}, "send an object"),
        ({"token": "x"}, "required"),
    ],
)
def test_bad_input_is_refused_whole_and_changes_nothing(alice, http_server, body, complaint):
    api = client_for(alice)
    api.put(URL.format("whttp"), {"values": {"TOKEN": "kept"}}, format="json")

    response = api.put(
        URL.format("whttp"),
        body | ({"values": {**body["values"], "KEY": "new"}} if body.get("values") else {}),
        format="json",
    )

    assert response.status_code == 400
    assert complaint in response.content.decode()
    assert UserCredential.objects.get(user=alice).values == {"TOKEN": "kept"}


def test_a_server_without_user_variables_or_out_of_sight_has_no_credentials(
    alice, charlie, alice_private_server
):
    plain = McpServer.objects.create(name="plain", command="true")

    assert client_for(alice).get(URL.format(plain.name)).status_code == 404
    alice_private_server.headers = {"X-User-Token": "${user:TOKEN}"}
    alice_private_server.save()
    assert client_for(alice).get(URL.format(alice_private_server.name)).status_code == 200
    assert client_for(charlie).get(URL.format(alice_private_server.name)).status_code == 404
    assert APIClient().get(URL.format(alice_private_server.name)).status_code in (401, 403)


def test_values_are_encrypted_at_rest_and_audited_without_them(alice, stdio_server):
    from auditlog.models import LogEntry

    client_for(alice).put(
        URL.format("wstdio"), {"values": {"TOKEN": "alice-at-rest-secret"}}, format="json"
    )

    with connection.cursor() as cursor:
        cursor.execute('SELECT "values", names FROM credentials_usercredential')
        raw = " ".join(map(str, cursor.fetchone()))
    assert (
        "alice-at-rest-secret" not in raw and "TOKEN" in raw
    )  # names are in clear, values are not
    assert UserCredential.objects.get(user=alice).values == {"TOKEN": "alice-at-rest-secret"}
    trail = " ".join(str(e.changes) for e in LogEntry.objects.all())
    assert "alice-at-rest-secret" not in trail


def test_the_server_api_shows_the_variables_and_never_the_values(admin_user, alice, stdio_server):
    client_for(alice).put(
        URL.format("wstdio"), {"values": {"TOKEN": "alice-server-api-secret"}}, format="json"
    )

    detail = client_for(admin_user).get("/api/servers/wstdio/")

    assert detail.json()["user_variables"] == [
        {
            "name": "TOKEN",
            "label": "Your API token",
            "help_text": "From your profile page.",
            "required": True,
            "used_in": "env USER_TOKEN",
        }
    ]
    assert "alice-server-api-secret" not in detail.content.decode()


def test_describing_a_variable_the_config_does_not_use_is_refused(admin_user):
    response = client_for(admin_user).post(
        "/api/servers/",
        {
            "name": "gh",
            "transport": "streamable_http",
            "url": "https://example.com/mcp",
            "headers": {"Authorization": "Bearer ${user:GH_TOKEN}"},
            "user_variables": [{"name": "OTHER"}],
        },
        format="json",
    )
    in_args = client_for(admin_user).post(
        "/api/servers/",
        {"name": "gh2", "command": "npx", "args": ["--token", "${user:T}"]},
        format="json",
    )

    assert (
        response.status_code == 400
        and "no config value uses ${user:OTHER}" in response.content.decode()
    )
    assert in_args.status_code == 400 and "process listings" in in_args.content.decode()
    assert not McpServer.objects.filter(name__in=["gh", "gh2"]).exists()
