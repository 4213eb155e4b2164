"""A validated token is remembered for a few seconds (no query per request), and any change to a
token or a user is seen at once: in this process by the signal, in every other by the epoch."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.accounts import token_cache
from apps.accounts.models import AccessToken
from apps.accounts.services import authenticate_token, create_access_token, revoke_access_token
from apps.core import hotstate


@pytest.fixture
def remembered(alice, django_assert_num_queries):
    """alice's raw token, validated once and now served from the cache."""
    token, raw = create_access_token(user=alice)
    assert authenticate_token(raw) is not None
    with django_assert_num_queries(0):
        assert authenticate_token(raw).user == alice
    return token, raw


def test_a_revoked_token_is_refused_at_once_though_it_was_remembered(remembered):
    token, raw = remembered

    revoke_access_token(token=token)

    assert authenticate_token(raw) is None


def test_a_deactivated_user_is_refused_at_once(remembered, alice):
    _, raw = remembered

    alice.is_active = False
    alice.save()

    assert authenticate_token(raw) is None


@pytest.mark.django_db(
    transaction=True
)  # the epoch is read outside this test's transaction (embedded: SQLite)
def test_a_change_made_by_another_process_is_seen_through_the_epoch(remembered):
    """Another process's change reaches this one only as a bumped epoch (its signal ran there)."""
    token, raw = remembered
    AccessToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())  # no signal here
    assert authenticate_token(raw) is not None  # still remembered: nothing told this process

    hotstate.incr(token_cache.EPOCH_KEY)  # what the other process's commit does

    assert authenticate_token(raw) is None


def test_a_remembered_token_that_expires_is_refused(alice):
    _, raw = create_access_token(user=alice, expires_at=timezone.now() + timedelta(seconds=0.5))
    assert authenticate_token(raw) is not None

    time.sleep(0.6)  # the scenario: its expiry passes

    assert authenticate_token(raw) is None


def test_each_request_gets_its_own_copy(remembered):
    _, raw = remembered
    first = authenticate_token(raw)
    first.user.is_superuser = True
    first.scope = "mcp"

    second = authenticate_token(raw)

    assert not second.user.is_superuser and second.scope != "mcp"


def test_without_the_epoch_tokens_are_checked_in_the_database_every_time(
    alice, monkeypatch, django_assert_num_queries
):
    def down(key: str) -> int:
        raise ConnectionError("redis is down")

    monkeypatch.setattr(hotstate, "counter", down)
    _, raw = create_access_token(user=alice)
    for _ in range(2):
        with django_assert_num_queries(
            2
        ):  # the lookup, and last_used_at written (nothing remembered)
            assert authenticate_token(raw).user == alice
        AccessToken.objects.update(last_used_at=None)


@pytest.mark.django_db(transaction=True)
def test_a_running_hub_refuses_a_token_at_once_once_it_is_revoked_elsewhere(hub, alice):
    """The hub remembered the token (it served requests with it); this process revokes it, as
    `mcp_token revoke` or another web process would: the hub's next request is refused."""
    import httpx2

    token, raw = create_access_token(user=alice)
    with httpx2.Client(headers={"Authorization": f"Bearer {raw}"}, timeout=30) as http:
        for _ in range(3):
            assert http.get(hub.url("/api/runs/")).status_code == 200
        revoke_access_token(token=token)
        started = time.monotonic()
        refused = http.get(hub.url("/api/runs/"))
    assert refused.status_code == 401, refused.text
    assert time.monotonic() - started < token_cache.CACHE_SECONDS
