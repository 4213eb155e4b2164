"""Alice sees the apps she allowed onto her endpoint, and revoking one ends its access at once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from oauth2_provider.models import AccessToken, RefreshToken

from apps.oauth.models import ConnectedApp
from apps.oauth.selectors import access_grant
from apps.oauth.tasks import clear_expired
from apps.toolsets.models import Endpoint
from apps.toolsets.services import create_endpoint
from tests.oauth.oauth_client import (
    Registered,
    approve,
    endpoint_resource,
    exchange,
    public_client,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def connected(client, alice):
    """Alice allowed "Hand Client" onto her default endpoint; it holds tokens."""
    client.force_login(alice)
    endpoint = alice.endpoints.get()
    app = public_client(client)
    assert (
        exchange(client, app, approve(client, app, endpoint_resource(endpoint))).status_code == 200
    )
    return endpoint, ConnectedApp.objects.get(endpoint=endpoint)


def test_the_endpoint_page_lists_connected_apps(client, connected):
    endpoint, _ = connected

    page = client.get(f"/endpoints/{endpoint.slug}/").content.decode()

    assert "Connected apps" in page and "Hand Client" in page and "unverified" in page
    assert "127.0.0.1:43210" in page


def test_revoking_removes_the_app_and_all_its_tokens(client, connected):
    endpoint, connection = connected

    response = client.post(f"/endpoints/{endpoint.slug}/connected-apps/{connection.pk}/revoke/")

    assert response.status_code == 302
    assert not ConnectedApp.objects.exists()
    assert not AccessToken.objects.filter(scope="mcp").exists()
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()
    page = client.get(f"/endpoints/{endpoint.slug}/").content.decode()
    assert (
        "Hand Client can no longer use this endpoint." in page and 'id="no-connected-apps"' in page
    )


def test_other_users_can_neither_see_nor_revoke_it(client, connected, bob, charlie):
    endpoint, connection = connected
    for intruder in (bob, charlie):
        client.force_login(intruder)
        assert (
            client.post(
                f"/endpoints/{endpoint.slug}/connected-apps/{connection.pk}/revoke/"
            ).status_code
            == 404
        )
        own = intruder.endpoints.get()
        assert (
            client.post(f"/endpoints/{own.slug}/connected-apps/{connection.pk}/revoke/").status_code
            == 404
        )
        assert "Hand Client" not in client.get(f"/endpoints/{own.slug}/").content.decode()

    assert ConnectedApp.objects.filter(pk=connection.pk).exists()
    assert AccessToken.objects.filter(scope="mcp").exists()


def test_an_app_on_two_endpoints_is_revoked_on_one_only(client, alice, connected):
    endpoint, connection = connected
    second = create_endpoint(owner=alice, name="Second")
    again = Registered(connection.application.client_id, "w" * 64)
    assert (
        exchange(client, again, approve(client, again, endpoint_resource(second))).status_code
        == 200
    )

    client.post(f"/endpoints/{endpoint.slug}/connected-apps/{connection.pk}/revoke/")

    assert list(ConnectedApp.objects.values_list("endpoint__slug", flat=True)) == [second.slug]
    assert [t.resource for t in AccessToken.objects.filter(scope="mcp")] == [
        [endpoint_resource(second)]
    ]


def test_the_hourly_sweep_forgets_apps_whose_tokens_all_expired(client, alice, connected):
    endpoint, _ = connected
    other = create_endpoint(owner=alice, name="Still used")
    app = public_client(client)
    assert exchange(client, app, approve(client, app, endpoint_resource(other))).status_code == 200
    long_ago = timezone.now() - timedelta(days=60)
    AccessToken.objects.filter(resource=[endpoint_resource(endpoint)]).update(expires=long_ago)
    RefreshToken.objects.filter(
        access_token__isnull=False, access_token__resource=[endpoint_resource(endpoint)]
    ).update(created=long_ago)

    clear_expired()

    assert list(ConnectedApp.objects.values_list("endpoint__slug", flat=True)) == [other.slug]


def test_a_token_dies_with_its_endpoint_even_if_the_slug_comes_back(client, alice, connected):
    _, connection = connected
    app = Registered(connection.application.client_id, "z" * 64)
    other = create_endpoint(owner=alice, name="Temporary", slug="temporary-one")
    raw = exchange(client, app, approve(client, app, endpoint_resource(other))).json()[
        "access_token"
    ]
    assert access_grant(raw).endpoint_id == other.pk

    Endpoint.objects.filter(pk=other.pk).delete()
    reborn = create_endpoint(owner=alice, name="Temporary again", slug="temporary-one")

    assert access_grant(raw) is None and reborn.slug == "temporary-one"


def test_an_expired_access_token_is_refused(client, alice, connected):
    endpoint, connection = connected
    app = Registered(connection.application.client_id, "e" * 64)
    raw = exchange(client, app, approve(client, app, endpoint_resource(endpoint))).json()[
        "access_token"
    ]
    assert access_grant(raw) is not None

    AccessToken.objects.filter(scope="mcp").update(expires=timezone.now() - timedelta(seconds=1))

    assert access_grant(raw) is None
