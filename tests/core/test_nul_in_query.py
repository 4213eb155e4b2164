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
