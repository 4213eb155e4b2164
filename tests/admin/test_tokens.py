"""Tokens issued in the admin: shown once, stored as a digest, renamed or revoked later."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.accounts import tokens
from apps.accounts.models import AccessToken
from apps.accounts.services import authenticate_token, create_access_token
from apps.toolsets.models import Endpoint

RAW_TOKEN_RE = re.compile(r"mcphub_[a-z0-9]{10}_[A-Za-z0-9_-]{32,64}")


@pytest.fixture
def logged_in(client, admin_user):
    client.force_login(admin_user)
    return client


def issue(client, **fields):
    data = {
        "user": "",
        "name": "",
        "endpoint": "",
        "expires_at_0": "",
        "expires_at_1": "",
        **fields,
    }
    return client.post(reverse("admin:accounts_accesstoken_add"), data)


def test_issuing_shows_the_raw_token_once_and_stores_only_its_digest(logged_in, alice):
    response = issue(logged_in, user=alice.pk, name="alice's CI")

    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    raw = RAW_TOKEN_RE.search(response.content.decode()).group()
    token = AccessToken.objects.get(name="alice's CI")
    assert token.user == alice
    assert token.digest == tokens.digest(raw)
    assert raw not in {token.prefix, token.digest, token.name}
    assert authenticate_token(raw) == token
    for url in (
        reverse("admin:accounts_accesstoken_change", args=[token.pk]),
        reverse("admin:accounts_accesstoken_changelist"),
    ):
        html = logged_in.get(url).content.decode()
        assert raw not in html and token.digest not in html


def test_a_token_scoped_to_an_endpoint_of_someone_else_is_refused(logged_in, alice, bob):
    bobs_endpoint = Endpoint.objects.get(owner=bob)

    response = issue(logged_in, user=alice.pk, endpoint=bobs_endpoint.pk)

    assert response.status_code == 200
    assert "endpoint" in response.context["adminform"].form.errors
    assert not AccessToken.objects.filter(user=alice).exists()


def test_a_token_scoped_to_the_users_own_endpoint_with_an_expiry(logged_in, alice):
    endpoint = Endpoint.objects.get(owner=alice)
    expiry = timezone.now() + timedelta(days=30)

    response = issue(
        logged_in,
        user=alice.pk,
        endpoint=endpoint.pk,
        expires_at_0=expiry.strftime("%Y-%m-%d"),
        expires_at_1="12:00:00",
    )

    assert response.status_code == 200
    token = AccessToken.objects.get(user=alice)
    assert token.endpoint == endpoint
    assert token.expires_at.date() == expiry.date()


def test_an_expiry_in_the_past_is_refused(logged_in, alice):
    response = issue(logged_in, user=alice.pk, expires_at_0="2001-01-01", expires_at_1="00:00:00")

    assert "expires_at" in response.context["adminform"].form.errors
    assert not AccessToken.objects.exists()


def test_the_change_page_edits_only_name_and_expiry(logged_in, alice, bob):
    token, raw = create_access_token(user=alice, name="laptop")
    url = reverse("admin:accounts_accesstoken_change", args=[token.pk])

    page = logged_in.get(url)
    assert set(page.context["adminform"].form.fields) == {"name", "expires_at"}
    assert token.digest not in page.content.decode()

    response = logged_in.post(
        url, {"name": "old laptop", "expires_at_0": "", "expires_at_1": "", "user": bob.pk}
    )

    assert response.status_code == 302
    token.refresh_from_db()
    assert (token.name, token.user) == ("old laptop", alice)
    assert authenticate_token(raw) == token


def test_revoke_action_revokes_only_the_selected_tokens(logged_in, alice, bob):
    alices, alice_raw = create_access_token(user=alice, name="laptop")
    bobs, bob_raw = create_access_token(user=bob, name="laptop")

    response = logged_in.post(
        reverse("admin:accounts_accesstoken_changelist"),
        {"action": "revoke_selected", "_selected_action": [alices.pk]},
        follow=True,
    )

    assert "Revoked 1 token(s)." in response.content.decode()
    alices.refresh_from_db()
    assert alices.revoked_at is not None
    assert authenticate_token(alice_raw) is None
    assert authenticate_token(bob_raw) == bobs


def test_changelist_filters_by_state(logged_in, alice):
    active, _ = create_access_token(user=alice, name="active one")
    revoked, _ = create_access_token(user=alice, name="revoked one")
    revoked.revoked_at = timezone.now()
    revoked.save()

    html = logged_in.get(
        reverse("admin:accounts_accesstoken_changelist") + "?state=active"
    ).content.decode()

    assert "active one" in html and "revoked one" not in html
