"""The URLs the hub shows: SITE_URL when set, else where the request was sent — behind trusted
proxies, the host they forwarded (if allowed); never a host the client merely claims."""

from __future__ import annotations

import pytest

from apps.core.public_url import scope_origin

pytestmark = pytest.mark.django_db


def test_the_api_url_follows_a_trusted_proxys_forwarded_host(client, alice, settings):
    settings.USE_X_FORWARDED_HOST = True  # what MCPHUB_TRUSTED_PROXIES=1 sets
    settings.ALLOWED_HOSTS = ["hub.example.com", "127.0.0.1"]
    client.force_login(alice)

    body = client.get(
        "/api/endpoints/", HTTP_HOST="127.0.0.1:8000", HTTP_X_FORWARDED_HOST="hub.example.com"
    ).json()

    assert body["results"][0]["url"].startswith("http://hub.example.com/mcp/")


def test_without_trusted_proxies_a_forwarded_host_is_ignored(client, alice, settings):
    settings.USE_X_FORWARDED_HOST = False
    client.force_login(alice)

    body = client.get(
        "/api/endpoints/", HTTP_HOST="127.0.0.1:8000", HTTP_X_FORWARDED_HOST="evil.example"
    ).json()

    assert body["results"][0]["url"].startswith("http://127.0.0.1:8000/mcp/")


def test_the_gateway_reads_the_same_way_and_refuses_a_forwarded_host_not_allowed(settings):
    settings.USE_X_FORWARDED_HOST, settings.ALLOWED_HOSTS = True, ["hub.example.com", "127.0.0.1"]
    scope = {"scheme": "http"}

    assert (
        scope_origin(scope, {"host": "127.0.0.1:8000", "x-forwarded-host": "hub.example.com"})
        == "http://hub.example.com"
    )
    assert (
        scope_origin(scope, {"host": "127.0.0.1:8000", "x-forwarded-host": "evil.example"})
        == "http://127.0.0.1:8000"
    )
    settings.USE_X_FORWARDED_HOST = False
    assert (
        scope_origin(scope, {"host": "127.0.0.1:8000", "x-forwarded-host": "hub.example.com"})
        == "http://127.0.0.1:8000"
    )


def test_site_url_wins(client, alice, settings):
    settings.SITE_URL = "https://hub.example.com"
    client.force_login(alice)

    body = client.get("/api/endpoints/", HTTP_HOST="127.0.0.1:8000").json()

    assert body["results"][0]["url"].startswith("https://hub.example.com/mcp/")
