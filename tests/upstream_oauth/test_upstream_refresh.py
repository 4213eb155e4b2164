"""Refreshing a user's upstream token: once for many concurrent callers (rotation makes a refresh
token single-use, so a second refresh would break the grant), and a refused refresh breaks it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from apps.credentials.errors import CredentialsMissing
from apps.credentials.upstream import services as upstream_services
from apps.credentials.upstream.models import UpstreamOAuthGrant

pytestmark = [pytest.mark.django_db(transaction=True)]


def _due(grant: UpstreamOAuthGrant) -> UpstreamOAuthGrant:
    UpstreamOAuthGrant.objects.filter(pk=grant.pk).update(
        expires_at=timezone.now() + timedelta(seconds=1)
    )
    return UpstreamOAuthGrant.objects.get(pk=grant.pk)


def test_concurrent_callers_share_one_refresh(oauth_server, oauth_backend, alice, browser_of):
    browser_of(alice).authorize("vault", subject="alice-concurrent@vault")
    grant = _due(UpstreamOAuthGrant.objects.get(user=alice))
    before = oauth_backend.stats()["refreshes"].get("alice-concurrent@vault", 0)

    def token() -> str:
        try:
            return upstream_services.access_token(server=oauth_server, user_id=alice.pk)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(8) as threads:
        tokens = list(threads.map(lambda _: token(), range(8)))

    assert len(set(tokens)) == 1 and tokens[0] != grant.tokens["access_token"]
    assert oauth_backend.stats()["refreshes"]["alice-concurrent@vault"] == before + 1
    assert not UpstreamOAuthGrant.objects.get(pk=grant.pk).broken


def test_a_refused_refresh_breaks_the_grant_with_a_reconnect_error(
    oauth_server, oauth_backend, alice, bob, browser_of
):
    browser_of(alice).authorize("vault", subject="alice-refused@vault")
    browser_of(bob).authorize("vault", subject="bob-kept@vault")
    _due(UpstreamOAuthGrant.objects.get(user=alice))
    oauth_backend.revoke("alice-refused@vault")

    # Outside a request (a worker, here the test) the page's path: the hub's own pages link it as it is.
    with pytest.raises(CredentialsMissing, match="reconnect vault at /tools/#connections"):
        upstream_services.access_token(server=oauth_server, user_id=alice.pk)

    grant = UpstreamOAuthGrant.objects.get(user=alice)
    assert grant.broken and grant.tokens == {} and "invalid_grant" in grant.problem
    assert upstream_services.access_token(server=oauth_server, user_id=bob.pk).startswith("at-")
    with pytest.raises(CredentialsMissing, match="needs your own OAuth sign-in: connect vault"):
        upstream_services.access_token(server=oauth_server, user_id=999_999)
