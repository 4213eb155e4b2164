"""Alice creates tokens for her MCP clients; only a digest is kept and a revoked token stops working."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
from django.db import connection
from django.utils import timezone

from apps.accounts import tokens
from apps.accounts.models import AccessToken
from apps.accounts.services import authenticate_token, create_access_token, revoke_access_token


def test_alice_authenticates_with_the_raw_token_shown_once(alice):
    token, raw = create_access_token(user=alice, name="laptop")

    assert raw.startswith(f"mcphub_{token.prefix}_")
    assert authenticate_token(raw).user == alice


def test_the_database_never_holds_the_raw_token(alice):
    token, raw = create_access_token(user=alice)
    # The whole secret: it may hold "_" itself (token_urlsafe), so not the part after the last one,
    # which could be a character or two that a timestamp or the digest also holds.
    secret_part = tokens.TOKEN_RE.match(raw)["secret"]

    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM accounts_accesstoken WHERE id = %s", [token.pk])
        row = " ".join(str(value) for value in cursor.fetchone())
    assert secret_part not in row
    assert token.digest == tokens.digest(raw)


@pytest.mark.parametrize(
    "mangle",
    [
        lambda raw: raw[:-1] + ("A" if raw[-1] != "A" else "B"),
        lambda raw: raw.upper(),
        lambda raw: "",
        lambda raw: "Bearer " + raw,
        lambda raw: raw.split("_", 2)[0] + "_" + raw.split("_", 2)[1],
    ],
)
def test_a_wrong_token_is_refused(alice, mangle):
    _, raw = create_access_token(user=alice)

    assert authenticate_token(mangle(raw)) is None


def test_digests_are_compared_in_constant_time(alice):
    _, raw = create_access_token(user=alice)

    with mock.patch("apps.accounts.tokens.hmac.compare_digest", return_value=True) as compare:
        assert authenticate_token(raw) is not None
    compare.assert_called_once()


def test_a_revoked_token_stops_working(alice):
    token, raw = create_access_token(user=alice)

    revoke_access_token(token=token)

    assert authenticate_token(raw) is None
    assert not AccessToken.objects.get(pk=token.pk).is_active


def test_an_expired_token_stops_working(alice):
    _, raw = create_access_token(user=alice, expires_at=timezone.now() - timedelta(seconds=1))

    assert authenticate_token(raw) is None


def test_a_deactivated_user_cannot_use_their_token(alice):
    _, raw = create_access_token(user=alice)
    alice.is_active = False
    alice.save()

    assert authenticate_token(raw) is None


def test_use_is_recorded_without_a_write_per_request(alice, django_assert_num_queries):
    token, raw = create_access_token(user=alice)
    authenticate_token(raw)
    assert AccessToken.objects.get(pk=token.pk).last_used_at is not None

    with django_assert_num_queries(
        0
    ):  # remembered (token_cache), and last_used_at is fresh: no write
        assert authenticate_token(raw).user == alice


def test_a_token_can_be_scoped_to_its_owners_endpoint_only(alice, charlie):
    alice_endpoint = alice.endpoints.get(is_default=True)

    token, _ = create_access_token(user=alice, endpoint=alice_endpoint)
    assert token.endpoint == alice_endpoint
    with pytest.raises(ValueError):
        create_access_token(user=charlie, endpoint=alice_endpoint)
