"""Providers added and edited in the admin: the client secret is written, never shown, and kept."""

from __future__ import annotations

import pytest

from apps.accounts.models import SsoProvider

pytestmark = pytest.mark.django_db


def form(**fields) -> dict:
    return {
        "name": "Acme ID",
        "slug": "acme",
        "issuer": "https://id.acme.test/realms/acme",
        "client_id": "mcp-hub",
        "client_secret": "",
        "scopes": "openid profile email",
        "enabled": "on",
        **fields,
    }


def test_the_client_secret_is_stored_encrypted_never_shown_and_kept_when_left_empty(admin_client):
    response = admin_client.post(
        "/admin/accounts/ssoprovider/add/", form(client_secret="s3cret-value")
    )
    assert response.status_code == 302, response.content
    provider = SsoProvider.objects.get()
    assert provider.client_secret == "s3cret-value"
    page = admin_client.get(f"/admin/accounts/ssoprovider/{provider.pk}/change/").content.decode()
    assert "s3cret-value" not in page
    listing = admin_client.get("/admin/accounts/ssoprovider/").content.decode()
    assert "/sso/oidc/acme/login/callback/" in listing

    admin_client.post(f"/admin/accounts/ssoprovider/{provider.pk}/change/", form(name="Acme"))
    provider.refresh_from_db()
    assert (provider.name, provider.client_secret) == ("Acme", "s3cret-value")


def test_a_bad_issuer_is_refused_and_changes_nothing(admin_client):
    response = admin_client.post("/admin/accounts/ssoprovider/add/", form(issuer="not a url"))
    assert response.status_code == 200 and "Enter a valid URL." in response.content.decode()
    assert not SsoProvider.objects.exists()
