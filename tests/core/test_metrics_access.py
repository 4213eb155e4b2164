"""Who may read `/metrics` without a token: signed-in staff, and addresses in MCPHUB_METRICS_ALLOW_CIDRS."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_an_allowed_network_scrapes_without_a_token(client, settings):
    settings.MCPHUB_METRICS_ALLOW_CIDRS = ["10.0.0.0/8", "127.0.0.0/8"]
    response = client.get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert response.status_code == 200
    assert b"mcphub_mcp_sessions_open" in response.content


def test_an_address_outside_the_networks_is_refused(client, settings):
    settings.MCPHUB_METRICS_ALLOW_CIDRS = ["10.0.0.0/8"]
    assert client.get("/metrics", REMOTE_ADDR="192.168.1.5").status_code == 401
    settings.MCPHUB_METRICS_ALLOW_CIDRS = []
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 401


def test_behind_a_trusted_proxy_the_client_address_counts_not_the_proxys(client, settings):
    settings.MCPHUB_METRICS_ALLOW_CIDRS, settings.MCPHUB_TRUSTED_PROXIES = ["127.0.0.0/8"], 1
    assert (
        client.get(
            "/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.9"
        ).status_code
        == 401
    )
    assert (
        client.get(
            "/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="127.0.0.1"
        ).status_code
        == 200
    )
    settings.MCPHUB_TRUSTED_PROXIES = 0
    assert (
        client.get(
            "/metrics", REMOTE_ADDR="192.0.2.7", HTTP_X_FORWARDED_FOR="127.0.0.1"
        ).status_code
        == 401
    )


def test_signed_in_staff_read_and_others_do_not(client, dave, charlie):
    client.force_login(charlie)
    assert client.get("/metrics").status_code == 403
    client.force_login(dave)
    assert client.get("/metrics").status_code == 200
