"""A NUL in a query parameter is a clear 400, never a 500 from the database (found by the API fuzzer
on Postgres: GET /api/tools/?endpoint=%00)."""

import pytest

from apps.toolsets.models import Endpoint

pytestmark = pytest.mark.django_db


def test_the_api_answers_400_with_a_reason(client, alice):
    client.force_login(alice)
    for url in ("/api/tools/?endpoint=%00", "/api/tools/?search=a%00b", "/api/usage/?x%00=1"):
        response = client.get(url)
        assert response.status_code == 400, url
        assert "NUL" in response.json()["detail"]


def test_pages_answer_400_too_and_nothing_changes(client, alice):
    client.force_login(alice)
    before = Endpoint.objects.count()
    response = client.get("/tools/?q=%00")
    assert response.status_code == 400
    assert "NUL" in response.content.decode()
    assert Endpoint.objects.count() == before


def test_ordinary_queries_still_work(client, alice):
    client.force_login(alice)
    assert client.get("/api/tools/?search=time").status_code == 200


@pytest.mark.parametrize(
    "url, body",
    [
        ("/api/conversations/", {"endpoint": "q\x00z"}),  # the fuzzer's find, on Postgres
        ("/api/servers/", {"name": "s", "transport": "stdio", "command": "x", "owner": "a\x00"}),
        ("/api/servers/", {"name": "s", "transport": "stdio", "command": "x", "team": "t\x00"}),
    ],
)
def test_a_nul_in_a_name_the_body_looks_up_is_a_400_naming_the_field(
    client, alice, admin_user, url, body
):
    from apps.catalog.models import McpServer
    from apps.chat.models import Conversation

    client.force_login(admin_user if url == "/api/servers/" else alice)  # staff add servers
    response = client.post(url, body, content_type="application/json")
    assert response.status_code == 400, response.content
    (field,) = set(body) & {"endpoint", "owner", "team"}
    assert response.json()[field] == ["Null characters are not allowed."]
    assert not Conversation.objects.exists() and not McpServer.objects.exists()
