"""Reads: the grant behind an OAuth access token, and a user's connected apps."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta

from django.db.models import QuerySet
from django.utils import timezone
from oauth2_provider.models import get_access_token_model

from apps.oauth import resources
from apps.oauth.models import ConnectedApp
from apps.toolsets.models import Endpoint

# Writing last_used_at on every validation would make each cache miss a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True)
class AccessGrant:
    """A valid OAuth access token, reduced to what the gateway needs."""

    user_id: int
    application_id: int
    endpoint_id: int
    endpoint_slug: str
    expires_at: float  # unix time


def access_grant(raw: str) -> AccessGrant | None:
    """The grant of a live access token whose audience is one of its user's endpoints, or None.

    Tokens are stored as SHA-256 checksums (COMPLIANT_BCP_RFC9700_TOKEN_STORAGE), so the lookup is
    by checksum. The app must still be connected to that endpoint: a token with no audience, one
    whose connection was revoked, or one naming a deleted endpoint (even if its slug is reused) is refused.
    """
    checksum = hashlib.sha256(raw.encode()).hexdigest()
    token = (
        get_access_token_model()
        .objects.select_related("user")
        .filter(token_checksum=checksum)
        .first()
    )
    if token is None or token.is_expired() or token.user is None or not token.user.is_active:
        return None
    slug = resources.audience_slug(token.resource or [])
    connection = (
        ConnectedApp.objects.filter(
            application_id=token.application_id,
            endpoint__slug=slug,
            endpoint__owner_id=token.user_id,
        )
        .values("pk", "endpoint_id", "last_used_at")
        .first()
        if slug
        else None
    )
    if connection is None:
        return None
    _touch(connection)
    return AccessGrant(
        token.user_id,
        token.application_id,
        connection["endpoint_id"],
        slug,
        token.expires.timestamp(),
    )


def _touch(connection: dict) -> None:
    now = timezone.now()
    if (
        connection["last_used_at"] is None
        or now - connection["last_used_at"] > LAST_USED_RESOLUTION
    ):
        ConnectedApp.objects.filter(pk=connection["pk"]).update(last_used_at=now)


def connected_apps(endpoint: Endpoint) -> QuerySet[ConnectedApp]:
    return ConnectedApp.objects.filter(endpoint=endpoint).select_related("application")


def owned_endpoint_for_resource(user, resource: str, *, origin_url: str) -> Endpoint | None:
    """The endpoint `resource` names on this hub, if `user` owns it."""
    slug = resources.slug_of(resource, origin_url=origin_url)
    if slug is None or not user.is_authenticated:
        return None
    return Endpoint.objects.filter(slug=slug, owner=user).first()
